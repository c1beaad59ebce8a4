package httpx

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// failing is a format whose one route fails with an internal error.
type failing struct{}

func (failing) Name() string   { return "failing" }
func (failing) Prefix() string { return "/f" }
func (failing) Routes() []format.Route {
	return []format.Route{{Method: http.MethodGet, Path: "/x",
		Read: func(context.Context, *format.Request) (*format.Response, error) {
			return nil, errors.New("open /secret/path: disk on fire")
		}}}
}
func (failing) Error(_ *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, "", format.PlainText)
}

type noMeta struct{}

// testServer serves f with no one signed in.
func testServer(f format.Format, w *format.Writer) *format.Server {
	return format.NewServer(f, &format.Env{}, w, &auth.Authenticator{Meta: noMeta{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func (noMeta) View(func(*meta.Tx) error) error { return nil }

// TestFormatInternalError: a handler's internal error reaches the client
// as a 500 that names the request id and nothing of the cause.
func TestFormatInternalError(t *testing.T) {
	h := NewFormatHandler(testServer(failing{}, nil), "/f", nil)
	srv := httptest.NewServer(Observe(h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, func(*http.Request) string { return "f" }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/f/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 500 || id == "" || !strings.Contains(string(body), id) || strings.Contains(string(body), "secret") {
		t.Fatalf("status %d, request id %q, body %q", resp.StatusCode, id, body)
	}
}
