package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// origin answers by path: /early before reading the body, /part after
// reading 1 KiB of it, /all after reading all of it (its size in the
// answer), /cut after reading 1 KiB by closing the connection.
func origin(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/early":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(413)
			io.WriteString(w, `{"error":"too large"}`)
		case "/part":
			io.CopyN(io.Discard, r.Body, 1024)
			w.WriteHeader(400)
			io.WriteString(w, "exists")
		case "/all":
			n, _ := io.Copy(io.Discard, r.Body)
			w.WriteHeader(201)
			fmt.Fprint(w, n)
		case "/cut":
			io.CopyN(io.Discard, r.Body, 1024)
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// answers are what origin answers each path through the edge (/cut: the
// edge's 502, the origin having hung up).
var answers = map[string]int{"/early": 413, "/part": 400, "/all": 201, "/cut": 502}

// edgeServer forwards everything to o, configured as the edge is (bodies
// streamed), and answers 502 when forwarding fails.
func edgeServer(t testing.TB, o string) string {
	t.Helper()
	u := &Upstream{Origins: func() []string { return []string{o} }, HTTP: &http.Client{}}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if _, err := u.Forward(ctx); err != nil {
				ctx.Response.Reset()
				ctx.SetStatusCode(502)
			}
		},
		ReadTimeout: 10 * time.Second, StreamRequestBody: true, MaxRequestBodySize: 1 << 40,
		DisablePreParseMultipartForm: true,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// TestEarlyAnswerRelayed: an origin that answers before it has read an
// 8 MiB body (an anonymous login the origin refuses with 413) has its
// answer relayed whole, again and again on one connection, and the edge
// lives on. The edge used to panic ("reading released body stream").
func TestEarlyAnswerRelayed(t *testing.T) {
	o := origin(t)
	e := edgeServer(t, o.URL)
	body := bytes.Repeat([]byte("x"), 8<<20)
	for _, path := range []string{"/early", "/part"} {
		for i := range 10 {
			resp, err := http.Post(e+path, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s #%d: %v", path, i, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := map[string]string{"/early": `413 {"error":"too large"}`, "/part": "400 exists"}[path]
			if s := fmt.Sprintf("%d %s", resp.StatusCode, got); s != want {
				t.Fatalf("%s #%d: %s, want %s", path, i, s, want)
			}
		}
	}
	// Chunked, as a client that does not know the length sends it.
	resp, err := http.Post(e+"/early", "application/octet-stream", io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked: %d", resp.StatusCode)
	}
	resp, err = http.Post(e+"/all", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(got) != strconv.Itoa(len(body)) {
		t.Fatalf("a whole body after early answers: %d %s", resp.StatusCode, got)
	}
}

// TestEarlyAnswerSlowClient: a client that stops sending in the middle of
// its body gets the origin's early answer once the edge gives up waiting
// for the rest, and the connection is closed.
func TestEarlyAnswerSlowClient(t *testing.T) {
	defer func(i time.Duration) { discardIdle = i }(discardIdle)
	discardIdle = 300 * time.Millisecond
	o := origin(t)
	e := edgeServer(t, o.URL)
	c, err := net.Dial("tcp", strings.TrimPrefix(e, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 1<<20)
	c.Write(bytes.Repeat([]byte("y"), 64<<10))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !resp.Close || string(got) != `{"error":"too large"}` {
		t.Fatalf("%d close=%v %s", resp.StatusCode, resp.Close, got)
	}
}

// FuzzForward sends bodies of any size and shape through the edge to an
// origin that answers early, late or not at all, from clients that send
// all, stop or go away; the edge must answer what it can and never fall
// over (a panic in a server goroutine ends the test binary).
func FuzzForward(f *testing.F) {
	for _, path := range []uint8{0, 1, 2, 3} {
		for _, size := range []uint32{0, 1, 1 << 10, 300 << 10, 4 << 20} {
			for _, cut := range []uint32{0, 1, 5000, 1 << 20} {
				f.Add(path, size, cut, size%2 == 0)
			}
		}
	}
	o := origin(f)
	e := edgeServer(f, o.URL)
	addr := strings.TrimPrefix(e, "http://")
	f.Fuzz(func(t *testing.T, path uint8, size, cut uint32, chunked bool) {
		size %= 8 << 20
		p := []string{"/early", "/part", "/all", "/cut"}[path%4]
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var head bytes.Buffer
		fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: x\r\n", p)
		if chunked {
			head.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		} else {
			fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", size)
		}
		c.Write(head.Bytes())
		send := size
		if cut > 0 && cut < size {
			send = cut // then the client goes away
		}
		w := bufio.NewWriter(c)
		chunk := bytes.Repeat([]byte("z"), 32<<10)
		for left := send; left > 0; {
			n := min(left, uint32(len(chunk)))
			if chunked {
				fmt.Fprintf(w, "%x\r\n", n)
			}
			if _, err := w.Write(chunk[:n]); err != nil {
				break
			}
			if chunked {
				w.WriteString("\r\n")
			}
			left -= n
		}
		if send == size && chunked {
			w.WriteString("0\r\n\r\n")
		}
		w.Flush()
		if send < size {
			c.Close()
			return
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s size %d chunked %v: no answer: %v", p, size, chunked, err)
		}
		io.Copy(io.Discard, resp.Body)
		if want := answers[p]; resp.StatusCode != want {
			t.Fatalf("%s size %d chunked %v: %d, want %d", p, size, chunked, resp.StatusCode, want)
		}
	})
}

// TestForwardConcurrent: many clients at once, early answers and whole
// bodies mixed, on shared keep-alive connections.
func TestForwardConcurrent(t *testing.T) {
	o := origin(t)
	e := edgeServer(t, o.URL)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				path := []string{"/early", "/all", "/part"}[(g+i)%3]
				size := (g*7919 + i*104729) % (2 << 20)
				resp, err := http.Post(e+path, "application/octet-stream", bytes.NewReader(make([]byte, size)))
				if err != nil {
					errs <- fmt.Errorf("%s %d: %w", path, size, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if want := answers[path]; resp.StatusCode != want {
					errs <- fmt.Errorf("%s %d: %d, want %d", path, size, resp.StatusCode, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
