package oci

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
)

const d256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func code(err error) string {
	var e *ociError
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

func TestParsePath(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Target
		ok   bool
	}{
		{"/r/img/tags/list", Target{KindTags, "r/img", ""}, true},
		{"/r/a/b/manifests/latest", Target{KindManifest, "r/a/b", "latest"}, true},
		{"/r/img/blobs/" + d256, Target{KindBlob, "r/img", d256}, true},
		{"/r/img/blobs/uploads/", Target{KindUploads, "r/img", ""}, true},
		{"/r/img/blobs/uploads", Target{KindUploads, "r/img", ""}, true},
		{"/r/img/blobs/uploads/0123", Target{KindSession, "r/img", "0123"}, true},
		{"/r/img/referrers/" + d256, Target{KindReferrers, "r/img", d256}, true},
		// The last component decides: names may contain API words.
		{"/r/blobs/manifests/x", Target{KindManifest, "r/blobs", "x"}, true},
		{"/r/manifests/tags/list", Target{KindTags, "r/manifests", ""}, true},
		{"/r/blobs/uploads/blobs/" + d256, Target{KindBlob, "r/blobs/uploads", d256}, true},
		{"/", Target{}, false},
		{"/token", Target{}, false},
		{"/_catalog", Target{}, false},
		{"/r/img", Target{}, false},
		{"/manifests/x", Target{}, false},
	} {
		got, ok := ParsePath(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParsePath(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseName(t *testing.T) {
	for _, ok := range []string{"r/img", "my-repo/a/b.c/d__e", "r/a--b"} {
		if _, err := ParseName(ok); err != nil {
			t.Errorf("ParseName(%q): %v", ok, err)
		}
	}
	n, _ := ParseName("r/a/b")
	if n.Repo != "r" || n.Image != "a/b" || n.String() != "r/a/b" {
		t.Errorf("split %+v", n)
	}
	for _, bad := range []string{"", "solo", "R/img", "r//img", "r/img/", "r/../x", "r/.x", "r/img-", "r/" + strings.Repeat("a", 300), "r/im g", "r/img@x"} {
		if _, err := ParseName(bad); code(err) != codeNameInvalid {
			t.Errorf("ParseName(%q) = %v, want NAME_INVALID", bad, err)
		}
	}
}

func TestParseReference(t *testing.T) {
	if r, err := ParseReference("v1.0_rc-1"); err != nil || r.Tag != "v1.0_rc-1" {
		t.Errorf("tag: %+v %v", r, err)
	}
	if r, err := ParseReference(d256); err != nil || r.Digest != d256 {
		t.Errorf("digest: %+v %v", r, err)
	}
	for _, bad := range []string{"", ".x", "-x", strings.Repeat("a", 129), "a/b", "x y"} {
		if _, err := ParseReference(bad); code(err) != codeManifestInvalid {
			t.Errorf("ParseReference(%q) = %v", bad, err)
		}
	}
	for _, bad := range []string{"sha256:abc", "md5:d41d8cd98f00b204e9800998ecf8427e", "sha256:" + strings.ToUpper(d256[7:]), "blake3:" + d256[7:], ":x"} {
		if _, err := ParseReference(bad); code(err) != codeDigestInvalid {
			t.Errorf("ParseReference(%q) = %v, want DIGEST_INVALID", bad, err)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in         string
		start, end int64
		ok         bool
	}{
		{"0-99", 0, 99, true},
		{"100-100", 100, 100, true},
		{"bytes 5-9", 5, 9, true},
		{"bytes=5-9", 5, 9, true},
		{"5-9/10", 5, 9, true},
		{"9-5", 0, 0, false},
		{"-5", 0, 0, false},
		{"5-", 0, 0, false},
		{"+1-2", 0, 0, false},
		{"a-b", 0, 0, false},
		{"", 0, 0, false},
		{"99999999999999999999-1", 0, 0, false},
	} {
		s, e, ok := ParseContentRange(c.in)
		if ok != c.ok || (ok && (s != c.start || e != c.end)) {
			t.Errorf("ParseContentRange(%q) = %d, %d, %v", c.in, s, e, ok)
		}
	}
}

const cfg = `{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + d256 + `","size":2}`

func TestParseManifest(t *testing.T) {
	img := `{"schemaVersion":2,"mediaType":"` + MediaOCIManifest + `","config":` + cfg + `,"layers":[` + cfg + `],` +
		`"subject":` + cfg + `,"annotations":{"a":"b"}}`
	m, err := ParseManifest(MediaOCIManifest, []byte(img))
	if err != nil || m.MediaType != MediaOCIManifest || len(m.Blobs()) != 2 || m.Subject == nil || m.Annotations["a"] != "b" ||
		m.RefArtifactType() != "application/vnd.oci.image.config.v1+json" {
		t.Fatalf("image: %+v %v", m, err)
	}
	// Without a Content-Type the body says what it is.
	idx := `{"schemaVersion":2,"manifests":[` + cfg + `],"artifactType":"x/y"}`
	if m, err := ParseManifest("", []byte(idx)); err != nil || m.MediaType != MediaOCIIndex || len(m.Manifests) != 1 || m.RefArtifactType() != "x/y" {
		t.Fatalf("index: %+v %v", m, err)
	}
	docker := `{"schemaVersion":2,"mediaType":"` + MediaDockerManifest + `","config":` + cfg + `,"layers":[` +
		`{"mediaType":"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip","digest":"` + d256 + `","size":1,"urls":["http://x"]}]}`
	if m, err := ParseManifest(MediaDockerManifest+"; charset=utf-8", []byte(docker)); err != nil || len(m.Blobs()) != 1 {
		t.Fatalf("docker with a foreign layer: %+v %v", m, err)
	}
	for name, c := range map[string]struct{ ct, body string }{
		"not json":        {MediaOCIManifest, "{"},
		"schema 1":        {"", `{"schemaVersion":1}`},
		"no version":      {MediaOCIManifest, `{"config":` + cfg + `}`},
		"unsupported":     {"application/x", `{"schemaVersion":2,"mediaType":"application/x"}`},
		"type mismatch":   {MediaOCIIndex, img},
		"index w/ config": {MediaOCIIndex, `{"schemaVersion":2,"config":` + cfg + `,"manifests":[]}`},
		"no config":       {MediaOCIManifest, `{"schemaVersion":2,"layers":[]}`},
		"bad digest":      {MediaOCIManifest, `{"schemaVersion":2,"config":{"mediaType":"a","digest":"sha256:x","size":1}}`},
		"negative size":   {MediaOCIManifest, `{"schemaVersion":2,"config":{"mediaType":"a","digest":"` + d256 + `","size":-1}}`},
		"no media type":   {MediaOCIManifest, `{"schemaVersion":2,"config":{"digest":"` + d256 + `","size":1}}`},
		"array":           {MediaOCIManifest, `[]`},
	} {
		if _, err := ParseManifest(c.ct, []byte(c.body)); code(err) != codeManifestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	big := make([]byte, MaxManifestSize+1)
	if _, err := ParseManifest(MediaOCIManifest, big); format.Classify(err).Status() != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: %v", err)
	}
}

func TestPage(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		n    int
		last string
		want []string
		more bool
	}{
		{-1, "", all, false},
		{2, "", []string{"a", "b"}, true},
		{2, "b", []string{"c", "d"}, false},
		{0, "", []string{}, true},
		{10, "bb", []string{"c", "d"}, false},
		{1, "z", []string{}, false},
	} {
		got, more := Page(all, c.n, c.last)
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("Page(%d, %q) = %v, %v", c.n, c.last, got, more)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(MediaOCIManifest, []byte(`{"schemaVersion":2,"config":`+cfg+`,"layers":[`+cfg+`]}`))
	f.Add("", []byte(`{"schemaVersion":2,"manifests":[`+cfg+`],"subject":`+cfg+`}`))
	f.Add(MediaDockerList, []byte(`{"schemaVersion":2,"mediaType":"`+MediaDockerList+`","manifests":[]}`))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		m, err := ParseManifest(ct, body)
		if err != nil {
			if code(err) != codeManifestInvalid {
				t.Fatalf("error with code %q: %v", code(err), err)
			}
			return
		}
		if !supportedManifest(m.MediaType) || (IsIndex(m.MediaType) && m.Config != nil) || (!IsIndex(m.MediaType) && m.Config == nil) {
			t.Fatalf("accepted an inconsistent manifest: %+v", m)
		}
		for _, d := range append(m.Blobs(), m.Manifests...) {
			if _, _, err := ParseDigest(d.Digest); err != nil || d.Size < 0 {
				t.Fatalf("accepted descriptor %+v", d)
			}
		}
	})
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/r/img/tags/list", "/r/a/blobs/uploads/x", "/r/blobs/manifests/" + d256, "//", "/a/referrers/b"} {
		f.Add(s)
	}
	routes := New(&format.Env{}).Routes()
	f.Fuzz(func(t *testing.T, p string) {
		tg, ok := ParsePath(p)
		if !ok {
			return
		}
		if tg.Kind == KindNone {
			t.Fatalf("ok without a kind: %q", p)
		}
		if n, err := ParseName(tg.Name); err == nil {
			if strings.Contains(n.String(), "..") || strings.ContainsAny(n.String(), "@:\\") {
				t.Fatalf("unsafe name accepted: %q", n.String())
			}
		}
		// Route matching agrees with the parser: at most one route per method.
		for _, m := range []string{"GET", "PUT", "POST", "PATCH", "DELETE"} {
			hits := 0
			for _, r := range routes {
				if r.Match != nil && r.Method == m {
					if _, ok := r.Match(p); ok {
						hits++
					}
				}
			}
			if hits > 1 {
				t.Fatalf("%s %q matches %d routes", m, p, hits)
			}
		}
	})
}

func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"latest", d256, "sha512:" + strings.Repeat("a", 128), "md5:x", "r/img"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReference(s)
		if err != nil {
			if c := code(err); c != codeManifestInvalid && c != codeDigestInvalid {
				t.Fatalf("code %q", c)
			}
		} else if (r.Tag == "") == (r.Digest == "") || strings.ContainsAny(r.Tag+r.Digest, "/@\x00") {
			t.Fatalf("ParseReference(%q) = %+v", s, r)
		}
		if n, err := ParseName(s); err == nil && (n.Repo == "" || n.Image == "" || len(s) > MaxNameLength) {
			t.Fatalf("ParseName(%q) = %+v", s, n)
		}
		if ValidUploadID(s) && len(s) != 32 {
			t.Fatalf("upload id %q", s)
		}
	})
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"0-0", "bytes 1-2", "bytes=3-4/5", "-1", "9-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, end, ok := ParseContentRange(s)
		if ok && (start < 0 || end < start) {
			t.Fatalf("ParseContentRange(%q) = %d, %d", s, start, end)
		}
	})
}
