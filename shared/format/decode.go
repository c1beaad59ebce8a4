package format

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Metadata from an upload (a gemspec, a Chart.yaml, a conda index.json,
// a composer.json, a Cargo.toml) is bounded before it is decoded: a
// decoder builds a node for every element (YAML about 300 bytes and 2 µs
// each), so a few hundred KiB of one-character list items would cost
// hundreds of MiB and seconds. A cheap scan counts an upper bound of the
// elements and the nesting first.

// Bounds of decoded metadata.
const (
	MaxMetadataNodes = 30000 // elements (scalars, list items, keys)
	MaxMetadataDepth = 64    // nesting
)

// DecodeYAML decodes raw into v within the bounds; what names it in the
// error.
func DecodeYAML(raw []byte, v any, what string) error {
	if err := checkShape(raw, what); err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		return BadRequest("%s is not valid YAML: %v", what, err)
	}
	return nil
}

// DecodeJSON decodes raw into v within the bounds.
func DecodeJSON(raw []byte, v any, what string) error {
	if err := checkShape(raw, what); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return BadRequest("%s is not valid JSON: %v", what, err)
	}
	return nil
}

// DecodeTOML decodes raw into a map within the bounds: the shape check's,
// and at most maxTOMLKeyDots dots on a line (a dotted key nests tables
// without brackets, which the shape check does not see). Strings, booleans
// and arrays are Go's; integers are int64, floats float64, dates
// time.Time (BurntSushi/toml).
func DecodeTOML(raw []byte, what string) (map[string]any, error) {
	if err := checkShape(raw, what); err != nil {
		return nil, err
	}
	for line := range bytes.Lines(raw) {
		if bytes.Count(line, []byte(".")) > maxTOMLKeyDots {
			return nil, BadRequest("%s has a line of more than %d dots", what, maxTOMLKeyDots)
		}
	}
	m := map[string]any{}
	if _, err := toml.Decode(string(raw), &m); err != nil {
		return nil, BadRequest("%s is not valid TOML: %v", what, err)
	}
	return m, nil
}

// maxTOMLKeyDots bounds the dots on one line of a TOML document: the
// parts of a dotted key, with room for the dots of a value (a URL).
const maxTOMLKeyDots = 64

// checkShape bounds the elements of a JSON or YAML document: each line
// (YAML's block style puts an element on a line), each comma and each
// opening bracket (flow style) may start one; and the nesting of
// brackets and of indentation. It over-counts (commas inside strings),
// which only errs on the safe side for documents far beyond real ones.
func checkShape(raw []byte, what string) error {
	nodes, depth, indent := 1, 0, 0
	lineStart := true
	for _, c := range raw {
		switch {
		case c == '\n':
			nodes++
			lineStart, indent = true, 0
		case lineStart && c == ' ':
			indent++
		case c == ',':
			nodes++
			lineStart = false
		case c == '[' || c == '{':
			nodes++
			depth++
			lineStart = false
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
			lineStart = false
		default:
			lineStart = false
		}
		if nodes > MaxMetadataNodes {
			return BadRequest("%s has more than %d elements", what, MaxMetadataNodes)
		}
		if depth > MaxMetadataDepth || indent > 4*MaxMetadataDepth {
			return BadRequest("%s nests deeper than %d levels", what, MaxMetadataDepth)
		}
	}
	return nil
}

// Clip bounds a free-text field a record keeps (a summary, a
// description): at most n bytes, cut at a character boundary.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ClipList bounds a list of short strings a record keeps (authors,
// licences, keywords): at most n of at most each bytes.
func ClipList(l []string, n, each int) []string {
	if len(l) > n {
		l = l[:n]
	}
	out := make([]string, 0, len(l))
	for _, s := range l {
		out = append(out, Clip(s, each))
	}
	return out
}

// Record keeps of decoded metadata only the fields a format serves, and
// refuses what would make its record larger than max bytes; what names
// the metadata in the error.
func Record(all map[string]any, fields []string, max int, what string) (map[string]any, error) {
	rec := map[string]any{}
	for _, k := range fields {
		if v, ok := all[k]; ok {
			rec[k] = v
		}
	}
	if raw, err := json.Marshal(rec); err != nil || len(raw) > max {
		return nil, BadRequest("the fields of %s this registry keeps take more than %d bytes", what, max)
	}
	return rec, nil
}
