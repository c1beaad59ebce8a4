package httpx

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/ratelimit"
)

// FormatHandler serves one format over net/http, under one of its
// prefixes.
type FormatHandler struct {
	Format format.Format
	Prefix string
	Authn  *auth.Authenticator
	Log    *slog.Logger
	// Writes false serves only Read routes (edges forward writes).
	Writes bool
	// OnWrite, when set, is told of every answered write (the audit log).
	OnWrite func(r *http.Request, p *auth.Principal, status int)
	routes  []format.Route
}

// NewFormatHandler mounts f under prefix (f.Prefix() or an alias).
func NewFormatHandler(f format.Format, prefix string, authn *auth.Authenticator, log *slog.Logger) *FormatHandler {
	return &FormatHandler{Format: f, Prefix: prefix, Authn: authn, Log: log, Writes: true, routes: f.Routes()}
}

func (h *FormatHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := &requestBody{r: r.Body, n: r.ContentLength}
	req := &format.Request{
		Method:        r.Method,
		Prefix:        h.Prefix,
		Path:          strings.TrimPrefix(r.URL.Path, h.Prefix),
		RawPath:       strings.TrimPrefix(r.URL.EscapedPath(), h.Prefix),
		Query:         r.URL.Query(),
		Header:        r.Header,
		Body:          body,
		ContentLength: r.ContentLength,
		BaseURL:       BaseURL(r),
		RemoteAddr:    ClientIP(r),
		RequestID:     RequestID(r.Context()),
	}
	route, params, pathOK := format.Match(h.routes, r.Method, req.Path)
	if route == nil || (!h.Writes && route.Op == format.Write) {
		code := http.StatusNotFound
		if pathOK {
			code = http.StatusMethodNotAllowed
		}
		h.write(w, r, h.Format.Error(req, format.Errorf(code, "UNSUPPORTED", "%s %s is not served", r.Method, r.URL.Path)))
		return
	}
	req.Params = params
	if route.Op == format.Write && h.OnWrite != nil {
		sw := &StatusWriter{ResponseWriter: w}
		w = sw
		defer func() { h.OnWrite(r, req.Principal, sw.Status) }()
	}
	p, err := h.Authn.Authenticate(r.Context(), r.Header.Get("Authorization"), req.RemoteAddr)
	if err == nil && !p.AcceptedOn(h.Format.Name()) {
		// A registry token serves only the format it was issued for.
		err = auth.ErrBadCredentials
	}
	if err != nil {
		h.write(w, r, h.authError(req, err))
		return
	}
	req.Principal = p
	resp, err := route.Handle(r.Context(), req)
	if err != nil {
		// A body cut for being too slow is our refusal (net/http cancels the
		// request's context all the same): it gets its 408.
		if TooSlow(r) {
			err = format.ErrSlowBody
		} else if body.broken || ClientGone(r, err) {
			// Whatever the handler made of it, nobody is there to answer.
			Abort(w)
		}
		// Formats render errors themselves (format.ErrorResponse); a 500's
		// cause is logged, and the client gets only the request id.
		switch format.Classify(err).Status {
		case http.StatusInternalServerError:
			h.Log.Error("format handler failed", "request_id", req.RequestID, "format", h.Format.Name(), "err", err)
			err = format.Errorf(http.StatusInternalServerError, "INTERNAL", "internal error; quote request id %s to the administrator", req.RequestID)
		case http.StatusInsufficientStorage:
			h.Log.Warn("upload refused: insufficient storage", "request_id", req.RequestID, "format", h.Format.Name(), "err", err)
		}
		h.write(w, r, h.Format.Error(req, err))
		return
	}
	h.write(w, r, resp)
}

// write sends a format response; files are streamed with Range,
// If-None-Match and HEAD handled by http.ServeContent.
func (h *FormatHandler) write(w http.ResponseWriter, r *http.Request, resp *format.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if resp.File != nil {
		defer resp.File.Close()
		http.ServeContent(w, r, resp.Name, resp.ModTime, resp.File)
		return
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	w.WriteHeader(status)
	if len(resp.Body) > 0 {
		_, _ = w.Write(resp.Body)
	}
}

// authError answers a failed credential check in the format's own shape:
// 401 with its challenge, or 429/503 with Retry-After when the check was
// throttled or the server is busy hashing.
func (h *FormatHandler) authError(req *format.Request, err error) *format.Response {
	var t *auth.ThrottledError
	switch {
	case errors.As(err, &t):
		resp := h.Format.Error(req, format.Errorf(http.StatusTooManyRequests, "TOO_MANY_REQUESTS", "%s", t.Error()))
		resp.Header.Set("Retry-After", strconv.Itoa(ratelimit.Seconds(t.RetryAfter)))
		return resp
	case errors.Is(err, auth.ErrBusy):
		resp := h.Format.Error(req, format.Errorf(http.StatusServiceUnavailable, "UNAVAILABLE", "the server is busy verifying passwords; retry shortly"))
		resp.Header.Set("Retry-After", "1")
		return resp
	}
	return h.Format.Error(req, format.Unauthorized())
}
