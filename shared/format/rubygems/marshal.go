package rubygems

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"strings"
	"time"
)

// marshalSpecs is the legacy index: gzip of Ruby's Marshal 4.8 of
// [[name, Gem::Version, platform], ...]. Only what that needs of Marshal
// is written: arrays, UTF-8 strings, symbols and Gem::Version's
// marshal_dump ("U", the version string in an array).
func marshalSpecs(specs []spec) ([]byte, error) {
	var m marshaler
	m.b.WriteString("\x04\x08")
	m.array(len(specs))
	for _, s := range specs {
		m.array(3)
		m.str(s.Name)
		m.b.WriteByte('U')
		m.symbol("Gem::Version")
		m.array(1)
		m.str(s.Version)
		m.str(s.Platform)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(m.b.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// marshalGemspec is the legacy gemspec: zlib of Marshal of the
// Gem::Specification as its _dump writes it (an array of its fields,
// version 4 of the layout), from what the index keeps.
func marshalGemspec(s spec, uploaded time.Time) ([]byte, error) {
	var in marshaler
	in.b.WriteString("\x04\x08")
	in.array(19)
	in.str("3.3.15") // rubygems_version
	in.int(4)        // specification_version
	in.str(s.Name)
	in.version(s.Version)
	in.str(uploaded.UTC().Format("2006-01-02"))
	in.str(s.Summary)
	in.requirement(s.Ruby)
	in.requirement(s.RubyGems)
	in.str(s.Platform)
	in.array(len(s.Deps))
	for _, d := range s.Deps {
		in.b.WriteByte('o')
		in.symbol("Gem::Dependency")
		in.long(4)
		in.symbol("@name")
		in.str(d[0])
		in.symbol("@requirement")
		in.requirement(d[1])
		in.symbol("@type")
		in.symbol("runtime")
		in.symbol("@prerelease")
		in.b.WriteByte('F')
	}
	in.str("")          // rubyforge_project, gone
	in.b.WriteByte('0') // email
	in.strings(s.Authors)
	in.b.WriteByte('0') // description
	in.b.WriteByte('0') // homepage
	in.b.WriteByte('T') // has_rdoc
	in.str(s.Platform)  // new_platform
	in.strings(s.Licenses)
	in.b.WriteString("{\x00") // metadata
	var out marshaler
	out.b.WriteString("\x04\x08u")
	out.symbol("Gem::Specification")
	out.long(in.b.Len())
	out.b.Write(in.b.Bytes())
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(out.b.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

type marshaler struct {
	b    bytes.Buffer
	syms map[string]int
}

// long is Marshal's packed integer.
func (m *marshaler) long(n int) {
	switch {
	case n == 0:
		m.b.WriteByte(0)
	case n > 0 && n < 123:
		m.b.WriteByte(byte(n + 5))
	default: // n >= 123 here: lengths are never negative
		var le []byte
		for v := n; v > 0; v >>= 8 {
			le = append(le, byte(v))
		}
		m.b.WriteByte(byte(len(le)))
		m.b.Write(le)
	}
}

func (m *marshaler) array(n int) { m.b.WriteByte('['); m.long(n) }

func (m *marshaler) int(n int) { m.b.WriteByte('i'); m.long(n) }

func (m *marshaler) strings(ss []string) {
	m.array(len(ss))
	for _, s := range ss {
		m.str(s)
	}
}

// version is a Gem::Version: its marshal_dump, [version].
func (m *marshaler) version(v string) {
	m.b.WriteByte('U')
	m.symbol("Gem::Version")
	m.array(1)
	m.str(v)
}

// requirement is a Gem::Requirement from "op v&op v" (">= 0" when
// empty): its marshal_dump, [[[op, Gem::Version], ...]].
func (m *marshaler) requirement(req string) {
	if req == "" {
		req = ">= 0"
	}
	parts := strings.Split(req, "&")
	m.b.WriteByte('U')
	m.symbol("Gem::Requirement")
	m.array(1)
	m.array(len(parts))
	for _, p := range parts {
		op, v, _ := strings.Cut(strings.TrimSpace(p), " ")
		m.array(2)
		m.str(op)
		m.version(v)
	}
}

// symbol writes a symbol, or a link to it once written.
func (m *marshaler) symbol(s string) {
	if m.syms == nil {
		m.syms = map[string]int{}
	}
	if i, ok := m.syms[s]; ok {
		m.b.WriteByte(';')
		m.long(i)
		return
	}
	m.syms[s] = len(m.syms)
	m.b.WriteByte(':')
	m.long(len(s))
	m.b.WriteString(s)
}

// str is a UTF-8 string: the bytes, with the encoding instance variable E
// set to true.
func (m *marshaler) str(s string) {
	m.b.WriteString("I\"")
	m.long(len(s))
	m.b.WriteString(s)
	m.long(1)
	m.symbol("E")
	m.b.WriteByte('T')
}

// prerelease: a version with a letter in it (1.0.0.pre, 2.0.rc1).
func prerelease(v string) bool {
	return strings.IndexFunc(v, func(r rune) bool { return r >= 'A' && r <= 'z' }) >= 0
}
