package api_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/diskspace"
)

// Storage faults: a full disk, a nearly full one, a client that goes away
// mid-upload, and what health says about them.

// fakeDisk is the origin's statfs in these tests: free space is what the
// test sets.
type fakeDisk struct{ free atomic.Uint64 }

func (d *fakeDisk) stat(string) (diskspace.Usage, error) {
	return diskspace.Usage{Free: d.free.Load(), Total: 100 << 30}, nil
}

const testMinFree = 1 << 30

// getHealth calls GET /health and returns its status code and body.
func getHealth(e *origintest.Env, cred string) (int, map[string]any) {
	e.T.Helper()
	r := e.Do("GET", "/api/v1/health", cred, nil)
	return r.Status, r.Map()
}

func wantReasons(t *testing.T, body map[string]any, want ...string) {
	t.Helper()
	var got []string
	list, _ := body["reasons"].([]any)
	for _, r := range list {
		s, _ := r.(string)
		got = append(got, s)
	}
	if body["status"] != "degraded" || !slices.Equal(got, want) {
		t.Fatalf("health %v, want degraded with reasons %v", body, want)
	}
}

// tempFiles lists the blob store's in-progress uploads.
func tempFiles(t *testing.T, e *origintest.Env) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.DataDir, "blobs", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	return names
}

func ociDigest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestDiskFull: a blob write that hits ENOSPC answers 507 in each format's
// own error shape (it was a 500), records no artifact, leaves no temp
// file, and health says degraded until the failure is old news.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	disk := blobtest.NewDiskFull(64 << 10)
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.BlobWriter = disk.Wrap }})
	repoID := e.CreateRepo("full", "generic", false)
	e.CreateRepo("mvn", "maven", false)
	e.CreateRepo("img", "docker", false)
	big := bytes.Repeat([]byte("x"), 1<<20)

	e.Do("PUT", "/generic/full/tool/1.0/tool.bin", e.Admin, big).WantError(507, "INSUFFICIENT_STORAGE")
	e.Do("GET", "/generic/full/tool/1.0/tool.bin", e.Admin, nil).Want(404)
	wantArtifactCount(t, e, repoID, 0)

	r := e.Do("PUT", "/maven2/mvn/com/example/x/1.0/x-1.0.jar", e.Admin, big).Want(507)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") || !strings.Contains(string(r.Body), "storage") {
		t.Fatalf("maven answered %q (%s)", r.Body, r.Header.Get("Content-Type"))
	}
	r = e.Do("POST", "/v2/img/app/blobs/uploads/?digest="+ociDigest(big), basic("admin", origintest.AdminPassword), big).Want(507)
	if !strings.Contains(string(r.Body), `"errors"`) {
		t.Fatalf("OCI answered %s", r.Body)
	}
	if names := tempFiles(t, e); len(names) != 0 {
		t.Fatalf("temp files left behind: %v", names)
	}

	code, body := getHealth(e, "")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("health answered %d after ENOSPC", code)
	}
	wantReasons(t, body, diskspace.ReasonWriteFailed)
	if _, ok := body["storage"]; ok {
		t.Fatalf("anonymous health shows node details: %v", body)
	}

	// With room again uploads work, and the failure ages out of health.
	disk.SetRoom(1 << 30)
	put(e, e.Admin, "full/tool/1.0/tool.bin", string(big))
	e.Clock.Advance(5 * time.Minute)
	if code, body := getHealth(e, ""); code != 200 || body["status"] != "ok" {
		t.Fatalf("health %d %v five minutes later", code, body)
	}
}

// TestFreeSpaceGuard: below --min-free-bytes uploads are refused with 507
// before their body is read, on every format and on OCI upload sessions,
// while downloads keep working and health says degraded.
func TestFreeSpaceGuard(t *testing.T) {
	t.Parallel()
	disk := &fakeDisk{}
	disk.free.Store(10 << 30)
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.Statfs, c.MinFreeBytes = disk.stat, testMinFree
	}})
	repoID := e.CreateRepo("bin", "generic", false)
	e.CreateRepo("img", "docker", false)
	ociAuth := basic("admin", origintest.AdminPassword)
	put(e, e.Admin, "bin/tool/1.0/a.txt", "stored before the disk filled up")
	session := e.Do("POST", "/v2/img/app/blobs/uploads/", ociAuth, nil).Want(202)

	// An upload declaring more than the room above the minimum is refused
	// at once: the server answers without waiting for the body.
	disk.free.Store(testMinFree + 100<<10)
	e.Clock.Advance(time.Second) // past the statfs cache
	if status := declareOnly(t, e, "/generic/bin/tool/1.0/big.bin", 1<<20); status != 507 {
		t.Fatalf("declared 1 MiB with 100 KiB of room: status %d, want 507", status)
	}
	put(e, e.Admin, "bin/tool/1.0/small.txt", "fits in the room")

	// Below the minimum every upload is refused.
	disk.free.Store(testMinFree - 1)
	e.Clock.Advance(time.Second)
	e.Do("PUT", "/generic/bin/tool/1.0/b.txt", e.Admin, "one byte is too many").WantError(507, "INSUFFICIENT_STORAGE")
	e.Do("PATCH", locPath(t, e, session.Header.Get("Location")), ociAuth, "chunk").Want(507)
	wantArtifactCount(t, e, repoID, 2)

	// Reads keep working.
	if g := e.Do("GET", "/generic/bin/tool/1.0/a.txt", e.Admin, nil).Want(200); string(g.Body) != "stored before the disk filled up" {
		t.Fatalf("download answered %q", g.Body)
	}
	code, body := getHealth(e, "")
	if code != http.StatusServiceUnavailable || len(body) != 2 {
		t.Fatalf("anonymous health %d %v, want 503 with status and reasons only", code, body)
	}
	wantReasons(t, body, diskspace.ReasonLow)
	code, body = getHealth(e, e.Admin)
	storage, _ := body["storage"].(map[string]any)
	if code != 503 || body["node_id"] == nil || storage["min_free_bytes"] != float64(testMinFree) || storage["free_bytes"] != float64(testMinFree-1) {
		t.Fatalf("admin health %d %v", code, body)
	}

	// Freed space lets uploads in again.
	disk.free.Store(10 << 30)
	e.Clock.Advance(time.Second)
	put(e, e.Admin, "bin/tool/1.0/b.txt", "after cleanup")
	if code, _ := getHealth(e, ""); code != 200 {
		t.Fatalf("health %d after space was freed", code)
	}
}

// locPath turns an absolute Location into a request path.
func locPath(t *testing.T, e *origintest.Env, loc string) string {
	t.Helper()
	p, ok := strings.CutPrefix(loc, e.URL)
	if !ok {
		t.Fatalf("Location %q is not on this server", loc)
	}
	return p
}

// declareOnly sends an upload's headers declaring n bytes and no body,
// and returns the status of the answer; a server that waited for the body
// would run into the read deadline instead.
func declareOnly(t *testing.T, e *origintest.Env, p string, n int) int {
	t.Helper()
	conn, err := net.Dial("tcp", e.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: depot\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", p, e.Admin, n)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// logLines is the origin's log, with a signal for each line written.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.lines <- string(p):
	default:
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestClientAbortIs499: a client that goes away mid-upload is neither
// an error in the log nor a 500 in the metrics, but a 499 (it was logged
// as ERROR and counted as a 500).
func TestClientAbortIs499(t *testing.T) {
	t.Parallel()
	logs := &logLines{lines: make(chan string, 1000)}
	e := origintest.Start(t, origintest.Options{Log: logs})
	repoID := e.CreateRepo("bin", "generic", false)

	conn, err := net.Dial("tcp", e.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /generic/bin/tool/1.0/gone.bin HTTP/1.1\r\nHost: depot\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", e.Admin, 1<<20)
	if _, err := conn.Write(bytes.Repeat([]byte("x"), 64<<10)); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// The access log line is written once the request is accounted.
	deadline := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case l := <-logs.lines:
			done = strings.Contains(l, "msg=request") && strings.Contains(l, "gone.bin")
		case <-deadline:
			t.Fatalf("the aborted upload was never logged:\n%s", logs)
		}
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") {
		t.Fatalf("a client abort was logged as an error:\n%s", out)
	}
	if !strings.Contains(out, "status=499") {
		t.Fatalf("the aborted upload was not logged with status 499:\n%s", out)
	}
	metrics := string(e.Do("GET", "/metrics", "", nil).Want(200).Body)
	if !strings.Contains(metrics, `depot_http_requests_total{area="generic",code="499",method="PUT"} 1`) ||
		strings.Contains(metrics, `code="500"`) {
		t.Fatalf("metrics do not count the abort as one 499:\n%s", metrics)
	}
	wantArtifactCount(t, e, repoID, 0)
	if names := tempFiles(t, e); len(names) != 0 {
		t.Fatalf("temp files left behind: %v", names)
	}
}
