package membership

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/depot-registry/depot/shared/syncbuf"
	"io"
	stdlog "log"
	mrand "math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/logx"
)

// TestThrottle: each kind of line passes once per interval whatever the
// address, number or label in it; the next one after the interval says
// how many were held back (and a message sealed with another key says
// what that means); other kinds pass on their own.
func TestThrottle(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	th := newThrottle(&out, time.Minute, func() time.Time { return now })
	write := func(format string, args ...any) { fmt.Fprintf(th, format+"\n", args...) }
	for i := range 1000 {
		write("[ERR] memberlist: Decrypt packet failed: unsupported encryption version %d from=10.0.%d.%d:%d", i%256, i/256, i%256, 7946+i)
		write(`[ERR] memberlist: discarding packet with unacceptable label "%x": from=10.0.0.1:1`, i)
	}
	write("[WARN] memberlist: Got invalid checksum for UDP packet: 1, 2")
	if got := strings.Count(out.String(), "\n"); got != 3 {
		t.Fatalf("%d lines passed, want 3:\n%s", got, out.String())
	}
	now = now.Add(59 * time.Second)
	write("[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.9.9.9:1")
	if strings.Count(out.String(), "\n") != 3 {
		t.Fatalf("a line passed before the interval ended:\n%s", out.String())
	}
	now = now.Add(time.Second)
	out.Reset()
	write("[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.9.9.9:1")
	if want := "[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.9.9.9:1 " +
		"(sent by a node whose DEPOT_CLUSTER_KEY differs from this one's, or by a stranger: check the key of the node at that address) " +
		"(and 1000 more like it since the last one logged)\n"; out.String() != want {
		t.Fatalf("after the interval: %q, want %q", out.String(), want)
	}
}

// TestStrangersPacketsAreQuiet: thousands of UDP packets no member sent
// (random bytes, and ones shaped like another key's encrypted gossip),
// from 16 addresses, and garbage on the gossip TCP port, leave a line or
// so per kind in the log, and the members keep seeing each other.
func TestStrangersPacketsAreQuiet(t *testing.T) {
	key := peerauth.NewKey()
	var log syncbuf.Buffer
	a, err := Start(Config{NodeID: "a", BindAddr: "127.0.0.1:0", Key: key, Meta: Meta{Role: RoleOrigin}, Fast: true,
		Logger: logx.New(&log, "text", "info")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	b := start(t, "b", key, Meta{Role: RoleOrigin})
	if err := b.Join([]string{a.Addr()}); err != nil {
		t.Fatal(err)
	}
	bothAlive := func() bool {
		return statusOf(a, "b") == Alive && statusOf(b, "a") == Alive
	}
	waitFor(t, "a and b to see each other", bothAlive)
	if s := log.String(); s != "" {
		t.Fatalf("the log has lines before the flood:\n%s", s)
	}

	target, err := net.ResolveUDPAddr("udp", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	const sources, packets = 16, 4000
	var socks []*net.UDPConn
	for i := range sources {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))})
		if err != nil {
			t.Skipf("cannot send from 127.0.0.%d (a loopback address other than 127.0.0.1): %v", 2+i, err)
		}
		defer c.Close()
		socks = append(socks, c)
	}
	start := time.Now()
	for i := range packets {
		p := make([]byte, 1+mrand.IntN(1400))
		rand.Read(p)
		if i%2 == 0 && len(p) > 64 {
			p[0] = 1 // memberlist's encryption version: decrypting is tried, and fails
		}
		if _, err := socks[i%sources].WriteToUDP(p, target); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // within the socket buffers: packets lost before memberlist reads them prove nothing
		}
	}
	for range 200 {
		c, err := net.Dial("tcp", a.Addr())
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 1+mrand.IntN(2000))
		rand.Read(p)
		c.Write(p)
		c.Close()
	}
	t.Logf("sent %d packets from %d addresses and 200 TCP streams in %s", packets, sources, time.Since(start))
	waitFor(t, "the flood to be read", func() bool { return strings.Contains(log.String(), "Decrypt packet failed") })
	time.Sleep(time.Second) // a few gossip rounds, and the rest of the flood read

	// Still one pool: both alive, and news still spreads.
	if !bothAlive() {
		t.Fatalf("a or b lost the other: a sees %v, b sees %v", a.Members(), b.Members())
	}
	a.Update(func(m *Meta) { m.Applied = 7 })
	waitFor(t, "a's update to reach b", func() bool {
		for _, m := range b.Members() {
			if m.ID == "a" && m.Applied == 7 {
				return true
			}
		}
		return false
	})

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	t.Logf("the log after the flood (%d lines):\n%s", len(lines), log.String())
	kinds := map[string]bool{}
	for _, l := range lines {
		i := strings.Index(l, `msg="`)
		k := lineKindOf([]byte(l[i+len(`msg="`):]))
		if kinds[k] {
			t.Errorf("a kind of line was logged twice: %s", k)
		}
		kinds[k] = true
	}
	// A line per kind: for packets, decrypt failures and labels that are
	// truncated, empty or not ours; for streams, unreadable state and
	// labels truncated or not ours; and, under the race detector, a
	// probe whose ack waited behind the flood. A handful at most, however
	// many packets.
	if len(lines) > 8 {
		t.Fatalf("%d lines for the flood, want a handful at most", len(lines))
	}
	if strings.Count(log.String(), "Decrypt packet failed") != 1 {
		t.Fatal("decrypt failures were not logged exactly once")
	}
}

// BenchmarkDecryptFailureLine is what logging one stranger's packet costs
// memberlist's packet loop: the line through the slog bridge as before
// (at the default level, where memberlist's errors show), and through
// throttle once its line for the minute is out.
func BenchmarkDecryptFailureLine(b *testing.B) {
	bridge := logx.HCLog(logx.New(io.Discard, "text", "info"), "memberlist").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	for name, w := range map[string]io.Writer{"bridge": bridge, "throttled": newThrottle(bridge, logEvery, time.Now)} {
		b.Run(name, func(b *testing.B) {
			l := stdlog.New(w, "", 0)
			err := errors.New("no installed keys could decrypt the message")
			from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}
			for i := 0; b.Loop(); i++ {
				from.Port = 40000 + i%20000
				l.Printf("[ERR] memberlist: Decrypt packet failed: %v %s", err, memberlist.LogAddress(from))
			}
		})
	}
}

// TestRefutingIsDebug: memberlist refuting a suspicion of this node is
// logged at debug; its other warnings stay warnings.
func TestRefutingIsDebug(t *testing.T) {
	var out bytes.Buffer
	l := stdlog.New(memberlistLog(logx.New(&out, "text", "debug")), "", 0)
	l.Printf("[WARN] memberlist: Refuting a suspect message (from: origin-2)")
	l.Printf("[WARN] memberlist: Was able to connect to origin-2 over TCP but UDP probes failed, network may be misconfigured")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[1], "level=WARN") {
		t.Fatalf("log:\n%s", out.String())
	}
}
