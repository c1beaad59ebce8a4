package clienttest

import (
	"encoding/json"
	"github.com/depot-registry/depot/shared/syncbuf"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// Targets runs test twice: with the clients pointed at the origin start
// makes, and with them pointed at an edge node in front of it (see
// ThroughEdge). A real client's test that passes both ways shows the edge
// gives that client what the origin does.
func Targets(t *testing.T, start func(t *testing.T) *origintest.Env, test func(t *testing.T, e *origintest.Env)) {
	t.Run("origin", func(t *testing.T) {
		t.Parallel()
		test(t, start(t))
	})
	t.Run("edge", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		ThroughEdge(t, e)
		test(t, e)
	})
}

// ThroughEdge starts a `depot edge` process in front of e's origin and
// points e.URL at it, so the clients and every call the test makes go
// through the edge: reads served from its replica and cache, writes and
// the rest of the API forwarded. Each repository e.CreateRepo makes from
// then on is assigned to the edge, which is waited for until it serves it.
func ThroughEdge(t *testing.T, e *origintest.Env) {
	t.Helper()
	ThroughEdgeAt(t, e, FreeAddr(t))
}

// ThroughEdgeAt is ThroughEdge with the edge listening on listen.
func ThroughEdgeAt(t *testing.T, e *origintest.Env, listen string) {
	t.Helper()
	bin := DepotBinary(t)
	var node struct{ ID, Token string }
	scheme := "http"
	if e.CertFile != "" {
		scheme = "https"
	}
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "test-edge", "url": scheme + "://" + listen}).Want(201).JSON(&node)
	args := []string{"edge", "--origin", e.Server.URL, "--node-id", node.ID, "--listen", listen,
		"--cache-dir", t.TempDir(), "--heartbeat", "200ms", "--log-level", "warn"}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DEPOT_NODE_TOKEN="+node.Token)
	if e.CertFile != "" {
		// HTTPS like the origin, with its certificate, which the edge
		// trusts when it calls the origin.
		args = append(args, "--tls-cert", e.CertFile, "--tls-key", e.KeyFile)
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+e.CertFile)
	}
	cmd.Args = append(cmd.Args, args...)
	out := &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("edge output:\n%s", out.String())
		}
	})
	edge := scheme + "://" + listen
	health := func() (followed []string) {
		req, _ := http.NewRequest("GET", edge+"/api/v1/health", nil)
		req.Header.Set("Authorization", "Bearer "+e.Admin) // the node's details are for signed-in callers
		resp, err := e.Client.Do(req)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var h struct {
			Node struct {
				RepositoryIDs []string `json:"repository_ids"`
			} `json:"node"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		return h.Node.RepositoryIDs
	}
	wait(t, "the edge to start", func() bool { return health() != nil })
	e.URL = edge
	e.OnCreateRepo = func(id string) {
		t.Helper()
		e.Do("POST", "/api/v1/edge-nodes/"+node.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {id}}).Want(200)
		wait(t, "the edge to serve repository "+id, func() bool { return slices.Contains(health(), id) })
	}
}

func wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  []byte
)

// DepotBinary is the depot command, built once per test process (or
// DEPOT_BIN when set).
func DepotBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("DEPOT_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "depot-bin-")
		if err != nil {
			buildErr = []byte(err.Error())
			return
		}
		bin := filepath.Join(dir, "depot")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/depot-registry/depot/cmd/depot").CombinedOutput()
		if err != nil {
			buildErr = append(out, err.Error()...)
			return
		}
		built = bin
	})
	if built == "" {
		t.Fatalf("building depot: %s", buildErr)
	}
	return built
}

// Ports FreeAddr hands out, below the kernel's ephemeral range (32768
// and up on Linux), so a socket bound to port 0 anywhere, say by a test
// running in parallel, cannot take one between FreeAddr and the process
// that binds it.
const freeLow, freeHigh = 20000, 32000

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr is a 127.0.0.1 address whose port is free right now for TCP
// and UDP (gossip uses both), never handed out before in this process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		port := freeLow + rand.IntN(freeHigh-freeLow)
		if handedOut.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		handedOut.ports[port] = true
		return addr
	}
	t.Fatal("no free port found")
	return ""
}

// Buffer collects a child process's output while a test reads it.
type Buffer = syncbuf.Buffer
