package origin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Do sends a request; out, when not nil, is a *[]byte for the body or a
// value the JSON body decodes into.
func Do(method, url, auth, body string, want int, out any) error {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if strings.Contains(url, "/api/v1/") || strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %s", method, url, resp.StatusCode, want, raw)
	}
	switch v := out.(type) {
	case nil:
	case *[]byte:
		*v = raw
	default:
		return json.Unmarshal(raw, v)
	}
	return nil
}

// Login signs the admin in with its initial password pass, changing it
// to pass+"-2" as the origin insists on first, and returns the
// Authorization header value.
func Login(base, pass string) (string, error) {
	signIn := func(pw string) (string, error) {
		var out struct {
			AccessToken string `json:"access_token"`
		}
		err := Do("POST", base+"/api/v1/auth/login", "", `{"username":"admin","password":"`+pw+`"}`, 200, &out)
		return "Bearer " + out.AccessToken, err
	}
	first, err := signIn(pass)
	if err != nil {
		return "", err
	}
	if err := Do("PUT", base+"/api/v1/users/me", first, `{"current_password":"`+pass+`","password":"`+pass+`-2"}`, 200, nil); err != nil {
		return "", err
	}
	return signIn(pass + "-2")
}

// Edge is a running edge node.
type Edge struct {
	cmd *exec.Cmd
	URL string
}

// Stop ends the edge gracefully.
func (e *Edge) Stop() { _ = e.cmd.Process.Signal(syscall.SIGTERM); _ = e.cmd.Wait() }

// StartEdge registers an edge node on the origin at originURL (admin is
// an administrator's Authorization), assigns it the repositories (ids),
// starts it with its cache and log in dir, and waits until it serves
// them.
func StartEdge(bin, dir, originURL, admin string, repos []string, args ...string) (*Edge, error) {
	listen, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	var node struct{ ID, Token string }
	if err := Do("POST", originURL+"/api/v1/edge-nodes", admin, `{"name":"bench-edge-`+listen[strings.LastIndex(listen, ":")+1:]+`","url":"http://`+listen+`"}`, 201, &node); err != nil {
		return nil, err
	}
	quoted := make([]string, len(repos))
	for i, r := range repos {
		quoted[i] = `"` + r + `"`
	}
	if err := Do("POST", originURL+"/api/v1/edge-nodes/"+node.ID+"/repositories", admin, `{"repository_ids":[`+strings.Join(quoted, ",")+`]}`, 200, nil); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "edge.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, append([]string{"edge", "--origin", originURL, "--node-id", node.ID, "--listen", listen,
		"--cache-dir", filepath.Join(dir, "edge"), "--heartbeat", "1s", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "DEPOT_NODE_TOKEN="+node.Token)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &Edge{cmd: cmd, URL: "http://" + listen}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var h struct {
			Node struct {
				RepositoryIDs []string `json:"repository_ids"`
			} `json:"node"`
		}
		// (The node's details are for signed-in callers.)
		if Do("GET", e.URL+"/api/v1/health", admin, "", 200, &h) == nil && len(h.Node.RepositoryIDs) == len(repos) {
			return e, nil
		}
		if time.Now().After(deadline) {
			e.Stop()
			return nil, fmt.Errorf("the edge did not come up; see %s", logf.Name())
		}
	}
}

// PID is the edge's process id.
func (e *Edge) PID() int { return e.cmd.Process.Pid }
