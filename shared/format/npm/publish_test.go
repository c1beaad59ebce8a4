package npm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"path"
	"strings"
	"testing"
)

var testLimits = Limits{MaxTarball: 1 << 20, MaxUnpacked: 1 << 20, MaxEntries: 100}

type entry struct {
	name string
	typ  byte
	body string
}

func makeTgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
			h.Linkname = "target"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(e.body))
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

func pkgTgz(t testing.TB) []byte {
	return makeTgz(t, entry{"package/package.json", tar.TypeReg, `{"name":"demo"}`}, entry{"package/lib/a.js", tar.TypeReg, "x"})
}

// doc builds a publish document the way npm 11 does.
func doc(t testing.TB, name, version string, data []byte) map[string]any {
	s1, s512 := sha1.Sum(data), sha512.Sum512(data)
	return map[string]any{
		"_id": name, "name": name, "description": "d", "dist-tags": map[string]any{"latest": version}, "access": nil,
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "readme": "# hi", "deprecated": "old", "keywords": []string{"k"},
			"dist": map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"shasum": hex.EncodeToString(s1[:]), "tarball": "http://evil.example/x.tgz"}}},
		"_attachments": map[string]any{name + "-" + version + ".tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(data), "length": len(data)}},
	}
}

func encode(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll reads a tarball's bytes.
func readAll(t testing.TB, tb Tarball) []byte {
	t.Helper()
	b, err := io.ReadAll(tb.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPublish(t *testing.T) {
	data := pkgTgz(t)
	n := Name{Scope: "acme", Base: "demo"}
	d, err := ParseDocument(encode(t, doc(t, "@acme/demo", "1.0.0", data)), n)
	if err != nil || !d.Publishing() {
		t.Fatalf("ParseDocument: %v", err)
	}
	p, err := d.Publish(n, testLimits)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if p.Version != "1.0.0" || !bytes.Equal(readAll(t, p.Tarball), data) || p.Readme != "# hi" || p.Deprecated != "old" ||
		len(p.Tags) != 1 || p.Tags[0] != "latest" {
		t.Errorf("Publish = %+v", p)
	}
	var m map[string]any
	_ = json.Unmarshal(p.Manifest, &m)
	dist := m["dist"].(map[string]any)
	if m["readme"] != nil || m["deprecated"] != nil || dist["tarball"] != nil || dist["shasum"] == nil || m["_id"] != "@acme/demo@1.0.0" {
		t.Errorf("stored manifest %s", p.Manifest)
	}
	if got := keywords(p.Manifest); len(got) != 1 || got[0] != "k" {
		t.Errorf("keywords %v", got)
	}
}

// TestPublisherIsTheRegistrys: a publisher the document names is dropped;
// the email stored is the one SetPublisher gives (the account's).
func TestPublisherIsTheRegistrys(t *testing.T) {
	data := pkgTgz(t)
	n := Name{Base: "demo"}
	in := doc(t, "demo", "1.0.0", data)
	in["versions"].(map[string]any)["1.0.0"].(map[string]any)["_npmUser"] = map[string]string{"name": "root", "email": "forged@example.com"}
	d, err := ParseDocument(encode(t, in), n)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Publish(n, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(p.Manifest), "forged") || strings.Contains(string(p.Manifest), "_npmUser") {
		t.Fatalf("the document's publisher was kept: %s", p.Manifest)
	}
	if err := p.SetPublisher("alice@example.com"); err != nil {
		t.Fatal(err)
	}
	var m struct {
		User map[string]string `json:"_npmUser"`
	}
	if err := json.Unmarshal(p.Manifest, &m); err != nil || m.User["email"] != "alice@example.com" || len(m.User) != 1 {
		t.Fatalf("stored publisher %v (%v) in %s", m.User, err, p.Manifest)
	}
}

func TestPublishRejects(t *testing.T) {
	data := pkgTgz(t)
	n := Name{Base: "demo"}
	edits := map[string]func(d map[string]any){
		"two versions": func(d map[string]any) {
			d["versions"].(map[string]any)["2.0.0"] = map[string]any{}
		},
		"no dist": func(d map[string]any) {
			delete(d["versions"].(map[string]any)["1.0.0"].(map[string]any), "dist")
		},
		"bad integrity": func(d map[string]any) {
			d["versions"].(map[string]any)["1.0.0"].(map[string]any)["dist"].(map[string]any)["integrity"] = "sha512-AAAA"
		},
		"unknown integrity only": func(d map[string]any) {
			dist := d["versions"].(map[string]any)["1.0.0"].(map[string]any)["dist"].(map[string]any)
			dist["integrity"] = "md5-AAAA"
			delete(dist, "shasum")
		},
		"manifest version differs": func(d map[string]any) {
			d["versions"].(map[string]any)["1.0.0"].(map[string]any)["version"] = "1.0.1"
		},
		"tag at another version": func(d map[string]any) { d["dist-tags"] = map[string]any{"next": "0.9.0"} },
		"empty tarball": func(d map[string]any) {
			d["_attachments"].(map[string]any)["demo-1.0.0.tgz"].(map[string]any)["data"] = ""
		},
	}
	for what, edit := range edits {
		d := doc(t, "demo", "1.0.0", data)
		edit(d)
		parsed, err := ParseDocument(encode(t, d), n)
		if err == nil {
			_, err = parsed.Publish(n, testLimits)
		}
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	if _, err := ParseDocument(encode(t, doc(t, "other", "1.0.0", data)), n); err == nil {
		t.Errorf("document of another package accepted")
	}
	big := Limits{MaxTarball: 10, MaxUnpacked: 1 << 20, MaxEntries: 10}
	d, _ := ParseDocument(encode(t, doc(t, "demo", "1.0.0", data)), n)
	if _, err := d.Publish(n, big); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized tarball: %v", err)
	}
}

func TestCheckTarball(t *testing.T) {
	if err := CheckTarball(bytes.NewReader(pkgTgz(t)), int64(len(pkgTgz(t))), testLimits); err != nil {
		t.Fatalf("good tarball: %v", err)
	}
	manifest := entry{"package/package.json", tar.TypeReg, "{}"}
	bad := map[string][]byte{
		"not gzip":     []byte("hello"),
		"truncated":    pkgTgz(t)[:30],
		"traversal":    makeTgz(t, manifest, entry{"package/../../etc/passwd", tar.TypeReg, "x"}),
		"absolute":     makeTgz(t, manifest, entry{"/etc/passwd", tar.TypeReg, "x"}),
		"symlink":      makeTgz(t, manifest, entry{"package/link", tar.TypeSymlink, ""}),
		"hardlink":     makeTgz(t, manifest, entry{"package/link", tar.TypeLink, ""}),
		"no manifest":  makeTgz(t, entry{"package/index.js", tar.TypeReg, "x"}),
		"deep only":    makeTgz(t, entry{"package/sub/package.json", tar.TypeReg, "x"}),
		"too big":      makeTgz(t, manifest, entry{"package/big", tar.TypeReg, strings.Repeat("x", 2<<20)}),
		"backslash":    makeTgz(t, manifest, entry{"package\\..\\x", tar.TypeReg, "x"}),
		"gzip garbage": append(pkgTgz(t), 0x1f, 0x8b, 0, 0),
	}
	many := []entry{manifest}
	for i := 0; i < 101; i++ {
		many = append(many, entry{"package/f" + strings.Repeat("x", i), tar.TypeReg, ""})
	}
	bad["too many entries"] = makeTgz(t, many...)
	for what, data := range bad {
		if err := CheckTarball(bytes.NewReader(data), int64(len(data)), testLimits); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}

func TestUpdate(t *testing.T) {
	body := `{"_id":"demo","name":"demo","_rev":"2-x","dist-tags":{"latest":"1.0.0"},"versions":{
		"1.0.0":{"name":"demo","version":"1.0.0","deprecated":"gone"},"1.1.0":{"name":"demo","version":"1.1.0","deprecated":false}}}`
	d, err := ParseDocument([]byte(body), Name{Base: "demo"})
	if err != nil || d.Publishing() {
		t.Fatalf("ParseDocument: %v", err)
	}
	u, err := d.Update()
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Versions) != 2 || u.Versions["1.0.0"] != "gone" || u.Versions["1.1.0"] != "" || u.Latest != "1.0.0" {
		t.Errorf("Update = %+v", u)
	}
	for _, bad := range []string{`{"name":"demo"}`, `{"versions":{"x":{}}}`, `{"versions":{"1.0.0":3}}`} {
		d, err := ParseDocument([]byte(bad), Name{Base: "demo"})
		if err == nil {
			_, err = d.Update()
		}
		if err == nil {
			t.Errorf("Update(%s) accepted", bad)
		}
	}
}

func TestCheckIntegrity(t *testing.T) {
	data := []byte("abc")
	s512 := sha512.Sum512(data)
	s1 := sha1.Sum(data)
	good := "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	for _, sri := range []string{good, good + "?opt", "md5-xx " + good, good + " sha1-" + base64.StdEncoding.EncodeToString(s1[:])} {
		if err := CheckIntegrity(sri, memTarball(data).Sum); err != nil {
			t.Errorf("CheckIntegrity(%q) = %v", sri, err)
		}
	}
	for _, sri := range []string{"", "md5-xx", "sha512", "sha512-!!", good + " sha1-AAAA", "sha256-" + base64.StdEncoding.EncodeToString(s512[:32])} {
		if err := CheckIntegrity(sri, memTarball(data).Sum); err == nil {
			t.Errorf("CheckIntegrity(%q) accepted", sri)
		}
	}
}

// FuzzPublish feeds arbitrary documents to the publish parser: it must
// not panic, and what it accepts is a verified single version.
func FuzzPublish(f *testing.F) {
	data := pkgTgz(f)
	f.Add(encode(f, doc(f, "demo", "1.0.0", data)))
	f.Add([]byte(`{"name":"demo","versions":{"1.0.0":{"name":"demo","version":"1.0.0","dist":{"shasum":"00"}}},"_attachments":{"demo-1.0.0.tgz":{"data":"AA=="}}}`))
	f.Add([]byte(`{"versions":{"1.0.0":{"deprecated":"x"}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n := Name{Base: "demo"}
		d, err := ParseDocument(body, n)
		if err != nil {
			return
		}
		if !d.Publishing() {
			_, _ = d.Update()
			return
		}
		p, err := d.Publish(n, testLimits)
		if err != nil {
			return
		}
		data := readAll(t, p.Tarball)
		s1 := sha1.Sum(data)
		if p.SHA1 != hex.EncodeToString(s1[:]) {
			t.Fatalf("unverified tarball accepted")
		}
		if _, ok := ParseVersion(p.Version); !ok || CheckTarball(bytes.NewReader(data), int64(len(data)), testLimits) != nil {
			t.Fatalf("invalid publish accepted: %+v", p)
		}
		if !json.Valid(p.Manifest) {
			t.Fatalf("invalid manifest %q", p.Manifest)
		}
	})
}

// FuzzCheckTarball: arbitrary bytes never panic or escape the bounds.
func FuzzCheckTarball(f *testing.F) {
	f.Add(pkgTgz(f))
	f.Add(makeTgz(f, entry{"package/../x", tar.TypeReg, "x"}))
	f.Add([]byte{0x1f, 0x8b, 8, 0})
	lim := Limits{MaxTarball: 1 << 16, MaxUnpacked: 1 << 16, MaxEntries: 50}
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckTarball(bytes.NewReader(data), int64(len(data)), lim) != nil {
			return
		}
		// Accepted: walk it again independently; it must be within every
		// bound the check promises.
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("accepted a tarball that is not gzip: %v", err)
		}
		zr.Multistream(false)
		tr := tar.NewReader(zr)
		var total int64
		entries, manifest := 0, false
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("accepted a malformed tarball: %v", err)
			}
			entries++
			n, _ := io.Copy(io.Discard, tr)
			total += n
			clean := path.Clean(strings.TrimPrefix(h.Name, "./"))
			if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(h.Name, "\\") {
				t.Fatalf("accepted an entry escaping the package: %q", h.Name)
			}
			if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
				t.Fatalf("accepted entry %q of type %q", h.Name, h.Typeflag)
			}
			if h.Typeflag == tar.TypeReg && strings.Count(strings.Trim(h.Name, "/"), "/") == 1 && path.Base(h.Name) == "package.json" {
				manifest = true
			}
		}
		if entries > lim.MaxEntries || total > lim.MaxUnpacked || !manifest {
			t.Fatalf("accepted %d entries, %d bytes unpacked, package.json %v; limits %+v", entries, total, manifest, lim)
		}
	})
}
