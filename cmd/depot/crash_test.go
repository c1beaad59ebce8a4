package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// buildDepot is the real binary, built once per test process; such
// tests are skipped under -short.
func buildDepot(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	return clienttest.DepotBinary(t)
}

type proc struct {
	cmd *exec.Cmd
	out *clienttest.Buffer
	url string
}

// site is where an origin process runs: the binary, its data directory
// and its ports, the same at every restart.
type site struct {
	bin, dataDir, listen, raftAddr, gossipAddr string
	flags, env                                 []string     // added to every start
	https                                      *http.Client // set: it serves HTTPS (flags say how), and this client trusts it
}

func newSite(t *testing.T) site {
	return site{bin: buildDepot(t), dataDir: t.TempDir(), listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t)}
}

// args are the origin's flags for the site; an address left empty is
// not given.
func (s site) args() []string {
	// --min-free-bytes 0: these tests are about other things than a host
	// that happens to be short of disk.
	args := []string{"origin", "--data-dir", s.dataDir, "--listen", s.listen, "--min-free-bytes", "0"}
	if s.raftAddr != "" {
		args = append(args, "--raft-addr", s.raftAddr)
	}
	if s.gossipAddr != "" {
		args = append(args, "--gossip-addr", s.gossipAddr)
	}
	return args
}

// start runs the origin and waits until it answers.
func (s site) start(t *testing.T) *proc {
	t.Helper()
	cmd := exec.Command(s.bin, append(s.args(), s.flags...)...)
	cmd.Env = append(append(os.Environ(), "DEPOT_ADMIN_PASSWORD=initial-pw-123", "JWT_SECRET=crash-test-secret-crash-test-secret-0123"), s.env...)
	out := &clienttest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: out, url: "http://" + s.listen}
	client := http.DefaultClient
	if s.https != nil {
		p.url, client = "https://"+s.listen, s.https
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(p.url + "/api/v1/health")
		if err == nil {
			resp.Body.Close()
			// The startup message is printed before the origin serves, but
			// it reaches out through a pipe that exec copies on its own
			// goroutine: wait for it too, so tests read what was printed.
			if resp.StatusCode == 200 && strings.Contains(out.String(), "listening on") {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("origin did not come up:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and expects a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30s after SIGTERM")
	}
}

func call(t *testing.T, method, url, auth string, body io.Reader, want int) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil && strings.Contains(url, "/api/v1/") {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, resp.StatusCode, want, data)
	}
	return data
}

func login(t *testing.T, base, user, pass string) string {
	t.Helper()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	body := fmt.Sprintf(`{"username":%q,"password":%q}`, user, pass)
	if err := json.Unmarshal(call(t, "POST", base+"/api/v1/auth/login", "", strings.NewReader(body), 200), &tok); err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok.AccessToken
}

// TestKill9LosesNoAcknowledgedUpload uploads through the real binary,
// kills it with SIGKILL right after the last acknowledgement, restarts it
// on the same data directory and downloads every file.
func TestKill9LosesNoAcknowledgedUpload(t *testing.T) {
	s := newSite(t)
	p := s.start(t)
	if !strings.Contains(p.out.String(), "listening on http://"+s.listen) || !strings.Contains(p.out.String(), s.dataDir) {
		t.Errorf("startup message does not say where it listens and where the data lives:\n%s", p.out)
	}

	tok := login(t, p.url, "admin", "initial-pw-123")
	call(t, "PUT", p.url+"/api/v1/users/me", tok, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	call(t, "POST", p.url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)

	basic := "Basic " + basicAuth("admin", "changed-pw-456")
	want := map[string]string{}
	for i := 0; i < 20; i++ {
		data := make([]byte, 1000+i*4096)
		_, _ = rand.Read(data)
		sum := sha256.Sum256(data)
		path := fmt.Sprintf("/generic/files/pkg/1.%d/file-%d.bin", i, i)
		call(t, "PUT", p.url+path, basic, bytes.NewReader(data), 201)
		want[path] = hex.EncodeToString(sum[:])
	}
	// No graceful anything: the process dies right after the last 201.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()

	p2 := s.start(t)
	if strings.Contains(p2.out.String(), "Created user 'admin'") {
		t.Error("restart created the admin again")
	}
	for path, sum := range want {
		data := call(t, "GET", p2.url+path, basic, nil, 200)
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: bytes differ after restart", path)
		}
	}
	var stats map[string]any
	_ = json.Unmarshal(call(t, "GET", p2.url+"/api/v1/admin/stats", login(t, p2.url, "admin", "changed-pw-456"), nil, 200), &stats)
	if stats["artifacts"] != float64(len(want)) {
		t.Errorf("stats after restart: %v, want %d artifacts", stats, len(want))
	}

	// A graceful stop (SIGTERM) exits cleanly.
	p2.stop(t)
}

func basicAuth(u, p string) string {
	return strings.TrimSpace(base64Std(u + ":" + p))
}
