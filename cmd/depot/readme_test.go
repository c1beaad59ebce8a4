package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMENamesEverySetting: every flag and environment variable
// `depot origin --help` lists is in the README's configuration table, so
// a new setting cannot go undocumented.
func TestREADMENamesEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"origin", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("origin --help exit %d", code)
	}
	flags := regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1)
	envs := regexp.MustCompile(`  \$([A-Z0-9_]+)`).FindAllStringSubmatch(out.String(), -1)
	if len(flags) < 20 || len(envs) < 20 {
		t.Fatalf("read %d flags and %d variables from --help:\n%s", len(flags), len(envs), out.String())
	}
	for _, m := range append(flags, envs...) {
		if !bytes.Contains(readme, []byte("`"+m[1]+"`")) {
			t.Errorf("the README's configuration does not name `%s`", m[1])
		}
	}
}

// TestBadSettingsRefused: a webhook setting no origin can run with, or a
// --join that names no gossip address, stops the start with a message
// naming it, before the data directory is touched.
func TestBadSettingsRefused(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"WEBHOOK_RETRY_BACKOFF=fibonacci", "webhook retry backoff"},
		{"WEBHOOK_CONCURRENCY=0", "webhook concurrency"},
		{"WEBHOOK_QUEUE_SIZE=-3", "WEBHOOK_QUEUE_SIZE"},
		{"DEPOT_JOIN=http://10.0.0.11:8080", "gossip address (host:port"},
		{"DEPOT_JOIN=10.0.0.11:8301,10.0.0.12", "10.0.0.12\\\": give the gossip address"},
	} {
		name, value, _ := strings.Cut(c.env, "=")
		t.Setenv(name, value)
		dir := t.TempDir()
		var out, errb bytes.Buffer
		code := run([]string{"origin", "--data-dir", dir, "--listen", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0"}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.env, code, errb.String())
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: the data directory was written: %v", c.env, entries)
		}
		os.Unsetenv(name)
	}
}

// TestTakenPortsRefused: a raft or gossip port another program holds
// stops the start with a message naming the flag to change, before the
// data directory is touched (and without a panic of the half-started
// origin's peer server).
func TestTakenPortsRefused(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	taken := tcp.Addr().String()
	for _, c := range []struct{ flag string }{{"--raft-addr"}, {"--gossip-addr"}} {
		args := map[string]string{"--raft-addr": "127.0.0.1:0", "--gossip-addr": "127.0.0.1:0"}
		args[c.flag] = taken
		dir := filepath.Join(t.TempDir(), "data")
		var out, errb bytes.Buffer
		code := run([]string{"origin", "--data-dir", dir, "--listen", "127.0.0.1:0", "--raft-addr", args["--raft-addr"], "--gossip-addr", args["--gossip-addr"]}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.flag) || strings.Contains(errb.String()+out.String(), "panic") {
			t.Errorf("%s taken: exit %d, stderr %q", c.flag, code, errb.String())
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s taken: the data directory was made", c.flag)
		}
	}
}
