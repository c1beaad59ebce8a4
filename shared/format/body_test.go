package format

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBodyReader: a streamed body answers as ReadBody does: 413 past the
// limit (before reading when Content-Length says so), 400 when the
// client's body fails, and the bytes otherwise.
func TestBodyReader(t *testing.T) {
	status := func(err error) int {
		if err == nil {
			return 0
		}
		return Classify(err).Status()
	}
	if _, err := BodyReader(&Request{ContentLength: 11, Body: strings.NewReader("")}, 10); status(err) != http.StatusRequestEntityTooLarge {
		t.Errorf("announced oversize: %v", err)
	}
	r, _ := BodyReader(&Request{ContentLength: -1, Body: strings.NewReader(strings.Repeat("x", 11))}, 10)
	if _, err := io.ReadAll(r); status(err) != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize body: %v", err)
	}
	r, _ = BodyReader(&Request{ContentLength: -1, Body: io.MultiReader(strings.NewReader("x"), iotest.ErrReader(errors.New("connection reset")))}, 10)
	if _, err := io.ReadAll(r); status(err) != http.StatusBadRequest {
		t.Errorf("failed body: %v", err)
	}
	r, _ = BodyReader(&Request{ContentLength: -1, Body: strings.NewReader("0123456789")}, 10)
	if b, err := io.ReadAll(r); err != nil || string(b) != "0123456789" {
		t.Errorf("body at the limit: %q, %v", b, err)
	}
}
