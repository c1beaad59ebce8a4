package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestTwoEdges: one origin and two edge nodes serving the same npm,
// docker and pypi repositories, with the real clients. What is published
// through edge A installs through A and B at once; with the origin
// stopped it installs again from both; a revoked token and a deleted
// user are refused at both within 2 s; a deleted version is gone at both; a restarted edge resumes
// from its index (it reads no change again and fetches no blob again).
func TestTwoEdges(t *testing.T) {
	bins := clienttest.RequireClients(t, "npm", "node", "crane", "twine", "python3")
	s := newSite(t)
	o := s.start(t)
	first := login(t, o.url, "admin", "initial-pw-123")
	call(t, "PUT", o.url+"/api/v1/users/me", first, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok := login(t, o.url, "admin", "changed-pw-456")
	post := func(path, body string, v any) {
		t.Helper()
		if err := json.Unmarshal(call(t, "POST", o.url+"/api/v1"+path, tok, strings.NewReader(body), 201), v); err != nil {
			t.Fatal(err)
		}
	}
	var repoIDs []string
	for _, r := range [][2]string{{"js", "npm"}, {"images", "docker"}, {"py", "pypi"}} {
		var repo struct{ ID string }
		post("/repositories", `{"name":"`+r[0]+`","format":"`+r[1]+`"}`, &repo)
		repoIDs = append(repoIDs, `"`+repo.ID+`"`)
	}
	var writer, reader struct{ ID, Token string }
	post("/users/me/tokens", `{"name":"publish","scopes":["repository:write"]}`, &writer)
	post("/users/me/tokens", `{"name":"ci reader","scopes":["repository:read"]}`, &reader)

	type edgeRun struct {
		node           struct{ ID, Token string }
		listen, cache  string
		p              *proc
		host, url, npm string // npm: the npm repository's registry URL
	}
	edges := map[string]*edgeRun{"A": {}, "B": {}}
	start := func(er *edgeRun) {
		er.p = edgeProc(t, s.bin, o.url, er.node.ID, er.node.Token, er.listen, er.cache)
		waitFor(t, 20*time.Second, "edge "+er.host+" to serve its repositories", func() bool { return strings.Contains(er.p.out.String(), "serving repositories") })
	}
	for name, er := range edges {
		er.listen, er.cache = clienttest.FreeAddr(t), t.TempDir()
		er.host, er.url = er.listen, "http://"+er.listen
		er.npm = er.url + "/npm/js/"
		post("/edge-nodes", `{"name":"edge-`+name+`","url":"`+er.url+`"}`, &er.node)
		call(t, "POST", o.url+"/api/v1/edge-nodes/"+er.node.ID+"/repositories", tok, strings.NewReader(`{"repository_ids":[`+strings.Join(repoIDs, ",")+`]}`), 200)
		start(er)
	}
	a, b := edges["A"], edges["B"]

	// The clients, each in its own home, pointed at one edge.
	run := func(c clienttest.Cmd) string {
		t.Helper()
		out, err := clienttest.TryRun(c)
		if err != nil {
			t.Errorf("%s %v: %v\n%s", c.Name, c.Args, err, out)
		}
		return out
	}
	npm := func(er *edgeRun, dir string, args ...string) string {
		home := filepath.Join(dir, ".home")
		npmrc := filepath.Join(home, ".npmrc")
		clienttest.WriteFile(t, npmrc, "registry="+er.npm+"\n//"+er.host+"/npm/js/:_authToken="+reader.Token+"\n")
		if args[0] == "publish" {
			clienttest.WriteFile(t, npmrc, "registry="+er.npm+"\n//"+er.host+"/npm/js/:_authToken="+writer.Token+"\n")
		}
		return run(clienttest.Cmd{Dir: dir, Name: "npm", Args: args, Env: []string{"HOME=" + home, "npm_config_cache=" + filepath.Join(home, "cache"),
			"npm_config_userconfig=" + npmrc, "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false",
			"npm_config_loglevel=warn", "NO_COLOR=1"}})
	}
	crane := func(dir string, args ...string) string {
		home := filepath.Join(dir, ".home")
		return strings.TrimSpace(run(clienttest.Cmd{Dir: dir, Env: []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}, Name: bins["crane"], Args: args}))
	}
	pipEnv := []string{"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_CONFIG_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1"}

	// Publish through A: two npm versions, an image, a wheel.
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pkg := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(pkg, "package.json"), `{"name":"two-edges","version":"`+v+`","main":"index.js"}`)
		clienttest.WriteFile(t, filepath.Join(pkg, "index.js"), `module.exports = "two-edges `+v+`";`)
		npm(a, pkg, "publish")
	}
	work := t.TempDir()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	_ = tw.WriteHeader(&tar.Header{Name: "f.txt", Mode: 0o644, Size: 4})
	_, _ = tw.Write([]byte("two\n"))
	_ = tw.Close()
	clienttest.WriteFile(t, filepath.Join(work, "layer.tar"), layer.String())
	crane(work, "auth", "login", a.host, "-u", "admin", "-p", writer.Token)
	crane(work, "append", "--insecure", "-f", "layer.tar", "-t", a.host+"/images/app:1.0")
	digest := crane(work, "digest", "--insecure", a.host+"/images/app:1.0")
	proj := filepath.Join(t.TempDir(), "twoedges")
	clienttest.WriteFile(t, filepath.Join(proj, "setup.py"), `from setuptools import setup
setup(name="two_edges", version="1.0.0", package_dir={"": "src"}, packages=["two_edges"])
`)
	clienttest.WriteFile(t, filepath.Join(proj, "src", "two_edges", "__init__.py"), "def hello():\n    return 'two edges'\n")
	run(clienttest.Cmd{Dir: proj, Env: []string{"HOME=" + t.TempDir()}, Name: "/usr/bin/python3", Args: []string{"setup.py", "-q", "bdist_wheel"}})
	wheels, _ := filepath.Glob(filepath.Join(proj, "dist", "*.whl"))
	if len(wheels) != 1 {
		t.Fatalf("wheels: %v", wheels)
	}
	run(clienttest.Cmd{Env: []string{"HOME=" + t.TempDir()}, Name: "twine", Args: []string{"upload", "--non-interactive", "--disable-progress-bar",
		"--repository-url", a.url + "/pypi/py/", "-u", "__token__", "-p", writer.Token, wheels[0]}})
	if t.Failed() {
		t.FailNow()
	}

	// install: each client installs what was published, from er alone.
	install := func(er *edgeRun, what string) {
		dir := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(dir, "package.json"), `{"name":"consumer","version":"1.0.0","private":true}`)
		npm(er, dir, "install", "two-edges@1.1.0")
		if out := run(clienttest.Cmd{Dir: dir, Name: "node", Args: []string{"-e", `console.log(require("two-edges"))`}}); !strings.Contains(out, "two-edges 1.1.0") {
			t.Errorf("%s: npm installed from %s a package that says %q", what, er.host, out)
		}
		crane(dir, "auth", "login", er.host, "-u", "admin", "-p", reader.Token)
		if got := crane(dir, "digest", "--insecure", er.host+"/images/app:1.0"); got != digest {
			t.Errorf("%s: the image's digest at %s is %q, want %q", what, er.host, got, digest)
		}
		crane(dir, "pull", "--insecure", er.host+"/images/app:1.0", filepath.Join(dir, "image.tar"))
		venv := filepath.Join(dir, "venv")
		run(clienttest.Cmd{Env: pipEnv, Name: "python3", Args: []string{"-m", "venv", venv}})
		run(clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "pip"), Args: []string{"install", "--no-cache-dir",
			"--index-url", "http://admin:" + reader.Token + "@" + er.host + "/pypi/py/simple/", "two_edges==1.0.0"}})
		if out := run(clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "python"), Args: []string{"-c", "import two_edges; print(two_edges.hello())"}}); !strings.Contains(out, "two edges") {
			t.Errorf("%s: pip installed from %s a package that says %q", what, er.host, out)
		}
	}
	both := func(what string) {
		var wg sync.WaitGroup
		for _, er := range []*edgeRun{a, b} {
			wg.Go(func() { install(er, what) })
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	both("with the origin up")
	servedB := metric(t, b.url, "depot_edge_served_bytes_total")
	if servedB <= 0 {
		t.Errorf("edge B served %v bytes", servedB)
	}

	// Every origin stopped: both edges serve the clients on their own.
	o.stop(t)
	both("with the origin stopped")
	if m := metric(t, b.url, "depot_edge_served_bytes_total"); m <= servedB {
		t.Errorf("edge B's served bytes did not grow offline: %v then %v", servedB, m)
	}

	// The origin back: a revoked token is refused at both edges within 2 s.
	o = s.start(t)
	for _, er := range []*edgeRun{a, b} {
		waitFor(t, 20*time.Second, "edge "+er.host+" to reach the origin again", func() bool {
			resp, err := http.Get(er.url + "/api/v1/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	}
	tok = login(t, o.url, "admin", "changed-pw-456")
	tarball := "/npm/js/two-edges/-/two-edges-1.0.0.tgz"
	status := func(er *edgeRun, path, auth string) int {
		req, _ := http.NewRequest("GET", er.url+path, nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// refused waits until both edges refuse auth, at most 2 s after the
	// change on the origin.
	refused := func(what, auth string, changed time.Time) {
		t.Helper()
		for _, er := range []*edgeRun{a, b} {
			for status(er, tarball, auth) != 401 {
				if time.Since(changed) > 2*time.Second {
					t.Fatalf("%s still works at %s after %v", what, er.host, time.Since(changed))
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("%s refused at edge %s %v after the change", what, er.host, time.Since(changed).Round(time.Millisecond))
		}
	}
	readerAuth := "Bearer " + reader.Token
	for _, er := range []*edgeRun{a, b} {
		if got := status(er, tarball, readerAuth); got != 200 {
			t.Fatalf("the reader's token at %s before its revocation: %d", er.host, got)
		}
	}
	call(t, "DELETE", o.url+"/api/v1/users/me/tokens/"+reader.ID, tok, nil, 204)
	refused("the revoked token", readerAuth, time.Now())

	// So is a deleted user's password.
	var carol struct{ ID string }
	post("/users", `{"username":"carol","email":"carol@example.com","password":"carol-pw-789","role":"user"}`, &carol)
	post("/permissions", `{"repository_id":`+repoIDs[0]+`,"user_id":"`+carol.ID+`","permissions":["read"]}`, &struct{}{})
	carolAuth := "Basic " + basicAuth("carol", "carol-pw-789")
	for _, er := range []*edgeRun{a, b} {
		waitFor(t, 5*time.Second, "carol to read at "+er.host, func() bool { return status(er, tarball, carolAuth) == 200 })
	}
	call(t, "DELETE", o.url+"/api/v1/users/"+carol.ID, tok, nil, 204)
	refused("the deleted user's password", carolAuth, time.Now())

	// A deleted version is gone at both edges, packument and tarball.
	var versions struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	_ = json.Unmarshal(call(t, "GET", o.url+"/api/v1/packages/two-edges/versions", tok, nil, 200), &versions)
	deleted := false
	for _, v := range versions.Versions {
		if v.Version == "1.0.0" {
			call(t, "DELETE", o.url+"/api/v1/artifacts/"+v.ArtifactID, tok, nil, 204)
			deleted = true
		}
	}
	if !deleted {
		t.Fatalf("no version 1.0.0 among %+v", versions)
	}
	for _, er := range []*edgeRun{a, b} {
		waitFor(t, 5*time.Second, "version 1.0.0 to be gone at "+er.host, func() bool {
			return status(er, tarball, "Bearer "+writer.Token) == 404 && !strings.Contains(string(call(t, "GET", er.npm+"two-edges", "Bearer "+writer.Token, nil, 200)), `"1.0.0"`)
		})
	}

	// A restarted edge resumes from its index: it reads again none of the
	// changes it had, and fetches no blob it had.
	readBefore := metric(t, b.url, "depot_edge_feed_changes_total")
	b.p.stop(t)
	start(b)
	waitFor(t, 10*time.Second, "the restarted edge to report to the origin", func() bool {
		resp, err := http.Get(b.url + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if got := status(b, "/npm/js/two-edges/-/two-edges-1.1.0.tgz", "Bearer "+writer.Token); got != 200 {
		t.Fatalf("the restarted edge answers the tarball with %d", got)
	}
	readAfter, fetchedAfter := metric(t, b.url, "depot_edge_feed_changes_total"), metric(t, b.url, "depot_edge_cache_fetched_bytes_total")
	t.Logf("edge B read %v changes before its restart and %v after; fetched %v bytes after", readBefore, readAfter, fetchedAfter)
	if readAfter != 0 || fetchedAfter != 0 || readBefore < 10 {
		t.Errorf("restart: %v changes read again (of %v), %v bytes fetched again", readAfter, readBefore, fetchedAfter)
	}
}

// metric reads one unlabelled sample from a node's /metrics.
func metric(t *testing.T, base, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(string(call(t, "GET", base+"/metrics", "", nil, 200)), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q", name, line)
			}
			return f
		}
	}
	t.Fatalf("%s has no sample %s", base, name)
	return 0
}
