package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// netLab is network namespaces, one per node, joined by a bridge in the
// test's own namespace (which reaches every node): processes run inside
// them, and a node's links to chosen others are cut with packet filters
// in its namespace, which drop everything both ways, as a partition
// does. It needs root (CAP_NET_ADMIN), ip and iptables: without them the
// test is skipped, unless DEPOT_REQUIRE_CLIENTS is set (as in CI).
type netLab struct {
	t      *testing.T
	id     string // a few random hex digits naming this lab's devices
	subnet string // "10.a.b."
	ns     []string
}

func newNetLab(t *testing.T, n int) *netLab {
	t.Helper()
	clienttest.RequireClients(t, "ip", "iptables")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	l := &netLab{t: t, id: hex.EncodeToString(b), subnet: fmt.Sprintf("10.%d.%d.", 100+int(b[0])%100, b[1])}
	bridge := "dpb" + l.id
	if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
		requireOrSkip(t, fmt.Sprintf("cannot make network namespaces here (needs root): %v: %s", err, out))
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", bridge).Run() })
	l.run("ip", "addr", "add", l.subnet+"1/24", "dev", bridge)
	l.run("ip", "link", "set", bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("dp%s-%d", l.id, i)
		host, inside := fmt.Sprintf("dph%s%d", l.id, i), fmt.Sprintf("dpn%s%d", l.id, i)
		l.run("ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		l.run("ip", "link", "add", host, "type", "veth", "peer", "name", inside)
		l.run("ip", "link", "set", inside, "netns", ns)
		l.run("ip", "link", "set", host, "master", bridge, "up")
		l.run("ip", "netns", "exec", ns, "ip", "addr", "add", l.ip(i)+"/24", "dev", inside)
		l.run("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
		l.run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
		l.ns = append(l.ns, ns)
	}
	return l
}

func requireOrSkip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func (l *netLab) run(name string, args ...string) {
	l.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		l.t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// ip is node i's address.
func (l *netLab) ip(i int) string { return fmt.Sprintf("%s%d", l.subnet, 10+i) }

// wrap is an executable that runs bin inside node i's namespace.
func (l *netLab) wrap(bin string, i int) string {
	l.t.Helper()
	path := filepath.Join(l.t.TempDir(), fmt.Sprintf("in-node-%d", i))
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", l.ns[i], bin)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		l.t.Fatal(err)
	}
	return path
}

// cut drops every packet between node i and the nodes others, both ways.
func (l *netLab) cut(i int, others ...int) {
	l.t.Helper()
	for _, o := range others {
		l.run("ip", "netns", "exec", l.ns[i], "iptables", "-A", "INPUT", "-s", l.ip(o), "-j", "DROP")
		l.run("ip", "netns", "exec", l.ns[i], "iptables", "-A", "OUTPUT", "-d", l.ip(o), "-j", "DROP")
	}
}

// heal lifts every cut of node i.
func (l *netLab) heal(i int) {
	l.t.Helper()
	l.run("ip", "netns", "exec", l.ns[i], "iptables", "-F")
}
