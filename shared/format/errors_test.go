package format_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// TestClassify: every error below the formats and the API maps to one
// code of the registry, with the status of that code and a message that
// keeps what the store said for the client and drops the rest.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    apierr.Code
		status  int
		message string
		retry   int
	}{
		{meta.NotFoundf("repository %s", "libs"), apierr.NotFound, 404, "repository libs not found", 0},
		{fmt.Errorf("loading: %w", meta.NotFoundf("user %s", "u1")), apierr.NotFound, 404, "user u1 not found", 0},
		{fmt.Errorf("deciding: %w", meta.Conflictf("a/b exists: already")), apierr.Conflict, 409, "a/b exists: already", 0},
		{meta.ErrLastAdmin, apierr.Conflict, 409, "cannot remove the last administrator", 0},
		{meta.Invalidf("bad key"), apierr.ValidationFailed, 400, "bad key", 0},
		{&meta.StaleError{}, apierr.Unavailable, 503, "", 1},
		{fmt.Errorf("put: %w", blob.ErrTooLarge), apierr.PayloadTooLarge, 413, "", 0},
		{blob.NoSpace(fmt.Errorf("write: %w", blob.ErrNoSpace)), apierr.InsufficientStorage, 507, "", 0},
		{&auth.ThrottledError{RetryAfter: 3 * time.Second}, apierr.RateLimited, 429, "", 3},
		{auth.ErrBusy, apierr.Unavailable, 503, "", 1},
		{auth.ErrBadCredentials, apierr.Unauthorized, 401, "invalid credentials", 0},
		{context.DeadlineExceeded, apierr.Unavailable, 503, "", 1},
		{&format.NotServedError{Method: "PUT", Path: "/x", PathServed: true}, apierr.MethodNotAllowed, 405, "PUT /x is not served", 0},
		{&format.NotServedError{Method: "GET", Path: "/x"}, apierr.NotFound, 404, "GET /x is not served", 0},
		{format.Errorf(apierr.BadRequest, "range").WithStatus(http.StatusRequestedRangeNotSatisfiable), apierr.BadRequest, 416, "range", 0},
		{fmt.Errorf("reading: %w", meta.ErrCompacted), apierr.ResyncRequired, 410, "", 0},
		{fmt.Errorf("disk on fire"), apierr.Internal, 500, "internal error", 0},
	} {
		e := format.Classify(tc.err)
		if e.Code != tc.code || e.Status() != tc.status || (tc.message != "" && e.Message != tc.message) {
			t.Errorf("Classify(%v) = %s %d %q, want %s %d %q", tc.err, e.Code, e.Status(), e.Message, tc.code, tc.status, tc.message)
		}
		if secs, ok := e.RetryAfterSeconds(); (tc.retry != 0) != ok || secs != tc.retry {
			t.Errorf("Classify(%v) retry after %d (%v), want %d", tc.err, secs, ok, tc.retry)
		}
	}
}
