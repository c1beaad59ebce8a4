package format

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A TOML reader for package manifests (a crate's Cargo.toml), of our own
// so that no dependency is taken for one file: the whole TOML 1.0 syntax
// (tables, arrays of tables, dotted and quoted keys, the four kinds of
// string, arrays and inline tables), read into maps. Booleans are bools;
// numbers and dates stay their text, which is all a manifest reader needs
// of them. DecodeTOML bounds the document before this runs.

// maxTOMLKeyParts bounds the parts of one key: dotted keys nest tables
// without brackets, which the shape check does not see.
const maxTOMLKeyParts = MaxMetadataDepth

type tomlParser struct {
	s    string
	i    int
	line int
	root map[string]any
	cur  map[string]any
	// defined are the tables headers defined and the arrays of tables
	// they made (tableMark, arrayMark): TOML forbids defining a table
	// twice, and extending an inline array with a header.
	defined map[string]bool
}

type tomlError struct {
	line int
	msg  string
}

func (e *tomlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func parseTOML(s string) (map[string]any, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("not UTF-8")
	}
	p := &tomlParser{s: s, line: 1, root: map[string]any{}, defined: map[string]bool{}}
	p.cur = p.root
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.root, nil
		}
		switch c := p.s[p.i]; {
		case c == '\n' || c == '\r' || c == '#':
			if err := p.endLine(); err != nil {
				return nil, err
			}
			continue
		case c == '[':
			if err := p.header(); err != nil {
				return nil, err
			}
		default:
			if err := p.keyValue(p.cur, 0); err != nil {
				return nil, err
			}
		}
		if err := p.endLine(); err != nil {
			return nil, err
		}
	}
}

func (p *tomlParser) fail(format string, args ...any) error {
	return &tomlError{p.line, fmt.Sprintf(format, args...)}
}

func (p *tomlParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// endLine takes the rest of a line: spaces, a comment, the newline.
func (p *tomlParser) endLine() error {
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '#' {
		for p.i < len(p.s) && p.s[p.i] != '\n' {
			p.i++
		}
	}
	if strings.HasPrefix(p.s[p.i:], "\r\n") {
		p.i++
	}
	switch {
	case p.i >= len(p.s):
		return nil
	case p.s[p.i] == '\n':
		p.i++
		p.line++
		return nil
	}
	return p.fail("unexpected %q", p.s[p.i])
}

// skipBlank skips spaces, newlines and comments (inside arrays).
func (p *tomlParser) skipBlank() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r':
			p.i++
		case '\n':
			p.i++
			p.line++
		case '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

// header reads [a.b] or [[a.b]] and makes that table the current one.
func (p *tomlParser) header() error {
	array := strings.HasPrefix(p.s[p.i:], "[[")
	if array {
		p.i += 2
	} else {
		p.i++
	}
	p.skipSpace()
	key, err := p.key()
	if err != nil {
		return err
	}
	p.skipSpace()
	closing := "]"
	if array {
		closing = "]]"
	}
	if !strings.HasPrefix(p.s[p.i:], closing) {
		return p.fail("a table header ends with %s", closing)
	}
	p.i += len(closing)
	t := p.root
	for _, k := range key[:len(key)-1] {
		if t, err = p.descend(t, k); err != nil {
			return err
		}
	}
	last := key[len(key)-1]
	if array {
		v, ok := t[last]
		if !ok {
			v = []any{}
		}
		l, isArr := v.([]any)
		if !isArr || len(l) > 0 && !p.defined[arrayMark(l)] {
			return p.fail("%s is not an array of tables", strings.Join(key, "."))
		}
		n := map[string]any{}
		l = append(l, n)
		t[last] = l
		p.defined[arrayMark(l)] = true
		p.cur = n
		return nil
	}
	switch v := t[last].(type) {
	case nil:
		n := map[string]any{}
		t[last] = n
		p.cur = n
	case map[string]any:
		if p.defined[tableMark(v)] {
			return p.fail("table %s is defined twice", strings.Join(key, "."))
		}
		p.cur = v
	default:
		return p.fail("%s is not a table", strings.Join(key, "."))
	}
	p.defined[tableMark(p.cur)] = true
	return nil
}

// tableMark names a table a header defined, by its identity (the same
// path names another table in each element of an array of tables).
func tableMark(t map[string]any) string { return fmt.Sprintf("%p", t) }

// arrayMark names an array of tables made by [[...]] headers (an array
// value written inline cannot be extended by one), by the identity of its
// first table.
func arrayMark(l []any) string {
	if len(l) == 0 {
		return ""
	}
	if t, ok := l[0].(map[string]any); ok {
		return "[[" + tableMark(t) + "]]"
	}
	return ""
}

// descend goes into t[k], making a table there if nothing is; in an
// array of tables, into its last table.
func (p *tomlParser) descend(t map[string]any, k string) (map[string]any, error) {
	switch v := t[k].(type) {
	case nil:
		n := map[string]any{}
		t[k] = n
		return n, nil
	case map[string]any:
		return v, nil
	case []any:
		if len(v) > 0 && p.defined[arrayMark(v)] {
			return v[len(v)-1].(map[string]any), nil
		}
	}
	return nil, p.fail("%s is not a table", k)
}

// keyValue reads key = value into t.
func (p *tomlParser) keyValue(t map[string]any, depth int) error {
	key, err := p.key()
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != '=' {
		return p.fail("expected = after a key")
	}
	p.i++
	p.skipSpace()
	v, err := p.value(depth)
	if err != nil {
		return err
	}
	for _, k := range key[:len(key)-1] {
		if t, err = p.descend(t, k); err != nil {
			return err
		}
	}
	last := key[len(key)-1]
	if _, ok := t[last]; ok {
		return p.fail("key %s is defined twice", strings.Join(key, "."))
	}
	t[last] = v
	return nil
}

// key reads a dotted key.
func (p *tomlParser) key() ([]string, error) {
	var parts []string
	for {
		p.skipSpace()
		if len(parts) == maxTOMLKeyParts {
			return nil, p.fail("a key of more than %d parts", maxTOMLKeyParts)
		}
		if p.i >= len(p.s) {
			return nil, p.fail("expected a key")
		}
		switch p.s[p.i] {
		case '"':
			s, err := p.basicString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		case '\'':
			s, err := p.literalString()
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
		default:
			j := p.i
			for j < len(p.s) && bareKeyChar(p.s[j]) {
				j++
			}
			if j == p.i {
				return nil, p.fail("expected a key")
			}
			parts = append(parts, p.s[p.i:j])
			p.i = j
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '.' {
			return parts, nil
		}
		p.i++
	}
}

func bareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value reads a value; depth counts the arrays and inline tables around
// it.
func (p *tomlParser) value(depth int) (any, error) {
	if depth > MaxMetadataDepth {
		return nil, p.fail("nested deeper than %d levels", MaxMetadataDepth)
	}
	if p.i >= len(p.s) {
		return nil, p.fail("expected a value")
	}
	switch rest := p.s[p.i:]; {
	case strings.HasPrefix(rest, `"""`):
		return p.multilineString(`"""`)
	case strings.HasPrefix(rest, `'''`):
		return p.multilineString(`'''`)
	case rest[0] == '"':
		return p.basicString()
	case rest[0] == '\'':
		return p.literalString()
	case rest[0] == '[':
		return p.array(depth)
	case rest[0] == '{':
		return p.inlineTable(depth)
	}
	j := p.i
	for j < len(p.s) && scalarChar(p.s, j) {
		j++
	}
	tok := p.s[p.i:j]
	p.i = j
	switch tok {
	case "":
		return nil, p.fail("expected a value")
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return tok, nil
}

// scalarChar reports whether s[j] belongs to a number, a date or a time
// (a space only between a date and a time).
func scalarChar(s string, j int) bool {
	c := s[j]
	if c == ' ' {
		return j > 0 && j+1 < len(s) && isDigit(s[j-1]) && isDigit(s[j+1])
	}
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || strings.IndexByte("+-_.:", c) >= 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *tomlParser) array(depth int) (any, error) {
	p.i++ // [
	out := []any{}
	for {
		p.skipBlank()
		if p.i >= len(p.s) {
			return nil, p.fail("an array is not closed")
		}
		if p.s[p.i] == ']' {
			p.i++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipBlank()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return out, nil
		}
		return nil, p.fail("expected , or ] in an array")
	}
}

func (p *tomlParser) inlineTable(depth int) (any, error) {
	p.i++ // {
	out := map[string]any{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, nil
	}
	for {
		p.skipSpace()
		if err := p.keyValue(out, depth+1); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.fail("an inline table is not closed")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, p.fail("expected , or } in an inline table")
		}
	}
}

func (p *tomlParser) literalString() (string, error) {
	p.i++ // '
	j := strings.IndexAny(p.s[p.i:], "'\n")
	if j < 0 || p.s[p.i+j] != '\'' {
		return "", p.fail("a string is not closed on its line")
	}
	s := p.s[p.i : p.i+j]
	p.i += j + 1
	return s, nil
}

func (p *tomlParser) basicString() (string, error) {
	p.i++ // "
	var b strings.Builder
	for {
		if p.i >= len(p.s) || p.s[p.i] == '\n' {
			return "", p.fail("a string is not closed on its line")
		}
		switch c := p.s[p.i]; c {
		case '"':
			p.i++
			return b.String(), nil
		case '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
}

// multilineString reads a string between three quotes, double or
// single: a newline right after the opening is dropped.
func (p *tomlParser) multilineString(delim string) (string, error) {
	p.i += 3
	if strings.HasPrefix(p.s[p.i:], "\r\n") {
		p.i += 2
		p.line++
	} else if strings.HasPrefix(p.s[p.i:], "\n") {
		p.i++
		p.line++
	}
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.fail("a string is not closed")
		}
		if strings.HasPrefix(p.s[p.i:], delim) {
			// Up to two quotes may end the content: """a"""" is `a"`.
			extra := 0
			for extra < 2 && p.i+3+extra < len(p.s) && p.s[p.i+3+extra] == delim[0] {
				extra++
			}
			b.WriteString(p.s[p.i : p.i+extra])
			p.i += 3 + extra
			return b.String(), nil
		}
		c := p.s[p.i]
		switch {
		case c == '\n':
			p.line++
			b.WriteByte(c)
			p.i++
		case c == '\\' && delim == `"""`:
			if p.lineEndingBackslash() {
				continue
			}
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
}

// lineEndingBackslash takes a backslash that ends a line in a multi-line
// basic string, with the line break and every blank after it (over as
// many lines as there are), and reports whether there was one.
func (p *tomlParser) lineEndingBackslash() bool {
	j := p.i + 1
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t' || p.s[j] == '\r') {
		j++
	}
	if j >= len(p.s) || p.s[j] != '\n' {
		return false
	}
	for p.i = j; p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0; p.i++ {
		if p.s[p.i] == '\n' {
			p.line++
		}
	}
	return true
}

// escape reads one escape of a basic string.
func (p *tomlParser) escape(b *strings.Builder) error {
	if p.i+1 >= len(p.s) {
		return p.fail("a string ends in a backslash")
	}
	c := p.s[p.i+1]
	p.i += 2
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case '"':
		b.WriteByte('"')
	case '\\':
		b.WriteByte('\\')
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if p.i+n > len(p.s) {
			return p.fail("a short \\%c escape", c)
		}
		r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(r)) {
			return p.fail("an invalid \\%c escape", c)
		}
		b.WriteRune(rune(r))
		p.i += n
	default:
		return p.fail("an unknown escape \\%c", c)
	}
	return nil
}
