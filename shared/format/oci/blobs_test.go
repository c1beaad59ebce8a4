package oci

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestExactly: a chunk is read to the end only when it is as long as its
// Content-Range says; otherwise the read fails, a longer one after at
// most one byte too many (an endless body is not drained).
func TestExactly(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		body string
		want int64
		ok   bool
	}{
		{"12345", 5, true},
		{"", 0, true},
		{"1234", 5, false},
		{"", 1, false},
		{"123456" + long, 5, false},
		{"1" + long, 0, false},
	} {
		r := &exactly{r: strings.NewReader(tc.body), want: tc.want}
		got, err := io.ReadAll(iotest.OneByteReader(r))
		var ce *chunkSizeError
		switch {
		case tc.ok && (err != nil || string(got) != tc.body):
			t.Errorf("%d bytes for %d: %q, %v", len(tc.body), tc.want, got, err)
		case !tc.ok && !errors.As(err, &ce):
			t.Errorf("%d bytes for %d: err = %v, want a chunk size error", len(tc.body), tc.want, err)
		case int64(len(got)) > tc.want+1:
			t.Errorf("%d bytes for %d: read %d bytes", len(tc.body), tc.want, len(got))
		}
	}
}
