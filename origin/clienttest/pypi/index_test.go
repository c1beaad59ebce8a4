package pypi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// checkIndex reads the simple index that twine's uploads produced (twine
// names the project "Demo-Pkg", setuptools the files "Demo_Pkg-..."), in
// both representations: links with sha256 fragments, escaped
// requires-python, core metadata for wheels only, normalized names.
func checkIndex(t *testing.T, base, user, pass string, lib []string) {
	html := map[string]string{"Accept": "text/html"}
	jsonAccept := map[string]string{"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.01"}

	list := call(t, "GET", base+"/simple/", user, pass, html, nil).want(t, 200, `<a href="`+base+`/simple/demo-pkg/">Demo-Pkg</a>`)
	if ct := list.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("project list content type %q", ct)
	}
	var projects struct {
		Meta     map[string]string `json:"meta"`
		Projects []struct{ Name string }
	}
	r := call(t, "GET", base+"/simple/", user, pass, jsonAccept, nil).want(t, 200, "")
	if err := json.Unmarshal([]byte(r.Body), &projects); err != nil || len(projects.Projects) != 2 || projects.Meta["api-version"] == "" {
		t.Fatalf("JSON project list: %v %s", err, r.Body)
	}

	page := call(t, "GET", base+"/simple/demo-pkg/", user, pass, html, nil).want(t, 200, "Links for Demo-Pkg")
	var doc struct {
		Name     string
		Versions []string
		Files    []struct {
			Filename       string
			URL            string
			Hashes         map[string]string
			RequiresPython string            `json:"requires-python"`
			CoreMetadata   map[string]string `json:"core-metadata"`
			Size           int64
		}
	}
	r = call(t, "GET", base+"/simple/demo-pkg/", user, pass, jsonAccept, nil).want(t, 200, "")
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.pypi.simple.v1+json" {
		t.Fatalf("JSON page content type %q", ct)
	}
	if err := json.Unmarshal([]byte(r.Body), &doc); err != nil || doc.Name != "Demo-Pkg" || len(doc.Files) != 2 ||
		len(doc.Versions) != 1 || doc.Versions[0] != "1.0.0" {
		t.Fatalf("JSON project page: %v %s", err, r.Body)
	}
	byName := map[string]int{}
	for i, f := range doc.Files {
		byName[f.Filename] = i
	}
	for _, f := range lib {
		sum, size := sha256File(t, f)
		name := filepath.Base(f)
		url := base + "/files/demo-pkg/1.0.0/" + name
		if !strings.Contains(page.Body, `<a href="`+url+`#sha256=`+sum+`" data-requires-python="&gt;=3.8"`) {
			t.Errorf("HTML page lacks the link of %s: %s", name, page.Body)
		}
		i, ok := byName[name]
		if !ok {
			t.Fatalf("JSON page lacks %s: %s", name, r.Body)
		}
		jf := doc.Files[i]
		if jf.Filename != name || jf.URL != url || jf.Hashes["sha256"] != sum || jf.RequiresPython != ">=3.8" || jf.Size != size {
			t.Errorf("JSON entry of %s: %+v", name, jf)
		}
		isWheel := strings.HasSuffix(name, ".whl")
		if isWheel != (jf.CoreMetadata != nil) {
			t.Errorf("JSON core-metadata of %s: %v", name, jf.CoreMetadata)
		}
		if !isWheel {
			call(t, "GET", url+".metadata", user, pass, nil, nil).want(t, http.StatusNotFound, "no metadata")
			continue
		}
		m := call(t, "GET", url+".metadata", user, pass, nil, nil).want(t, 200, "Name: Demo-Pkg")
		s := sha256.Sum256([]byte(m.Body))
		if got := hex.EncodeToString(s[:]); got != jf.CoreMetadata["sha256"] ||
			!strings.Contains(page.Body, `data-core-metadata="sha256=`+got+`"`) ||
			!strings.Contains(page.Body, `data-dist-info-metadata="sha256=`+got+`"`) {
			t.Errorf("metadata of %s hashes to %s; advertised %v", name, got, jf.CoreMetadata)
		}
		head := call(t, "HEAD", url, user, pass, nil, nil).want(t, 200, "")
		if head.Header.Get("X-Checksum-Sha256") != sum {
			t.Errorf("HEAD %s: %v", name, head.Header)
		}
	}

	for _, alias := range []string{"Demo_Pkg", "demo.pkg", "DEMO--pkg"} {
		r := call(t, "GET", base+"/simple/"+alias+"/", user, pass, nil, nil).want(t, http.StatusMovedPermanently, "")
		if loc := r.Header.Get("Location"); loc != base+"/simple/demo-pkg/" {
			t.Errorf("%s redirects to %q", alias, loc)
		}
	}
	call(t, "GET", base+"/simple/no-such-project/", user, pass, nil, nil).want(t, http.StatusNotFound, "not found")
	call(t, "GET", base+"/files/demo-pkg/1.0.0/nothing-1.0.0.tar.gz", user, pass, nil, nil).want(t, http.StatusNotFound, "not found")
}
