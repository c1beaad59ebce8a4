// Package apierr is the one registry of REST error codes: each code has a
// status, and every handler error is rendered as the spec's body
// {"error":{"code","message","details"}} here and nowhere else.
package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

var statuses = map[Code]int{
	BadRequest:             http.StatusBadRequest,
	ValidationFailed:       http.StatusBadRequest,
	Unauthorized:           http.StatusUnauthorized,
	Forbidden:              http.StatusForbidden,
	PasswordChangeRequired: http.StatusForbidden,
	DemoMode:               http.StatusForbidden,
	NotFound:               http.StatusNotFound,
	MethodNotAllowed:       http.StatusMethodNotAllowed,
	Conflict:               http.StatusConflict,
	PayloadTooLarge:        http.StatusRequestEntityTooLarge,
	UnsupportedMediaType:   http.StatusUnsupportedMediaType,
	RateLimited:            http.StatusTooManyRequests,
	Internal:               http.StatusInternalServerError,
	Unavailable:            http.StatusServiceUnavailable,
	RequestTimeout:         http.StatusRequestTimeout,
	InsufficientStorage:    http.StatusInsufficientStorage,
	ResyncRequired:         http.StatusGone,
}

// Status returns the HTTP status of a code (500 for an unknown one).
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
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
}

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
