package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// roundRobin is a load balancer in front of the origins: each request
// goes to the next one. It remembers which origin took each request of
// an upload session.
type roundRobin struct {
	targets []*url.URL
	next    atomic.Int64
	mu      sync.Mutex
	uploads map[string]map[int]bool // upload path -> origins it reached
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(rr.next.Add(1)) % len(rr.targets)
	if p := r.URL.Path; strings.Contains(p, "/blobs/uploads/") && !strings.HasSuffix(p, "/uploads/") {
		rr.mu.Lock()
		if rr.uploads[p] == nil {
			rr.uploads[p] = map[int]bool{}
		}
		rr.uploads[p][i] = true
		rr.mu.Unlock()
	}
	// The Host header stays the balancer's, so the origins' Locations
	// and challenges name it.
	(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(rr.targets[i])
		pr.Out.Host = pr.In.Host
	}}).ServeHTTP(w, r)
}

// TestUploadAcrossOrigins: an OCI chunked upload whose requests land on
// different origins completes (started on one, chunks on the others,
// closed on a third, read on any); a chunk that does not continue the
// upload is refused wherever it lands; the real crane pushes through a
// round-robin balancer in front of the three origins and the image reads
// back from each. An upload whose origin is killed fails cleanly on the
// others (BLOB_UPLOAD_UNKNOWN, nothing left behind), and a new one
// succeeds.
func TestUploadAcrossOrigins(t *testing.T) {
	bins := clienttest.RequireClients(t, "crane")
	c := startCluster(t)
	o := c.procs
	call(t, "POST", o[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"images","format":"docker"}`), 201)
	waitFor(t, 10*time.Second, "every origin to know the repository", func() bool {
		for _, p := range o {
			if !strings.Contains(get(p.url+"/api/v1/repositories", c.tok), `"images"`) {
				return false
			}
		}
		return true
	})

	do := func(method, url string, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", c.basic)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp
	}
	expect := func(resp *http.Response, status int, what string) string {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status {
			t.Fatalf("%s: %d, want %d: %s", what, resp.StatusCode, status, b)
		}
		return string(b)
	}
	start := func(on string) string {
		t.Helper()
		resp := do("POST", on+"/v2/images/app/blobs/uploads/", "")
		expect(resp, 202, "start an upload")
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc.Path
	}

	// Started on the first origin, a chunk on each other one, the wrong
	// chunk refused, the status read and the upload closed elsewhere.
	path := start(o[0].url)
	resp := do("PATCH", o[1].url+path, "hello", "Content-Range", "0-4", "Content-Type", "application/octet-stream")
	expect(resp, 202, "chunk 1 on another origin")
	if r := resp.Header.Get("Range"); r != "0-4" {
		t.Fatalf("chunk 1: Range %q", r)
	}
	resp = do("PATCH", o[2].url+path, "hello", "Content-Range", "0-4", "Content-Type", "application/octet-stream")
	expect(resp, 416, "a repeated chunk on a third origin")
	if r := resp.Header.Get("Range"); r != "0-4" {
		t.Fatalf("refused chunk: Range %q", r)
	}
	resp = do("PATCH", o[2].url+path, " world, short", "Content-Range", "5-10", "Content-Type", "application/octet-stream")
	expect(resp, 400, "a chunk longer than its Content-Range")
	expect(do("PATCH", o[2].url+path, " world", "Content-Range", "5-10", "Content-Type", "application/octet-stream"), 202, "chunk 2")
	resp = do("GET", o[1].url+path, "")
	expect(resp, 204, "upload status")
	if r := resp.Header.Get("Range"); r != "0-10" {
		t.Fatalf("status: Range %q", r)
	}
	sum := sha256.Sum256([]byte("hello world"))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	expect(do("PUT", o[0].url+path+"?digest=sha256:"+strings.Repeat("0", 64), ""), 400, "close with the wrong digest")
	expect(do("PUT", o[1].url+path+"?digest=sha256:"+strings.Repeat("0", 64), ""), 404, "the upload after a wrong digest")
	path = start(o[2].url)
	expect(do("PATCH", o[0].url+path, "hello", "Content-Type", "application/octet-stream"), 202, "a streamed chunk")
	resp = do("PUT", o[1].url+path+"?digest="+digest, " world", "Content-Type", "application/octet-stream")
	expect(resp, 201, "close with the last chunk")
	index := resp.Header.Get("X-Depot-Index")
	if index == "" {
		t.Fatal("the upload's answer has no X-Depot-Index")
	}
	for i := range o {
		if got := expect(do("GET", o[i].url+"/v2/images/app/blobs/"+digest, "", "X-Depot-Min-Index", index), 200, "the blob"); got != "hello world" {
			t.Fatalf("origin %d serves %q", i, got)
		}
	}

	// The real crane through a round-robin balancer.
	rr := &roundRobin{uploads: map[string]map[int]bool{}}
	for _, p := range o {
		u, _ := url.Parse(p.url)
		rr.targets = append(rr.targets, u)
	}
	lb := httptest.NewServer(rr)
	defer lb.Close()
	lbHost := strings.TrimPrefix(lb.URL, "http://")
	work, home := t.TempDir(), clienttest.Home(t)
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
	crane := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(clienttest.Run(t, clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: args}))
	}
	crane("auth", "login", lbHost, "-u", "admin", "-p", "changed-pw-456")
	for i := range o {
		crane("auth", "login", strings.TrimPrefix(o[i].url, "http://"), "-u", "admin", "-p", "changed-pw-456")
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := strings.Repeat("through a balancer\n", 50000)
	_ = tw.WriteHeader(&tar.Header{Name: "f.txt", Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	clienttest.WriteFile(t, filepath.Join(work, "layer.tar"), layer.String())
	pushed := crane("append", "--insecure", "-f", "layer.tar", "-t", lbHost+"/images/app:lb")
	// The balancer does not pass on X-Depot-Index, so a read right after
	// the push may reach an origin that has not applied it yet: wait for
	// each (milliseconds).
	_, want, _ := strings.Cut(pushed, "@")
	for i := range o {
		host := strings.TrimPrefix(o[i].url, "http://")
		waitFor(t, 5*time.Second, "the image on every origin", func() bool {
			got, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: []string{"digest", "--insecure", host + "/images/app:lb"}})
			return err == nil && strings.TrimSpace(got) == want
		})
		crane("pull", "--insecure", host+"/images/app:lb", filepath.Join(work, fmt.Sprintf("pulled-%d.tar", i)))
	}
	spread := 0
	rr.mu.Lock()
	for p, on := range rr.uploads {
		if len(on) > 1 {
			spread++
		}
		t.Logf("upload %s reached origins %v", p, on)
	}
	rr.mu.Unlock()
	if spread == 0 {
		t.Fatal("no upload of crane's reached more than one origin: the balancer did not spread them")
	}

	// downloads_24h counts the downloads of every origin, on any of them.
	stats := func(on string) int {
		var st struct {
			Downloads int `json:"downloads_24h"`
		}
		_ = json.Unmarshal(call(t, "GET", on+"/api/v1/admin/stats", c.tok, nil, 200), &st)
		return st.Downloads
	}
	// Origins gossip their counts every 2 s: settled is the same count
	// everywhere for 3 s.
	before, since := -1, time.Now()
	waitFor(t, 20*time.Second, "the download counts to settle", func() bool {
		n := stats(o[0].url)
		if n != stats(o[1].url) || n != stats(o[2].url) || n != before {
			before, since = n, time.Now()
		}
		return time.Since(since) > 3*time.Second
	})
	for i := range o {
		expect(do("GET", o[i].url+"/v2/images/app/manifests/lb", "", "Accept", "application/vnd.oci.image.manifest.v1+json,application/vnd.docker.distribution.manifest.v2+json"), 200, "a manifest download")
	}
	waitFor(t, 10*time.Second, "downloads_24h to count the three origins' downloads", func() bool {
		for i := range o {
			if stats(o[i].url) != before+3 {
				return false
			}
		}
		return true
	})

	// The origin holding an upload dies: the upload is unknown on the
	// others, which keep nothing of it; a new upload succeeds.
	path = start(o[1].url)
	expect(do("PATCH", o[1].url+path, "half", "Content-Type", "application/octet-stream"), 202, "a chunk on its own origin")
	_ = o[1].cmd.Process.Kill()
	_ = o[1].cmd.Wait()
	body := expect(do("PATCH", o[2].url+path, "rest", "Content-Type", "application/octet-stream"), 404, "a chunk of the dead origin's upload")
	if !strings.Contains(body, "BLOB_UPLOAD_UNKNOWN") {
		t.Fatalf("answer %s", body)
	}
	expect(do("PUT", o[0].url+path+"?digest="+digest, ""), 404, "closing the dead origin's upload")
	for _, i := range []int{0, 2} {
		dir := filepath.Join(c.nodes[i].dataDir, "blobs", "uploads")
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("origin %d keeps %d uploads in %s", i, len(ents), dir)
		}
	}
	path = start(o[2].url)
	expect(do("PUT", o[0].url+path+"?digest="+digest, "hello world", "Content-Type", "application/octet-stream"), 201, "a new upload without the dead origin")
}
