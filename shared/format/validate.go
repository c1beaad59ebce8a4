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
// control character, and nothing CheckName refuses. Everything a format
// stores by name passes through it, so no name can climb out of its place
// or break an index key.
func CheckSegment(what, s string) error {
	switch {
	case s == "":
		return BadRequest("%s is empty", what)
	case len(s) > MaxSegment:
		return BadRequest("%s is longer than %d bytes", what, MaxSegment)
	case s == "." || s == "..":
		return BadRequest("%s %q is not allowed", what, s)
	}
	if i := strings.IndexAny(s, `/\`); i >= 0 {
		return BadRequest("%s contains a forbidden character %s", what, quoteRune(rune(s[i])))
	}
	return CheckName(what, s)
}

// CheckName refuses a name (package, version, file name, path) that is
// not valid UTF-8 or holds a character that is invisible or reorders the
// text around it: C0 and C1 controls, bidi controls (U+202A..U+202E,
// U+2066..U+2069), zero-width and other format characters (U+200B..U+200F,
// U+2060..U+2064, U+FEFF, U+00AD...) and line separators. Such a name
// shows one thing in a listing and is another ("evil\u202Egpj.exe" reads
// as "evilexe.jpg"). The error names the code point.
func CheckName(what, s string) error {
	if !utf8.ValidString(s) {
		return BadRequest("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if hidden(r) {
			return BadRequest("%s contains a forbidden character U+%04X (a control, invisible or bidi character)", what, r)
		}
	}
	return nil
}

// hidden reports whether r is a control (Cc), format (Cf: bidi controls,
// zero-width characters, soft hyphen, BOM, tag characters) or line or
// paragraph separator character.
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// checkUpload applies CheckName to what an upload is stored under, so
// that every format is covered wherever its names come from (a path, a
// form field, a manifest inside the file).
func checkUpload(u *Upload) error {
	for _, f := range [...]struct{ what, v string }{{"package name", u.Package}, {"version", u.Version}, {"path", u.Path}} {
		if err := CheckName(f.what, f.v); err != nil {
			return err
		}
	}
	return nil
}

func quoteRune(r rune) string { return strings.Trim(fmt.Sprintf("%q", r), "'") }
