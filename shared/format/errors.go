package format

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/ratelimit"
)

// Error is a client-facing failure of a format route: the REST API's
// error (one registry of codes, apierr), which each format renders in its
// client's native shape.
type Error = apierr.Error

// Errorf builds an Error with a code of the registry.
func Errorf(code apierr.Code, format string, args ...any) *Error {
	return apierr.New(code, format, args...)
}

// RepoNotFoundError is a repository that does not exist, or that the
// caller may not see (the two are indistinguishable on purpose). Formats
// whose clients have a code of their own for it (docker's NAME_UNKNOWN)
// render it so. A repository the caller may see, of another format than
// the path's, is not found there either, but the error says what it is
// and where it is served (Format and URL).
type RepoNotFoundError struct {
	Name string
	// Wanted are the formats the path serves; Format and URL are the
	// repository's own (set only for a caller who may read it).
	Wanted      []string
	Format, URL string
}

func (e *RepoNotFoundError) Error() string {
	if e.Format == "" {
		return "repository " + e.Name + " not found"
	}
	msg := "repository " + e.Name + " is a " + e.Format + " repository, not " + strings.Join(e.Wanted, " or ")
	if e.URL != "" {
		msg += ": it is served at " + e.URL
	}
	return msg
}

// NotServedError is a request no route of the format serves: 405 when
// the path is served under other methods (or only on nodes that take
// writes), else 404. Formats whose clients have a code for it (docker's
// UNSUPPORTED) render it so.
type NotServedError struct {
	Method, Path string
	PathServed   bool
}

func (e *NotServedError) Error() string { return e.Method + " " + e.Path + " is not served" }

// ErrClientGone is what a transport reports (Request.Interrupted) when the
// client went away before it could be answered.
var ErrClientGone = errors.New("the client went away")

// ErrUpstream is what a read handler returns, on a node that holds no
// writes (an edge), for a request only an origin can answer: a registry
// token that grants pushes (the pushes go to an origin, which must accept
// the token). Serve answers it with a Response marked Upstream, which the
// edge's transport forwards.
var ErrUpstream = errors.New("only an origin can answer this request")

// ErrSlowBody is what reading a request body returns when the client sent
// it slower than the minimum transfer rate or past its deadline.
var ErrSlowBody = errors.New("the request body arrived too slowly")

// NotFound is a missing thing.
func NotFound(format string, args ...any) *Error { return Errorf(apierr.NotFound, format, args...) }

// BadRequest is a malformed request.
func BadRequest(format string, args ...any) *Error { return Errorf(apierr.BadRequest, format, args...) }

// Conflict is a clash with stored state.
func Conflict(format string, args ...any) *Error { return Errorf(apierr.Conflict, format, args...) }

// Unauthorized asks for credentials.
func Unauthorized() *Error { return Errorf(apierr.Unauthorized, "authentication required") }

// Forbidden refuses an authenticated caller.
func Forbidden(format string, args ...any) *Error { return Errorf(apierr.Forbidden, format, args...) }

// InsufficientStorage refuses an upload the node has no room for (507):
// the disk is full, or free space is below the configured minimum.
func InsufficientStorage() *Error {
	return Errorf(apierr.InsufficientStorage, "not enough free storage on this node for the upload; retry later")
}

// Domain maps the errors of the layers below (the metadata store, the
// blob store, authentication, the commit path) to client errors: the one
// place this is decided, for the REST API and every format. It returns
// nil for an error it does not know, which is an internal error.
func Domain(err error) *Error {
	var rnf *RepoNotFoundError
	var throttled *auth.ThrottledError
	var ns *NotServedError
	switch {
	case errors.As(err, &rnf):
		return NotFound("%s", rnf.Error())
	case errors.As(err, &ns) && ns.PathServed:
		return Errorf(apierr.MethodNotAllowed, "%s", ns.Error())
	case errors.As(err, &ns):
		return NotFound("%s", ns.Error())
	case errors.Is(err, meta.ErrNotFound):
		return NotFound("%s not found", clientText(err, meta.ErrNotFound))
	case errors.Is(err, meta.ErrConflict):
		return Conflict("%s", clientText(err, meta.ErrConflict))
	case errors.Is(err, meta.ErrInvalid):
		return Errorf(apierr.ValidationFailed, "%s", clientText(err, meta.ErrInvalid))
	case errors.Is(err, meta.ErrNoLeader):
		return Errorf(apierr.Unavailable, "the cluster has no leader right now (an election, or this node is cut off from the others); nothing was written; retry").With(apierr.RetryAfter, 2)
	case errors.Is(err, meta.ErrUpgrading):
		return Errorf(apierr.Unavailable, "%s", meta.ErrUpgrading.Error()).With(apierr.RetryAfter, 30)
	case errors.Is(err, meta.ErrUnknownOutcome):
		return Errorf(apierr.Unavailable, "the leader went away before it answered: the write may or may not have been committed; check, then retry").With(apierr.RetryAfter, 2)
	case errors.Is(err, meta.ErrCompacted):
		return Errorf(apierr.ResyncRequired, "the change feed no longer reaches back to that index; read it again from 0")
	case errors.Is(err, meta.ErrStale):
		// Decide gave up: others kept changing what this write was
		// decided from. Nothing was written; the client may retry.
		return Errorf(apierr.Unavailable, "what this write depends on changed too often while it was being decided; retry").With(apierr.RetryAfter, 1)
	case errors.Is(err, blob.ErrNotFound):
		return NotFound("artifact content not found")
	case errors.Is(err, blob.ErrTooLarge):
		return Errorf(apierr.PayloadTooLarge, "upload exceeds the size limit")
	case errors.Is(err, blob.ErrDigestMismatch):
		return BadRequest("checksum does not match the uploaded bytes")
	case errors.Is(err, blob.ErrInvalidDigest):
		return BadRequest("invalid digest")
	case errors.Is(err, blob.ErrNoSpace):
		return InsufficientStorage()
	case errors.Is(err, blob.ErrUnreplicated):
		return Errorf(apierr.Unavailable, "the upload could not be copied to enough origins of the cluster; nothing was written; retry").With(apierr.RetryAfter, 5)
	case errors.Is(err, ErrSlowBody):
		return Errorf(apierr.RequestTimeout, "%s", ErrSlowBody.Error())
	case errors.Is(err, auth.ErrBadCredentials):
		return Errorf(apierr.Unauthorized, "invalid credentials")
	case errors.As(err, &throttled):
		return Errorf(apierr.RateLimited, "%s", throttled.Error()).With(apierr.RetryAfter, ratelimit.Seconds(throttled.RetryAfter))
	case errors.Is(err, auth.ErrBusy):
		return Errorf(apierr.Unavailable, "the server is busy verifying passwords; retry shortly").With(apierr.RetryAfter, 1)
	case errors.Is(err, auth.ErrUnverifiable):
		return Errorf(apierr.Unavailable, "no origin can be reached to verify this token; retry later, or use an API token, which this node verifies itself").With(apierr.RetryAfter, 5)
	case errors.Is(err, auth.ErrDirectoryUnavailable):
		return Errorf(apierr.Unavailable, "the directory (LDAP) cannot check this password now; retry later, or use an API token, which does not need it").With(apierr.RetryAfter, 5)
	case errors.Is(err, auth.ErrPasswordUnverifiable):
		return Errorf(apierr.Unavailable, "this edge node cannot check passwords while no origin answers (it holds none); use an API token, which it checks itself, or retry later").With(apierr.RetryAfter, 5)
	case errors.Is(err, context.DeadlineExceeded):
		return Errorf(apierr.Unavailable, "the cluster did not answer in time; retry").With(apierr.RetryAfter, 1)
	}
	return nil
}

// Classify maps any handler error to an Error. Unknown errors become
// INTERNAL with a message that says nothing about the cause (the
// transport logs it).
func Classify(err error) *Error {
	if e := apierr.As(err, Domain); e != nil {
		return e
	}
	return Errorf(apierr.Internal, "internal error")
}

// clientText is the message a store wrapped around its sentinel (see
// meta.NotFoundf): what the client is told, without the sentinel's own
// words or the context added by layers above.
func clientText(err, sentinel error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) == sentinel {
			return strings.TrimPrefix(e.Error(), sentinel.Error()+": ")
		}
	}
	return err.Error()
}

// ErrorResponse renders err for a format: the status and code from
// Classify, challenge as WWW-Authenticate on a 401, Retry-After when the
// error says when to retry, and the body render returns in the client's
// native shape.
func ErrorResponse(err error, challenge string, render func(*Error) (contentType string, body []byte)) *Response {
	e := Classify(err)
	resp := NewResponse(e.Status())
	if e.Status() == http.StatusUnauthorized && challenge != "" {
		resp.Header.Set("WWW-Authenticate", challenge)
	}
	if secs, ok := e.RetryAfterSeconds(); ok {
		resp.Header.Set("Retry-After", strconv.Itoa(secs))
	}
	ct, body := render(e)
	resp.Header.Set("Content-Type", ct)
	resp.Body = body
	resp.Reason = ReasonPhrase(e.Reason())
	return resp
}

// BasicChallenge is the WWW-Authenticate value of formats whose clients
// authenticate with HTTP Basic.
const BasicChallenge = `Basic realm="Depot"`

// PlainText renders an error as a line of text (maven, pypi: their
// clients show the body as it is).
func PlainText(e *Error) (string, []byte) {
	return "text/plain; charset=utf-8", []byte(e.Message + "\n")
}
