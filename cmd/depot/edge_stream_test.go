package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEdgeStreamsLargeUploads: a 256 MiB upload through an edge, as a
// plain PUT and as a multipart form (twine's shape), goes to the origin
// as it arrives: the edge's peak memory stays far below the body's size.
func TestEdgeStreamsLargeUploads(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	const size = 256 << 20
	zeros := func() io.Reader { return io.LimitReader(zeroReader{}, size) }

	req, _ := http.NewRequest("PUT", es.e.url+"/generic/files/big/1.0/big.bin", zeros())
	req.ContentLength = size
	req.Header.Set("Authorization", es.basic)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("a 256 MiB PUT through the edge: %d %s", resp.StatusCode, body)
	}

	// A multipart form of known length (twine's shape), which fasthttp
	// would parse into memory and temporary files by default: a write
	// route, so it goes on to the origin (which keeps it as the file).
	head := "--b0undary\r\nContent-Disposition: form-data; name=\"content\"; filename=\"big.tar.gz\"\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--b0undary--\r\n"
	req, _ = http.NewRequest("PUT", es.e.url+"/generic/files/big/2.0/big.tar.gz", io.MultiReader(strings.NewReader(head), zeros(), strings.NewReader(tail)))
	req.ContentLength = int64(len(head)) + size + int64(len(tail))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b0undary")
	req.Header.Set("Authorization", es.basic)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("a 256 MiB multipart PUT through the edge: %d %s", resp.StatusCode, body)
	}

	peak := peakRSS(t, es.e.cmd.Process.Pid)
	t.Logf("the edge's peak memory after 2 x 256 MiB through it: %d MiB", peak>>20)
	if peak > 128<<20 {
		t.Fatalf("the edge's peak memory is %d MiB: the bodies were held", peak>>20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// peakRSS is a process's VmHWM in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestEdgeClosesSlowHeaders: a connection that dribbles its request's
// headers is closed after --header-timeout; one that sends them is served.
func TestEdgeClosesSlowHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	es := startEdgeSite(t, "files", "generic")
	es.e.stop(t)
	p := edgeProc(t, es.bin, es.o.url, es.node.ID, es.node.Token, es.listen, es.cacheDir, "--header-timeout", "500ms")
	conn, err := net.Dial("tcp", es.listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")) // and no end of headers
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	n, err := conn.Read(make([]byte, 1024))
	if err == nil && n > 0 {
		// fasthttp may answer 408 before closing: then the next read ends.
		_, err = conn.Read(make([]byte, 1024))
	}
	if !errors.Is(err, io.EOF) || time.Since(start) > 3*time.Second {
		t.Fatalf("a connection with unfinished headers: %v after %v, want closed after about 500ms", err, time.Since(start))
	}
	call(t, "GET", p.url+"/api/v1/health", "", nil, 200)
}

// TestEdgeRelaysEarlyAnswers: the origin refuses an anonymous 8 MiB
// sign-in (413) before reading it; through the edge the client gets that
// answer, every time, and the edge lives on (it used to exit with a panic
// on the first such request).
func TestEdgeRelaysEarlyAnswers(t *testing.T) {
	es := startEdgeSite(t, "files", "generic")
	big := `{"username":"` + strings.Repeat("x", 8<<20) + `"}`
	for i := range 10 {
		resp, err := http.Post(es.e.url+"/api/v1/auth/login", "application/json", strings.NewReader(big))
		if err != nil {
			t.Fatalf("#%d: %v\n%s", i, err, es.e.out.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(body), "error") {
			t.Fatalf("#%d: %d %s", i, resp.StatusCode, body)
		}
	}
	// An upload without credentials: the origin answers 401 before
	// reading the body.
	put := func(auth string) int {
		req, _ := http.NewRequest("PUT", es.e.url+"/generic/files/app/1.0/app.bin", strings.NewReader(big))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, es.e.out.String())
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 5 {
		if code := put(""); code != 401 {
			t.Fatalf("anonymous upload #%d: %d", i, code)
		}
	}
	if code := put(es.basic); code != 201 {
		t.Fatalf("an upload after them: %d", code)
	}
	if strings.Contains(es.e.out.String(), "panic") {
		t.Fatalf("the edge panicked:\n%s", es.e.out.String())
	}
	resp, err := http.Get(es.e.url + "/api/v1/health")
	if err != nil {
		t.Fatalf("the edge is gone: %v", err)
	}
	resp.Body.Close()
}
