package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/shared/formattest"
)

// loadRun is continuous upload load on the three origins of a cluster:
// writers (generic files, npm publishes over HTTP, and the real npm
// client publishing) go round robin, each moving to the next origin when
// one fails or is marked down (as a load balancer drains it) and retrying
// a failed upload until it is acknowledged; readers download
// acknowledged uploads from the live origins, sending the write's index
// (X-Depot-Min-Index), and must never fail.
type loadRun struct {
	t        *testing.T
	c        *cluster
	down     [3]atomic.Bool
	mu       sync.Mutex
	acked    []ackedUpload
	badReads []string
	reads    atomic.Int64
	failures atomic.Int64
	stopped  atomic.Bool
	wg       sync.WaitGroup
	client   *http.Client
}

type ackedUpload struct {
	path  string // to download it
	sum   [32]byte
	index string // X-Depot-Index of the write ("" from the npm client)
}

// startLoad creates the repositories and starts the writers, and
// readers when reads is set.
func startLoad(t *testing.T, c *cluster, reads bool) *loadRun {
	bins := clienttest.RequireClients(t, "npm")
	l := &loadRun{t: t, c: c, client: &http.Client{Timeout: 20 * time.Second}}
	call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"load","format":"generic"}`), 201)
	call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"js","format":"npm"}`), 201)
	waitFor(t, 10*time.Second, "every origin to know the repositories", func() bool {
		for _, p := range c.procs {
			if !strings.Contains(get(p.url+"/api/v1/repositories", c.tok), `"js"`) {
				return false
			}
		}
		return true
	})
	for w := range 3 {
		l.writer(w, func(n int) (ackedUpload, func(origin int) (int, string)) {
			body := make([]byte, 1024+n%4096)
			_, _ = rand.Read(body)
			path := fmt.Sprintf("/generic/load/c%d/%d/f.bin", w, n)
			return ackedUpload{path: path, sum: sha256.Sum256(body)}, func(origin int) (int, string) {
				return l.put(origin, path, "", body)
			}
		})
	}
	l.writer(3, func(n int) (ackedUpload, func(origin int) (int, string)) {
		version := fmt.Sprintf("1.0.%d", n)
		tgz := formattest.Tgz(t, map[string]string{"package/package.json": fmt.Sprintf(`{"name":"http-pkg","version":%q}`, version), "package/r": rand.Text()})
		doc := formattest.NPMDocument("http-pkg", version, "latest", tgz)
		return ackedUpload{path: "/npm/js/http-pkg/-/http-pkg-" + version + ".tgz", sum: sha256.Sum256(tgz)}, func(origin int) (int, string) {
			return l.put(origin, "/npm/js/http-pkg", "application/json", doc)
		}
	})
	l.npmWriter(bins["npm"])
	if reads {
		for range 2 {
			l.wg.Go(l.reader)
		}
	}
	return l
}

// next is the first origin from i on that is not marked down.
func (l *loadRun) next(i int) int {
	for range 3 {
		if !l.down[i].Load() {
			return i
		}
		i = (i + 1) % 3
	}
	return i
}

func (l *loadRun) put(origin int, path, contentType string, body []byte) (int, string) {
	req, _ := http.NewRequest("PUT", l.c.procs[origin].url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", l.c.basic)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, ""
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Depot-Index")
}

// writer uploads one new thing after another until stopped: prepare
// makes upload n (the same bytes for every attempt) and the attempt that
// sends it to an origin, answering the status and X-Depot-Index. A 409 or
// 403 on a retry means an earlier attempt whose answer was lost did
// commit; its bytes are checked at the end like any other.
func (l *loadRun) writer(w int, prepare func(n int) (ackedUpload, func(origin int) (int, string))) {
	l.wg.Go(func() {
		origin := w % 3
		for n := 0; !l.stopped.Load(); n++ {
			u, send := prepare(n)
			for attempt := 0; ; attempt++ {
				origin = l.next(origin)
				status, index := send(origin)
				if status == http.StatusCreated || status == http.StatusOK ||
					(attempt > 0 && (status == http.StatusConflict || status == http.StatusForbidden)) {
					u.index = index
					l.mu.Lock()
					l.acked = append(l.acked, u)
					l.mu.Unlock()
					break
				}
				l.failures.Add(1)
				if attempt == 50 {
					l.t.Errorf("writer %d upload %d: still failing after %d attempts (last status %d)", w, n, attempt, status)
					return
				}
				origin = (origin + 1) % 3
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
}

// npmWriter publishes versions of a package with the real npm client.
func (l *loadRun) npmWriter(npm string) {
	dir, home := l.t.TempDir(), clienttest.Home(l.t)
	rc := ""
	for _, p := range l.c.procs {
		rc += "//" + strings.TrimPrefix(p.url, "http://") + "/npm/js/:_authToken=" + strings.TrimPrefix(l.c.tok, "Bearer ") + "\n"
	}
	clienttest.WriteFile(l.t, filepath.Join(home, ".npmrc"), rc)
	l.writer(4, func(n int) (ackedUpload, func(origin int) (int, string)) {
		version := fmt.Sprintf("2.0.%d", n)
		clienttest.WriteFile(l.t, filepath.Join(dir, "package.json"), fmt.Sprintf(`{"name":"cli-pkg","version":%q}`, version))
		// npm makes the tarball: its bytes are checked against the first
		// download (every origin must then serve the same).
		return ackedUpload{path: "/npm/js/cli-pkg/-/cli-pkg-" + version + ".tgz"}, func(origin int) (int, string) {
			out, err := clienttest.TryRun(clienttest.Cmd{Dir: dir, Env: []string{"HOME=" + home}, Name: npm,
				Args: []string{"publish", "--registry", l.c.procs[origin].url + "/npm/js/"}})
			switch {
			case err == nil:
				return http.StatusCreated, ""
			case strings.Contains(out, "E403"):
				return http.StatusForbidden, ""
			case strings.Contains(out, "E409"), strings.Contains(out, "cannot publish over the previously published version"):
				// The version is there (npm itself refuses a version the
				// packument lists): an earlier attempt committed.
				return http.StatusConflict, ""
			}
			l.t.Logf("npm publish %s on origin %d: %v\n%s", version, origin, err, out)
			return 0, ""
		}
	})
}

// reader downloads random acknowledged uploads from live origins.
func (l *loadRun) reader() {
	for !l.stopped.Load() {
		l.mu.Lock()
		var u ackedUpload
		if len(l.acked) > 0 {
			i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(l.acked))))
			u = l.acked[i.Int64()]
		}
		l.mu.Unlock()
		if u.path == "" || u.index == "" {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		j, _ := rand.Int(rand.Reader, big.NewInt(3))
		origin := l.next(int(j.Int64()))
		req, _ := http.NewRequest("GET", l.c.procs[origin].url+u.path, nil)
		req.Header.Set("Authorization", l.c.basic)
		req.Header.Set("X-Depot-Min-Index", u.index)
		resp, err := l.client.Do(req)
		l.reads.Add(1)
		if err != nil {
			l.badRead(fmt.Sprintf("%s on origin %d: %v", u.path, origin, err))
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || sha256.Sum256(body) != u.sum {
			l.badRead(fmt.Sprintf("%s on origin %d: %d %v", u.path, origin, resp.StatusCode, err))
		}
	}
}

func (l *loadRun) badRead(s string) {
	l.mu.Lock()
	l.badReads = append(l.badReads, s)
	l.mu.Unlock()
}

// stop ends the load and checks every acknowledged upload on the origins
// not listed as gone: downloadable, with its checksum. It returns how
// many were acknowledged.
func (l *loadRun) stop(gone ...int) int {
	l.t.Helper()
	l.stopped.Store(true)
	l.wg.Wait()
	var bad []string
	for i, p := range l.c.procs {
		if slices.Contains(gone, i) {
			continue
		}
		for k, u := range l.acked {
			got := get(p.url+u.path, l.c.basic)
			if u.sum == ([32]byte{}) && got != "" {
				l.acked[k].sum = sha256.Sum256([]byte(got)) // npm's own tarball: the first answer sets it
				u = l.acked[k]
			}
			if sha256.Sum256([]byte(got)) != u.sum {
				bad = append(bad, fmt.Sprintf("%s on origin %d", u.path, i))
			}
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		l.t.Errorf("%d acknowledged uploads lost or wrong: %v", len(bad), bad[:min(len(bad), 10)])
	}
	kinds := map[string]int{}
	for _, u := range l.acked {
		switch {
		case strings.HasPrefix(u.path, "/generic/"):
			kinds["generic files"]++
		case strings.Contains(u.path, "/cli-pkg/"):
			kinds["publishes by the npm client"]++
		default:
			kinds["npm publishes over HTTP"]++
		}
	}
	l.t.Logf("acknowledged: %v", kinds)
	if kinds["publishes by the npm client"] == 0 {
		l.t.Error("the npm client published nothing")
	}
	return len(l.acked)
}

// leaderIndex is which of c's nodes leads.
func leaderIndex(t *testing.T, c *cluster) int {
	v, _ := viewOf(t, c.procs[c.live()].url, c.tok)
	for i, n := range c.nodes {
		for _, m := range v.Members {
			if m.ID == v.LeaderID && m.RaftAddr == n.raftAddr {
				return i
			}
		}
	}
	t.Fatalf("no leader among %+v", v)
	return -1
}

// live is a node whose process runs.
func (c *cluster) live() int {
	for i, p := range c.procs {
		if p.cmd.ProcessState == nil {
			return i
		}
	}
	return 0
}

// TestLeaderKilledUnderLoad: generic uploads and npm publishes (over HTTP
// and with the real npm client) go on without pause against the three
// origins of a cluster while the leader is killed with kill -9. A new
// leader comes within 3 s; every acknowledged upload is then
// downloadable, with its checksum, from both survivors; a failed attempt
// got an error (never a silent loss) and its retry succeeded. It prints
// the failover time and the counts.
func TestLeaderKilledUnderLoad(t *testing.T) {
	c := startCluster(t)
	l := startLoad(t, c, false)
	leader := leaderIndex(t, c)
	time.Sleep(2 * time.Second)
	l.mu.Lock()
	before := len(l.acked)
	l.mu.Unlock()
	_ = c.procs[leader].cmd.Process.Kill()
	_ = c.procs[leader].cmd.Wait()
	l.down[leader].Store(true)
	killed := time.Now()
	survivor := c.procs[(leader+1)%3]
	var failover time.Duration
	for failover == 0 {
		if time.Since(killed) > 3*time.Second {
			l.stop(leader)
			t.Fatal("no new leader 3 s after kill -9 of the leader under load")
		}
		if v, ok := viewOf(t, survivor.url, c.tok); ok && v.LeaderID != "" && v.LeaderID != c.view.LeaderID {
			failover = time.Since(killed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	acked := l.stop(leader)
	t.Logf("kill -9 of the leader under load: new leader after %v; %d uploads acknowledged (%d before the kill), %d failed attempts (each retried until acknowledged)",
		failover.Round(time.Millisecond), acked, before, l.failures.Load())
	if acked <= before {
		t.Fatalf("no upload was acknowledged after the kill (%d before, %d in all)", before, acked)
	}
}

// TestRollingRestartUnderLoad: the three origins are restarted one at a
// time (drained from the writers and readers first, as a load balancer
// does, then stopped with SIGTERM and started again on their data) while
// uploads and downloads go on. No download fails, no acknowledged upload
// is lost, and every origin holds every upload at the end.
func TestRollingRestartUnderLoad(t *testing.T) {
	c := startCluster(t)
	l := startLoad(t, c, true)
	time.Sleep(time.Second)
	for i := range c.procs {
		l.down[i].Store(true)
		time.Sleep(300 * time.Millisecond) // requests in flight there finish
		c.procs[i].stop(t)
		c.procs[i] = c.nodes[i].start(t)
		waitFor(t, 30*time.Second, fmt.Sprintf("origin %d back as a healthy voter", i), func() bool {
			v, ok := viewOf(t, c.procs[i].url, c.tok)
			healthy := 0
			for _, m := range v.Members {
				if m.Healthy && (m.Role == "leader" || m.Role == "follower") {
					healthy++
				}
			}
			return ok && healthy == 3 && v.LeaderID != ""
		})
		l.down[i].Store(false)
		time.Sleep(time.Second)
	}
	acked := l.stop()
	t.Logf("rolling restart under load: %d uploads acknowledged, %d failed attempts (retried), %d downloads, %d failed",
		acked, l.failures.Load(), l.reads.Load(), len(l.badReads))
	if len(l.badReads) > 0 {
		t.Fatalf("downloads failed during the rolling restart: %v", l.badReads[:min(len(l.badReads), 10)])
	}
}
