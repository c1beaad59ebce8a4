// Package apierr is the one registry of REST error codes: each code has a
// status, and every handler error is rendered as the spec's body
// {"error":{"code","message","details"}} here and nowhere else.
package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
)

// Code is a stable, machine-readable error code.
type Code string

// The registry. Append only: clients match on these strings.
const (
	BadRequest             Code = "BAD_REQUEST"
	ValidationFailed       Code = "VALIDATION_FAILED"
	Unauthorized           Code = "UNAUTHORIZED"
	Forbidden              Code = "FORBIDDEN"
	PasswordChangeRequired Code = "PASSWORD_CHANGE_REQUIRED"
	DemoMode               Code = "DEMO_MODE"
	NotFound               Code = "NOT_FOUND"
	MethodNotAllowed       Code = "METHOD_NOT_ALLOWED"
	Conflict               Code = "CONFLICT"
	PayloadTooLarge        Code = "PAYLOAD_TOO_LARGE"
	UnsupportedMediaType   Code = "UNSUPPORTED_MEDIA_TYPE"
	RateLimited            Code = "RATE_LIMITED"
	Internal               Code = "INTERNAL"
	Unavailable            Code = "UNAVAILABLE"
	RequestTimeout         Code = "REQUEST_TIMEOUT"
	InsufficientStorage    Code = "INSUFFICIENT_STORAGE"
	// ResyncRequired tells a change feed reader that it is further behind
	// than the deletions the origin remembers: read again from 0.
	ResyncRequired Code = "RESYNC_REQUIRED"
)

// codes describes each code once: its status and what it means, for the
// documentation generated from this registry (the OpenAPI document).
var codes = map[Code]struct {
	status      int
	description string
}{
	BadRequest:             {http.StatusBadRequest, "The request cannot be read: malformed JSON, a body where none belongs, a bad query parameter."},
	ValidationFailed:       {http.StatusBadRequest, "A field has a value the operation does not accept; details.field names it."},
	Unauthorized:           {http.StatusUnauthorized, "No credentials, or credentials that are not valid (unknown user, wrong password, expired or revoked token)."},
	Forbidden:              {http.StatusForbidden, "The caller is known but may not do this (role, grants or token scopes)."},
	PasswordChangeRequired: {http.StatusForbidden, "The account must change its initial password (PUT /users/me) before anything else."},
	DemoMode:               {http.StatusForbidden, "The server runs in demonstration mode and refuses this change."},
	NotFound:               {http.StatusNotFound, "No such resource, or one the caller may not see."},
	MethodNotAllowed:       {http.StatusMethodNotAllowed, "The path exists but not with this method; the Allow header lists those it has."},
	Conflict:               {http.StatusConflict, "The change conflicts with the current state: a name taken, a file that exists, the last administrator."},
	PayloadTooLarge:        {http.StatusRequestEntityTooLarge, "The body is larger than the operation accepts; details say the limit."},
	UnsupportedMediaType:   {http.StatusUnsupportedMediaType, "The body's Content-Type is not one the operation reads (JSON for the API)."},
	RateLimited:            {http.StatusTooManyRequests, "Too many requests or failed sign-ins from this address or for this user; Retry-After says when to try again."},
	Internal:               {http.StatusInternalServerError, "The server failed; details.request_id finds the cause in its log."},
	Unavailable:            {http.StatusServiceUnavailable, "The server cannot do this now (no cluster leader, an origin unreachable, an upgrade in progress); nothing was changed; Retry-After says when to try again."},
	RequestTimeout:         {http.StatusRequestTimeout, "The request's body did not arrive in time."},
	InsufficientStorage:    {http.StatusInsufficientStorage, "The server is short of disk space and refuses uploads until some is freed."},
	ResyncRequired:         {http.StatusGone, "A change feed reader is further behind than the deletions the origin remembers: read again from index 0."},
}

// Codes lists every code, in name order.
func Codes() []Code { return slices.Sorted(maps.Keys(codes)) }

// Description says what a code means.
func (c Code) Description() string { return codes[c].description }

// Status returns the HTTP status of a code (500 for an unknown one).
func (c Code) Status() int {
	if d, ok := codes[c]; ok {
		return d.status
	}
	return http.StatusInternalServerError
}

// Error is an error meant for the client: the REST API's and every
// package format's (each renders it in its client's shape). Its message
// and details are shown as they are, so they must never carry internals.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
	status  int            // 0: the code's
	reason  string         // the status line's reason phrase ("": the standard one)
}

// WithReason has the error's answer say its message in the status
// line's reason phrase too, where HTTP/1.1 allows it: for the clients
// that show the reason phrase and not the body (pip, Maven) when a
// refusal must say why.
func (e *Error) WithReason() *Error {
	e.reason = e.Message
	return e
}

// Reason is the reason phrase WithReason asked for ("" none).
func (e *Error) Reason() string { return e.reason }

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status the error is answered with: its code's,
// unless a protocol asked for another with WithStatus.
func (e *Error) Status() int {
	if e.status != 0 {
		return e.status
	}
	return e.Code.Status()
}

// WithStatus answers the error with a status other than its code's, for a
// client protocol that expects one (a 416 for an upload range error); the
// code stays what the error is.
func (e *Error) WithStatus(status int) *Error {
	e.status = status
	return e
}

// RetryAfter is the detail that says, in whole seconds, when to retry; the
// transports send it as the Retry-After header too.
const RetryAfter = "retry_after"

// RetryAfterSeconds returns the error's retry_after detail, if any.
func (e *Error) RetryAfterSeconds() (int, bool) {
	secs, ok := e.Details[RetryAfter].(int)
	return secs, ok
}

// New builds a client error.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// With adds one detail and returns the error, for chaining.
func (e *Error) With(key string, val any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = val
	return e
}

// Invalid is a validation failure of one request field; details.field names it.
func Invalid(field, format string, args ...any) *Error {
	return New(ValidationFailed, format, args...).With("field", field)
}

// Mapper turns a domain error (a sentinel of a store, say) into a client
// error, or returns nil for an error it does not know.
type Mapper func(error) *Error

// As finds the client error in err's chain, else asks the mappers; nil
// means nobody knows err (the caller answers INTERNAL and logs it).
func As(err error, mappers ...Mapper) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	for _, m := range mappers {
		if e := m(err); e != nil {
			return e
		}
	}
	return nil
}

// Body renders the spec's error body.
func Body(e *Error) []byte {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	return b
}

// Write answers w with e (Retry-After too, when e says when to retry).
func Write(w http.ResponseWriter, e *Error) {
	if secs, ok := e.RetryAfterSeconds(); ok {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status())
	_, _ = w.Write(Body(e))
}

// InternalError is the client's view of a failure whose cause stays in the
// log; the request id joins the two.
func InternalError(requestID string) *Error {
	return New(Internal, "internal error; quote request id %s to the administrator", requestID).With("request_id", requestID)
}
