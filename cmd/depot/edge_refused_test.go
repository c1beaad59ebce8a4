package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestEdgeRefusedStops: an empty edge whose credential every origin
// refuses (a wrong token, or the token of another node id) exits 1 at
// once, saying what to check, rather than listen and retry for ever.
func TestEdgeRefusedStops(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	var other struct{ ID, Token string }
	if err := json.Unmarshal(call(t, "POST", es.o.url+"/api/v1/edge-nodes", es.tok, strings.NewReader(`{"name":"far","url":"http://127.0.0.1:8082"}`), 201), &other); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, id, token, want string }{
		{"wrong token", es.node.ID, "dpe_not-a-token", "check --node-id (DEPOT_NODE_ID) and DEPOT_NODE_TOKEN"},
		{"another node's token", es.node.ID, other.Token, "this token is edge node " + other.ID + "'s"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, es.bin, "edge", "--origin", es.o.url, "--node-id", c.id, "--listen", clienttest.FreeAddr(t), "--cache-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "DEPOT_NODE_TOKEN="+c.token)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "listening on") {
			t.Errorf("%s: %v\n%s", c.name, err, out)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s: exited after %v", c.name, took)
		}
	}
}
