package format_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

func TestServeType(t *testing.T) {
	for _, c := range []struct {
		ct, name string
		want     string // "" means application/octet-stream as an attachment
	}{
		// Active: a browser renders or runs them.
		{"text/html", "a.txt", ""},
		{"TEXT/HTML; charset=utf-8", "a", ""},
		{"application/xhtml+xml", "a", ""},
		{"image/svg+xml", "a.png", ""},
		{"text/xml", "a", ""},
		{"application/xml", "a", ""},
		{"application/rss+xml", "a", ""},
		{"application/xml-dtd", "a", ""},
		{"text/xsl", "a", ""},
		{"text/javascript", "a", ""},
		{"application/javascript", "a", ""},
		{"application/x-javascript", "a", ""},
		{"application/ecmascript", "a", ""},
		{"text/jscript", "a", ""},
		{"text/css", "a", ""},
		{"application/pdf", "a", ""},
		{"multipart/x-mixed-replace; boundary=x", "a", ""},
		{"message/rfc822", "a", ""},
		{"text/plain; charset=utf-7", "a", ""},
		{"text/plain; charset=UTF-16", "a", ""},
		{"application/json; charset=iso-2022-jp", "a", ""},
		{"text/html;;", "a", ""},
		{"not a type", "a", ""},
		{"", "page.html", ""},
		{"", "pic.svg", ""},
		// Inert: kept.
		{"application/octet-stream", "a", "application/octet-stream"},
		{"image/png", "a.html", "image/png"},
		{"application/json", "a", "application/json"},
		{"application/vnd.oci.image.manifest.v1+json", "a", "application/vnd.oci.image.manifest.v1+json"},
		{"application/gzip", "a", "application/gzip"},
		{"application/java-archive", "a", "application/java-archive"},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "a", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"text/plain; charset=utf-8", "a", "text/plain; charset=utf-8"},
		{"text/plain; charset=US-ASCII", "a", "text/plain; charset=US-ASCII"},
		{"Text/Plain", "a", "text/plain"},
		{"", "pic.png", "image/png"},
		{"", "noext", "application/octet-stream"},
	} {
		ct, attach := format.ServeType(c.ct, c.name)
		want, wantAttach := c.want, false
		if want == "" {
			want, wantAttach = "application/octet-stream", true
		}
		if ct != want || attach != wantAttach {
			t.Errorf("ServeType(%q, %q) = %q, %v; want %q, %v", c.ct, c.name, ct, attach, want, wantAttach)
		}
	}
}

func TestSetFileHeaders(t *testing.T) {
	a := &meta.Artifact{Path: "p/1/évil page.html", ContentType: "text/html", Checksums: blob.Checksums{SHA256: "ab"}}
	h := http.Header{}
	format.SetFileHeaders(h, a, false)
	if h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Disposition") != `attachment; filename*=utf-8''%C3%A9vil%20page.html` ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || h.Get("ETag") != `"ab"` {
		t.Fatalf("active type served with %v", h)
	}
	a = &meta.Artifact{Path: "p/1/pic.png", ContentType: "image/png"}
	h = http.Header{}
	format.SetFileHeaders(h, a, false)
	if h.Get("Content-Type") != "image/png" || h.Get("Content-Disposition") != "" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("inert type served with %v", h)
	}
	h = http.Header{}
	format.SetFileHeaders(h, a, true)
	if h.Get("Content-Type") != "image/png" || h.Get("Content-Disposition") != `attachment; filename=pic.png` {
		t.Fatalf("asked attachment served with %v", h)
	}
}

func TestCheckName(t *testing.T) {
	for _, s := range []string{"tool", "1.0.0-rc.1+build", "ünïcödé", "日本語.tar.gz", "emoji-😀", "a b"} {
		if err := format.CheckName("name", s); err != nil {
			t.Errorf("CheckName(%q) = %v", s, err)
		}
		if err := format.CheckSegment("name", s); err != nil {
			t.Errorf("CheckSegment(%q) = %v", s, err)
		}
	}
	for _, c := range []struct{ s, cp string }{
		{"evil\u202Egpj.exe", "U+202E"},
		{"a\u202Ab", "U+202A"},
		{"a\u2066b", "U+2066"},
		{"a\u2069b", "U+2069"},
		{"a\u200Bb", "U+200B"},
		{"a\u200Fb", "U+200F"},
		{"a\u2060b", "U+2060"},
		{"a\u2064b", "U+2064"},
		{"\uFEFFa", "U+FEFF"},
		{"soft\u00ADhyphen", "U+00AD"},
		{"a\x00b", "U+0000"},
		{"a\x1bb", "U+001B"},
		{"a\x7fb", "U+007F"},
		{"a\u0085b", "U+0085"},
		{"a\u2028b", "U+2028"},
		{"tag\U000E0041", "U+E0041"},
	} {
		for what, check := range map[string]func(string, string) error{"CheckName": format.CheckName, "CheckSegment": format.CheckSegment} {
			err := check("file name", c.s)
			e := format.Classify(err)
			if err == nil || e.Status() != http.StatusBadRequest || !strings.Contains(e.Message, c.cp) || !strings.Contains(e.Message, "file name") {
				t.Errorf("%s(%q) = %v; want 400 naming %s", what, c.s, err, c.cp)
			}
		}
	}
	if err := format.CheckName("name", "a\xffb"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// spy records what reaches the blob store and the log.
type spy struct {
	blob.Store
	puts, applies int
}

func (s *spy) Put(context.Context, io.Reader, blob.PutOptions) (blob.Info, error) {
	s.puts++
	return blob.Info{Digest: "sha256:00"}, nil
}

func (s *spy) Apply(context.Context, meta.Command) (uint64, error) { s.applies++; return 1, nil }

// TestUploadNamesChecked: whatever a format parsed, a package name,
// version or path holding a hidden character is refused with 400 by the
// shared machinery, before the bytes are stored or anything committed.
func TestUploadNamesChecked(t *testing.T) {
	s := &spy{}
	d := &format.Writer{Env: &format.Env{}, Blobs: s, Commit: s}
	r := &format.Request{}
	repo := &meta.Repository{ID: "r", Name: "r", Format: "generic"}
	for _, u := range []format.Upload{
		{Repo: repo, Path: "p/1/evil\u202Egpj.exe", Package: "p", Version: "1"},
		{Repo: repo, Path: "p/1/f", Package: "p\u200B", Version: "1"},
		{Repo: repo, Path: "p/1/f", Package: "p", Version: "1\u2066"},
	} {
		u.Body = strings.NewReader("bytes")
		_, _, errStore := d.Store(t.Context(), r, u)
		_, _, errRecord := d.Record(t.Context(), r, u, blob.Info{Digest: "sha256:00"})
		_, errChange := d.ChangeCmd(r, repo, nil, []format.Placed{{Upload: u}}, nil)
		for _, err := range []error{errStore, errRecord, errChange} {
			if e := format.Classify(err); err == nil || e.Status() != http.StatusBadRequest || !strings.Contains(e.Message, "U+") {
				t.Errorf("upload %q %q %q: err %v, want 400 naming the code point", u.Package, u.Version, u.Path, err)
			}
		}
	}
	if s.puts != 0 || s.applies != 0 {
		t.Fatalf("refused uploads stored %d blobs and committed %d commands", s.puts, s.applies)
	}
}
