package scan

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/vuln"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// TestExactVersion: what each ecosystem's declarations pin, and what
// they leave to the client.
func TestExactVersion(t *testing.T) {
	for _, c := range []struct {
		eco, constraint, want string
		exact                 bool
	}{
		{vuln.Go, "v1.2.3", "v1.2.3", true},
		{vuln.Go, "v0.0.0-20240101000000-abcdef123456", "v0.0.0-20240101000000-abcdef123456", true},
		{vuln.NPM, "1.2.3", "1.2.3", true},
		{vuln.NPM, "^1.2.3", "", false},
		{vuln.NPM, "latest", "", false},
		{vuln.NPM, "github:x/y", "", false},
		{vuln.PyPI, "==2.0.1", "2.0.1", true},
		{vuln.PyPI, "=== 2.0.1", "2.0.1", true},
		{vuln.PyPI, "(==1.26.17)", "1.26.17", true},
		{vuln.PyPI, ">=2.0", "", false},
		{vuln.PyPI, "==2.*", "", false},
		{vuln.Crates, "=1.0.0", "1.0.0", true},
		{vuln.Crates, "1.0.0", "", false},
		{vuln.Maven, "31.1-jre", "31.1-jre", true},
		{vuln.Maven, "[4.1.99.Final]", "4.1.99.Final", true},
		{vuln.Maven, "[1.0,2.0)", "", false},
		{vuln.Maven, "${netty.version}", "", false},
		{vuln.NuGet, "6.0.0", "6.0.0", true},
		{vuln.NuGet, "[6.0.0, )", "", false},
		{vuln.RubyGems, "= 2.2.3", "2.2.3", true},
		{vuln.RubyGems, "~> 2.2", "", false},
		{vuln.Packagist, "v5.4.1", "5.4.1", true},
		{vuln.Packagist, "^5.4", "", false},
	} {
		got, exact := exactVersion(c.eco, c.constraint)
		if exact != c.exact || exact && got != c.want {
			t.Errorf("%s %q: %q %v, want %q %v", c.eco, c.constraint, got, exact, c.want, c.exact)
		}
	}
}

// TestReadAdvisories: a zip of records (other files skipped), one
// record, an array; a bad record refuses the whole upload, naming it.
func TestReadAdvisories(t *testing.T) {
	ctx := context.Background()
	read := func(b []byte) ([]vuln.Advisory, error) { return ReadAdvisories(ctx, bytes.NewReader(b), int64(len(b))) }
	advs, err := read(vulntest.Zip(t, "npm"))
	if err != nil || len(advs) != 474 {
		t.Fatalf("the npm zip: %d records, %v", len(advs), err)
	}
	one := `{"id":"X-1","modified":"2026-01-01T00:00:00Z","affected":[{"package":{"ecosystem":"npm","name":"x"},"versions":["1.0.0"]}]}`
	if advs, err := read([]byte(one)); err != nil || len(advs) != 1 || advs[0].ID != "X-1" {
		t.Errorf("one record: %v %v", advs, err)
	}
	if advs, err := read([]byte("[" + one + "," + strings.Replace(one, "X-1", "X-2", 1) + "]")); err != nil || len(advs) != 2 {
		t.Errorf("an array: %v %v", advs, err)
	}
	_, err = read([]byte(`[` + one + `, {"id": "bad/id"}]`))
	var fe *format.Error
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("a bad record: %v", err)
	}
	if _, err := read([]byte("not json")); err == nil {
		t.Error("garbage was read")
	}
}
