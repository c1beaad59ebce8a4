package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
)

// TestWriteErrNoSpace: a full disk reaching the API, as a blob sentinel
// or as a format's 507, answers 507 INSUFFICIENT_STORAGE (it was a 500).
func TestWriteErrNoSpace(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	full := blob.NoSpace(&os.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC})
	for _, err := range []error{fmt.Errorf("storing: %w", full), format.InsufficientStorage()} {
		rec := httptest.NewRecorder()
		s.writeErr(rec, httptest.NewRequest("POST", Prefix+"/repositories", nil), err)
		var body struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusInsufficientStorage || body.Error.Code != "INSUFFICIENT_STORAGE" || strings.Contains(body.Error.Message, "raft.db") {
			t.Errorf("%v answered %d %s", err, rec.Code, rec.Body)
		}
	}
}

// TestWriteErrClientGone: an error met after the client went away is not
// logged as an error nor answered; the request is aborted as a 499.
func TestWriteErrClientGone(t *testing.T) {
	var log bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&log, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", Prefix+"/repositories", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	sw := &httpx.StatusWriter{ResponseWriter: rec}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
		if sw.Status != httpx.StatusClientClosed || rec.Body.Len() != 0 || log.Len() != 0 {
			t.Fatalf("status %d, body %q, log %q", sw.Status, rec.Body, log.String())
		}
	}()
	s.writeErr(sw, r, fmt.Errorf("listing: %w", context.Canceled))
	t.Fatal("writeErr answered a client that is gone")
}
