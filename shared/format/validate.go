package format

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSegment bounds one path segment (a file system's name limit).
const MaxSegment = 255

// CheckSegment validates one path segment of a client path: non-empty,
// bounded, valid UTF-8, not "." or "..", no slash, backslash, NUL or other
// control character. Everything a format stores by name passes through it,
// so no name can climb out of its place or break an index key.
func CheckSegment(what, s string) error {
	switch {
	case s == "":
		return BadRequest("%s is empty", what)
	case len(s) > MaxSegment:
		return BadRequest("%s is longer than %d bytes", what, MaxSegment)
	case s == "." || s == "..":
		return BadRequest("%s %q is not allowed", what, s)
	case !utf8.ValidString(s):
		return BadRequest("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r == '/' || r == '\\' || unicode.IsControl(r) {
			return BadRequest("%s contains a forbidden character %s", what, quoteRune(r))
		}
	}
	return nil
}

func quoteRune(r rune) string { return strings.Trim(fmt.Sprintf("%q", r), "'") }
