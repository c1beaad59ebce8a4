package origin_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
)

// TestRunSaysDemoMode: an operator must see at startup that the instance
// refuses writes, in the banner and in the log.
func TestRunSaysDemoMode(t *testing.T) {
	for _, demo := range []bool{false, true} {
		cfg := origin.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.RaftAddr = "127.0.0.1:0"
		cfg.GossipAddr = "127.0.0.1:0" // never a fixed port (8301 is also Consul's)
		cfg.RaftTimeout = 50 * time.Millisecond
		cfg.AdminPassword = "initial-admin-pw"
		cfg.JWTSecret = strings.Repeat("s", 32)
		cfg.DemoMode = demo
		var out, log clienttest.Buffer // the origin's background jobs log too
		o, err := origin.New(t.Context(), cfg, slog.New(slog.NewTextHandler(&log, nil)), &out)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Run announces itself, then shuts down at once
		if err := o.Run(ctx, ln); err != nil {
			t.Fatal(err)
		}
		o.Close()
		banner := strings.Contains(out.String(), "demo mode: every write is refused (403 DEMO_MODE)")
		logged := strings.Contains(log.String(), `level=WARN msg="demo mode is on`)
		if banner != demo || logged != demo {
			t.Errorf("demo mode %v: banner says it %v, log says it %v\n%s\n%s", demo, banner, logged, out.String(), log.String())
		}
	}
}
