package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/cache"
	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/formattest"
)

// edge serves the generic format's reads over e's store, with a cache
// that fetches from e's blob store through fetch.
func edge(t testing.TB, e *formattest.Env, fetch cache.Fetcher) *server.Server {
	t.Helper()
	c, err := cache.Open(t.TempDir(), 0, fetch)
	if err != nil {
		t.Fatal(err)
	}
	authn := &auth.Authenticator{Meta: e.Store, Now: time.Now, Hasher: auth.NewHasher(1), JWT: auth.NewJWT(auth.RandomSecret(), time.Now)}
	env := &format.Env{Meta: e.Store, Now: time.Now, Tokens: authn}
	f := generic.New(env)
	srv := format.NewServer(f, env, nil, authn, slog.New(slog.DiscardHandler))
	return &server.Server{Mounts: []server.Mount{{Prefix: f.Prefix(), Server: srv}}, Cache: c,
		Other: func(ctx *fasthttp.RequestCtx) { server.NotServed(ctx, "not here") }}
}

type answer struct {
	status int
	body   []byte
}

func (a answer) StatusCode() int { return a.status }
func (a answer) Body() []byte    { return a.body }

func do(s *server.Server, token, method, path string) answer {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.Set("Authorization", "Basic "+authHeader("admin", token))
	s.Handle(&ctx)
	var body bytes.Buffer
	_ = ctx.Response.BodyWriteTo(&body) // a stream, too
	if c, ok := ctx.Response.BodyStream().(io.Closer); ok {
		c.Close()
	}
	return answer{ctx.Response.StatusCode(), body.Bytes()}
}

func authHeader(u, p string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(u, p)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestStreamsAMiss: a blob not cached yet is fetched and streamed whole;
// one the origin cannot give is answered in the format's shape, not as a
// broken response.
func TestStreamsAMiss(t *testing.T) {
	e := formattest.New(t)
	e.Repo("files", generic.Name)
	node := e.Node(func(env *format.Env) []format.Format { return []format.Format{generic.New(env)} })
	data := bytes.Repeat([]byte("streamed "), 10000)
	if code, out := e.Do("PUT", node.URL+"/generic/files/tool/1.0/tool.bin", "application/octet-stream", data); code != http.StatusCreated {
		t.Fatalf("upload: %d %s", code, out)
	}
	fetches := 0
	s := edge(t, e, func(ctx context.Context, d string, _ int64) (io.ReadCloser, error) {
		fetches++
		f, err := e.Blobs.Open(ctx, d)
		if err != nil {
			return nil, err
		}
		return f, nil
	})
	resp := do(s, e.Token, "GET", "/generic/files/tool/1.0/tool.bin")
	if resp.StatusCode() != 200 || !bytes.Equal(resp.Body(), data) || fetches != 1 {
		t.Fatalf("a miss: %d, %d bytes, %d fetches", resp.StatusCode(), len(resp.Body()), fetches)
	}

	// The origin cannot give it: a 404 in the format's error shape.
	broken := edge(t, e, func(context.Context, string, int64) (io.ReadCloser, error) {
		return nil, fmt.Errorf("origin: %w", blob.ErrNotFound)
	})
	resp = do(broken, e.Token, "GET", "/generic/files/tool/1.0/tool.bin")
	if resp.StatusCode() != 404 || !bytes.Contains(resp.Body(), []byte(`"error"`)) {
		t.Fatalf("a blob the origin lacks: %d %s", resp.StatusCode(), resp.Body())
	}
	// Writes are not served here: 405 in the format's shape.
	if resp := do(s, e.Token, "PUT", "/generic/files/tool/2.0/tool.bin"); resp.StatusCode() != 405 {
		t.Fatalf("a write at the edge: %d %s", resp.StatusCode(), resp.Body())
	}
	if resp := do(s, e.Token, "GET", "/api/v1/users"); resp.StatusCode() != 404 {
		t.Fatalf("another path: %d", resp.StatusCode())
	}
}
