package rubygems

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

const gemspecYAML = `--- !ruby/object:Gem::Specification
name: demogem
version: !ruby/object:Gem::Version
  version: 1.1.0
platform: ruby
summary: a demo
authors:
- depot
dependencies:
- !ruby/object:Gem::Dependency
  name: basegem
  requirement: !ruby/object:Gem::Requirement
    requirements:
    - - ">="
      - !ruby/object:Gem::Version
        version: '1.0'
    - - "<"
      - !ruby/object:Gem::Version
        version: '2'
  type: :runtime
- !ruby/object:Gem::Dependency
  name: rake
  requirement: !ruby/object:Gem::Requirement
    requirements:
    - - ">="
      - !ruby/object:Gem::Version
        version: '0'
  type: :development
required_ruby_version: !ruby/object:Gem::Requirement
  requirements:
  - - ">="
    - !ruby/object:Gem::Version
      version: '2.7'
`

func TestParseSpec(t *testing.T) {
	s, err := parseSpec([]byte(gemspecYAML))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "demogem" || s.Version != "1.1.0" || s.full() != "1.1.0" || s.file() != "demogem-1.1.0.gem" || s.Ruby != ">= 2.7" ||
		len(s.Deps) != 1 || s.Deps[0] != [2]string{"basegem", ">= 1.0&< 2"} {
		t.Fatalf("parseSpec = %+v", s)
	}
	for _, bad := range []string{"name: ../x\nversion: {version: 1.0}\n", "name: x\nversion: {version: '1.0 ; rm'}\n", "{{"} {
		if _, err := parseSpec([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestMarshalSpecs(t *testing.T) {
	gz, err := marshalSpecs([]spec{{Name: "a", Version: "1.0", Platform: "ruby"}})
	if err != nil {
		t.Fatal(err)
	}
	zr, _ := gzip.NewReader(bytes.NewReader(gz))
	raw, _ := io.ReadAll(zr)
	// [[ "a"(E), U:Gem::Version ["1.0"(E)], "ruby"(E) ]], the second E a link.
	want := "\x04\x08[\x06[\x08I\"\x06a\x06:\x06ETU:\x11Gem::Version[\x06I\"\x081.0\x06;\x00TI\"\x09ruby\x06;\x00T"
	if string(raw) != want {
		t.Fatalf("marshal = %q\nwant     %q", raw, want)
	}
}

func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(gemspecYAML))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if s, err := parseSpec(raw); err == nil && (s.Name == "" || s.Version == "") {
			t.Fatalf("parsed %+v", s)
		}
	})
}
