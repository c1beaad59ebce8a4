package pypi_test

import (
	"archive/zip"
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// reply is an answer read in full.
type reply struct {
	Status int
	Header http.Header
	Body   string
}

// noRedirect shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// call sends one request; user "" is anonymous, else Basic user:pass.
func call(t *testing.T, method, url, user, pass string, header map[string]string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// want fails unless the reply has status and, for errors, a plain-text
// body containing msg.
func (r reply) want(t *testing.T, status int, msg string) reply {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if status >= 400 && !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("error content type %q, want text/plain", r.Header.Get("Content-Type"))
	}
	if !strings.Contains(r.Body, msg) {
		t.Fatalf("body %q lacks %q", r.Body, msg)
	}
	return r
}

// field is one text field of an upload form.
type field struct{ k, v string }

// uploadForm builds a legacy upload body the way the errors need it:
// fields, then the "content" file (omitted when filename is "").
func uploadForm(t *testing.T, fields []field, filename string, content []byte) ([]byte, map[string]string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f.k, f.v); err != nil {
			t.Fatal(err)
		}
	}
	if filename != "" {
		fw, err := w.CreateFormFile("content", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), map[string]string{"Content-Type": w.FormDataContentType()}
}

// fieldsFor are the fields of a valid upload of content as filename.
func fieldsFor(name, version, filetype string, content []byte) []field {
	s := sha256.Sum256(content)
	m := md5.Sum(content)
	return []field{{":action", "file_upload"}, {"protocol_version", "1"}, {"name", name}, {"version", version},
		{"filetype", filetype}, {"pyversion", "source"}, {"metadata_version", "2.1"}, {"summary", "a test"},
		{"requires_python", ">=3.8"}, {"sha256_digest", hex.EncodeToString(s[:])}, {"md5_digest", hex.EncodeToString(m[:])}}
}

// replace returns fields with key set to v (appended when absent; v ""
// removes it).
func replace(fields []field, key, v string) []field {
	out := make([]field, 0, len(fields)+1)
	done := false
	for _, f := range fields {
		if f.k == key {
			done = true
			if v == "" {
				continue
			}
			f.v = v
		}
		out = append(out, f)
	}
	if !done && v != "" {
		out = append(out, field{key, v})
	}
	return out
}

// zipOf builds a zip archive of name -> content.
func zipOf(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, f := range files {
		fw, err := w.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const metadataOf = "Metadata-Version: 2.1\nName: %s\nVersion: %s\nRequires-Python: >=3.9\n\ndescription\n"
