package pypi

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"time"
)

func TestNegotiate(t *testing.T) {
	for accept, want := range map[string]string{
		"": TypeTextHTML,
		// pip 23.2, as seen on the wire.
		"application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01": TypeJSON,
		"text/html":                           TypeTextHTML,
		"*/*":                                 TypeTextHTML,
		"application/vnd.pypi.simple.v1+html": TypeHTML,
		"application/vnd.pypi.simple.latest+json":              TypeJSON,
		"text/html, application/vnd.pypi.simple.v1+json":       TypeTextHTML, // a tie goes to the first
		"text/html;q=0.5, application/vnd.pypi.simple.v1+json": TypeJSON,
		"application/vnd.pypi.simple.v1+json;q=0":              TypeTextHTML,
		"application/vnd.pypi.simple.v2+json":                  TypeTextHTML,
		"application/vnd.pypi.simple.v1+json;q=abc":            TypeTextHTML,
	} {
		if got := Negotiate(accept); got != want {
			t.Errorf("Negotiate(%q) = %q, want %q", accept, got, want)
		}
	}
}

var sampleFiles = []IndexFile{
	{Filename: "demo-1.0.tar.gz", URL: "http://h/pypi/r/files/demo/1.0/demo-1.0.tar.gz", SHA256: "aa", RequiresPython: ">=3.8", Version: "1.0", Size: 3},
	{Filename: "demo-1.0-py3-none-any.whl", URL: "http://h/pypi/r/files/demo/1.0/demo-1.0-py3-none-any.whl", SHA256: "bb",
		RequiresPython: `>=3.8,<4 "x"`, MetadataSHA256: "cc", Version: "1.0", UploadTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
}

func TestRenderProjectHTML(t *testing.T) {
	out := string(RenderProject(TypeTextHTML, "Demo<x>", sampleFiles))
	for _, want := range []string{
		`<meta name="pypi:repository-version" content="1.1">`,
		"<title>Links for Demo&lt;x&gt;</title>",
		`<a href="http://h/pypi/r/files/demo/1.0/demo-1.0.tar.gz#sha256=aa" data-requires-python="&gt;=3.8">demo-1.0.tar.gz</a>`,
		`data-requires-python="&gt;=3.8,&lt;4 &#34;x&#34;" data-dist-info-metadata="sha256=cc" data-core-metadata="sha256=cc">demo-1.0-py3-none-any.whl</a>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %s:\n%s", want, out)
		}
	}
}

func TestRenderProjectJSON(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(RenderProject(TypeJSON, "Demo", sampleFiles), &doc); err != nil {
		t.Fatal(err)
	}
	files := doc["files"].([]any)
	sdist, wheel := files[0].(map[string]any), files[1].(map[string]any)
	if doc["name"] != "Demo" || doc["meta"].(map[string]any)["api-version"] != "1.1" || len(doc["versions"].([]any)) != 1 {
		t.Fatalf("doc %v", doc)
	}
	if _, ok := sdist["core-metadata"]; ok || sdist["requires-python"] != ">=3.8" || sdist["hashes"].(map[string]any)["sha256"] != "aa" {
		t.Fatalf("sdist %v", sdist)
	}
	// pip 22.3-23.1 crash on JSON dist-info-metadata: never sent.
	if _, ok := wheel["dist-info-metadata"]; ok || wheel["core-metadata"].(map[string]any)["sha256"] != "cc" ||
		wheel["upload-time"] != "2026-01-02T03:04:05.000000Z" || wheel["yanked"] != false {
		t.Fatalf("wheel %v", wheel)
	}
	var list map[string]any
	if err := json.Unmarshal(RenderProjectList(TypeJSON, nil), &list); err != nil || list["projects"] == nil {
		t.Fatalf("empty list %s: %v", RenderProjectList(TypeJSON, nil), err)
	}
}

// FuzzRequiresPythonEscaping: whatever a client declares, the attribute
// stays one attribute that decodes back to the declared value.
func FuzzRequiresPythonEscaping(f *testing.F) {
	for _, s := range []string{">=3.8", `"><script>alert(1)</script>`, "&gt;", "'", ">=3.8,!=3.9.*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rp string) {
		if rp == "" {
			return
		}
		out := string(RenderProject(TypeTextHTML, "p", []IndexFile{{Filename: "p-1.tar.gz", URL: "http://h/p-1.tar.gz", SHA256: "aa", RequiresPython: rp}}))
		const open = ` data-requires-python="`
		i := strings.Index(out, open)
		if i < 0 {
			t.Fatalf("no attribute in %s", out)
		}
		rest := out[i+len(open):]
		j := strings.IndexByte(rest, '"')
		if j < 0 || !strings.HasPrefix(rest[j:], `">p-1.tar.gz</a>`) {
			t.Fatalf("attribute of %q breaks out: %s", rp, out)
		}
		if v := rest[:j]; strings.ContainsAny(v, "<>\"'") || html.UnescapeString(v) != rp {
			t.Fatalf("attribute %q does not decode to %q", v, rp)
		}
	})
}

func FuzzNegotiate(f *testing.F) {
	f.Add("application/vnd.pypi.simple.v1+json, text/html; q=0.01")
	f.Add(";;q=,,*/*;q=1e9")
	f.Fuzz(func(t *testing.T, accept string) {
		switch Negotiate(accept) {
		case TypeJSON, TypeHTML, TypeTextHTML:
		default:
			t.Fatalf("Negotiate(%q) picked an unknown type", accept)
		}
	})
}
