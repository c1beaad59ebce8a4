package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestHTTPSProcesses: `depot origin` and `depot edge` with --tls-cert and
// --tls-key serve HTTPS (and say so at startup); an upload over HTTPS at
// the origin is downloaded over HTTPS from the edge, which reaches the
// origin over HTTPS trusting the certificate through SSL_CERT_FILE. A
// certificate without its key is refused at startup with a clear error.
func TestHTTPSProcesses(t *testing.T) {
	certFile, keyFile, _, pool := origintest.SelfSigned(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	s := newSite(t)
	s.flags = []string{"--tls-cert", certFile, "--tls-key", keyFile}
	s.https = client
	o := s.start(t)
	if !strings.Contains(o.out.String(), "listening on https://") {
		t.Fatalf("startup message:\n%s", o.out)
	}
	do := func(method, url, auth, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		if strings.Contains(url, "/api/v1/") {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, url, resp.StatusCode, want, b)
		}
		return b
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(do("POST", o.url+"/api/v1/auth/login", "", `{"username":"admin","password":"initial-pw-123"}`, 200), &tok)
	do("PUT", o.url+"/api/v1/users/me", "Bearer "+tok.AccessToken, `{"current_password":"initial-pw-123","password":"changed-pw-456"}`, 200)
	_ = json.Unmarshal(do("POST", o.url+"/api/v1/auth/login", "", `{"username":"admin","password":"changed-pw-456"}`, 200), &tok)
	admin, basic := "Bearer "+tok.AccessToken, "Basic "+basicAuth("admin", "changed-pw-456")
	var repo, node struct{ ID, Token string }
	_ = json.Unmarshal(do("POST", o.url+"/api/v1/repositories", admin, `{"name":"files","format":"generic"}`, 201), &repo)
	do("PUT", o.url+"/generic/files/tool/1.0/a.txt", basic, "over tls", 201)

	listen := clienttest.FreeAddr(t)
	_ = json.Unmarshal(do("POST", o.url+"/api/v1/edge-nodes", admin, `{"name":"tls-edge","url":"https://`+listen+`"}`, 201), &node)
	do("POST", o.url+"/api/v1/edge-nodes/"+node.ID+"/repositories", admin, `{"repository_ids":["`+repo.ID+`"]}`, 200)
	cmd := exec.Command(s.bin, "edge", "--origin", o.url, "--node-id", node.ID, "--listen", listen, "--cache-dir", t.TempDir(),
		"--heartbeat", "200ms", "--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Env = append(os.Environ(), "DEPOT_NODE_TOKEN="+node.Token, "SSL_CERT_FILE="+certFile)
	out := &clienttest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, 20*time.Second, "the edge to serve the file over HTTPS", func() bool {
		req, _ := http.NewRequest("GET", "https://"+listen+"/generic/files/tool/1.0/a.txt", nil)
		req.Header.Set("Authorization", basic)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && string(b) == "over tls"
	})
	if !strings.Contains(out.String(), "listening on https://") {
		t.Fatalf("edge startup message:\n%s", out)
	}

	half := exec.Command(s.bin, "origin", "--data-dir", t.TempDir(), "--listen", clienttest.FreeAddr(t), "--tls-cert", certFile)
	msg, err := half.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "--tls-cert and --tls-key go together") {
		t.Fatalf("a certificate without its key: %v\n%s", err, msg)
	}
}
