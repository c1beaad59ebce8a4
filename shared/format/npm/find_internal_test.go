package npm

import (
	"encoding/json"
	"testing"
)

// TestFindText: a search record is read back as written, whether its
// JSON needed escapes or not; anything else is not a record.
func TestFindText(t *testing.T) {
	for _, m := range []pkgMeta{
		{Description: "A JSON Parser", Keywords: []string{"json", "Parse"}},
		{Description: `quotes " and <tags> & back\slashes`, Keywords: []string{"ünïcode"}},
		{},
	} {
		raw, err := json.Marshal(findText(m))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readFindText(raw)
		if !ok || got != findText(m) {
			t.Errorf("readFindText(%s) = %q, %v; want %q", raw, got, ok, findText(m))
		}
	}
	for _, raw := range []string{`{"d":"x"}`, `"unterminated\"`, `42`, ``} {
		if got, ok := readFindText([]byte(raw)); ok {
			t.Errorf("readFindText(%s) = %q, want no record", raw, got)
		}
	}
}
