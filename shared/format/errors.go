package format

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Error is a client-facing failure of a format route; each format renders
// it in its native shape.
type Error struct {
	Status  int
	Code    string // upper-case code, e.g. NOT_FOUND
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// RepoNotFoundError is a repository that does not exist, or that the
// caller may not see (the two are indistinguishable on purpose). Formats
// whose clients have a code of their own for it (docker's NAME_UNKNOWN)
// render it so.
type RepoNotFoundError struct{ Name string }

func (e *RepoNotFoundError) Error() string { return "repository " + e.Name + " not found" }

// ErrClientGone is what a transport reports (Request.Interrupted) when the
// client went away before it could be answered.
var ErrClientGone = errors.New("the client went away")

// ErrSlowBody is what reading a request body returns when the client sent
// it slower than the minimum transfer rate or past its deadline.
var ErrSlowBody = errors.New("the request body arrived too slowly")

// Common errors.
func NotFound(format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, "NOT_FOUND", format, args...)
}

// BadRequest is a malformed request.
func BadRequest(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, "BAD_REQUEST", format, args...)
}

// Conflict is a clash with stored state.
func Conflict(format string, args ...any) *Error {
	return Errorf(http.StatusConflict, "CONFLICT", format, args...)
}

// Unauthorized asks for credentials.
func Unauthorized() *Error {
	return Errorf(http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
}

// Forbidden refuses an authenticated caller.
func Forbidden(format string, args ...any) *Error {
	return Errorf(http.StatusForbidden, "FORBIDDEN", format, args...)
}

// InsufficientStorage refuses an upload the node has no room for (507):
// the disk is full, or free space is below the configured minimum.
func InsufficientStorage() *Error {
	return Errorf(http.StatusInsufficientStorage, "INSUFFICIENT_STORAGE", "not enough free storage on this node for the upload; retry later")
}

// Classify maps any handler error to an Error. Unknown errors become a
// 500 whose message says nothing about the cause (the transport logs it).
func Classify(err error) *Error {
	var e *Error
	var rnf *RepoNotFoundError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &rnf):
		return NotFound("%s", rnf.Error())
	case errors.Is(err, meta.ErrNotFound):
		return NotFound("%s", trimSentinel(err))
	case errors.Is(err, meta.ErrConflict):
		return Conflict("%s", trimSentinel(err))
	case errors.Is(err, meta.ErrInvalid):
		return BadRequest("%s", trimSentinel(err))
	case errors.Is(err, meta.ErrStale):
		// Decide gave up: others kept changing what this write was
		// decided from. Nothing was written; the client may retry.
		return Errorf(http.StatusServiceUnavailable, "UNAVAILABLE", "the package changed too often while this write was being decided; retry")
	case errors.Is(err, blob.ErrTooLarge):
		return Errorf(http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "upload exceeds the size limit")
	case errors.Is(err, blob.ErrDigestMismatch):
		return BadRequest("checksum does not match the uploaded bytes")
	case errors.Is(err, blob.ErrInvalidDigest):
		return BadRequest("invalid digest")
	case errors.Is(err, blob.ErrNoSpace):
		return InsufficientStorage()
	case errors.Is(err, ErrSlowBody):
		return Errorf(http.StatusRequestTimeout, "REQUEST_TIMEOUT", "%s", ErrSlowBody.Error())
	}
	return Errorf(http.StatusInternalServerError, "INTERNAL", "internal error")
}

// trimSentinel drops the "not found: " style prefix of wrapped sentinels.
func trimSentinel(err error) string {
	msg := err.Error()
	for _, s := range []error{meta.ErrNotFound, meta.ErrConflict, meta.ErrInvalid} {
		p := s.Error() + ": "
		if len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// ErrorResponse renders err for a format: the status and code from
// Classify, challenge as WWW-Authenticate on a 401, and the body render
// returns in the client's native shape.
func ErrorResponse(err error, challenge string, render func(*Error) (contentType string, body []byte)) *Response {
	e := Classify(err)
	resp := NewResponse(e.Status)
	if e.Status == http.StatusUnauthorized && challenge != "" {
		resp.Header.Set("WWW-Authenticate", challenge)
	}
	ct, body := render(e)
	resp.Header.Set("Content-Type", ct)
	resp.Body = body
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
