package pypi

import (
	"bytes"
	"io"
	"mime/multipart"
	"strings"
	"testing"
)

// form builds a multipart body: fields (name, value) and then, when
// filename is not "", the content part.
func form(t testing.TB, fields [][2]string, filename string, content []byte) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		_ = w.WriteField(f[0], f[1])
	}
	if filename != "" {
		fw, _ := w.CreateFormFile("content", filename)
		_, _ = fw.Write(content)
	}
	_ = w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// collect is a sink that keeps the file and what the form held then.
type collect struct {
	file     []byte
	filename string
	before   int
	calls    int
}

func (c *collect) sink(f *Form, filename string, body io.Reader) error {
	c.calls++
	c.filename, c.before = filename, len(f.Fields)
	var err error
	c.file, err = io.ReadAll(body)
	return err
}

func TestParseUpload(t *testing.T) {
	content := bytes.Repeat([]byte("wheel"), 1000)
	body, ct := form(t, [][2]string{{":action", "file_upload"}, {"name", "Demo"}, {"classifiers", "A"}, {"classifiers", "B"}},
		"demo-1.0.tar.gz", content)
	var c collect
	f, err := ParseUpload(bytes.NewReader(body), ct, DefaultLimits, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	if f.Get("name") != "Demo" || len(f.Fields["classifiers"]) != 2 || f.Filename != "demo-1.0.tar.gz" {
		t.Fatalf("form %+v", f)
	}
	if c.calls != 1 || !bytes.Equal(c.file, content) || c.filename != "demo-1.0.tar.gz" || c.before != 3 {
		t.Fatalf("sink saw %d calls, %d bytes, %q, %d fields before", c.calls, len(c.file), c.filename, c.before)
	}

	// The file name is passed on as sent, traversal included, for the
	// caller to refuse.
	body, ct = form(t, nil, "../../x.whl", []byte("x"))
	f, err = ParseUpload(bytes.NewReader(body), ct, DefaultLimits, c.sink)
	if err != nil || f.Filename != "../../x.whl" {
		t.Fatalf("traversal name: %+v %v", f, err)
	}
}

func TestParseUploadRejects(t *testing.T) {
	lim := Limits{MaxParts: 4, MaxFieldBytes: 10, MaxFormBytes: 25}
	twoFiles := func() ([]byte, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for i := 0; i < 2; i++ {
			fw, _ := w.CreateFormFile("content", "a-1.tar.gz")
			_, _ = fw.Write([]byte("x"))
		}
		_ = w.Close()
		return b.Bytes(), w.FormDataContentType()
	}
	bigIgnoredFile := func() ([]byte, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		fw, _ := w.CreateFormFile("gpg_signature", "a.asc")
		_, _ = fw.Write(bytes.Repeat([]byte("s"), 100))
		_ = w.Close()
		return b.Bytes(), w.FormDataContentType()
	}
	cases := map[string]func() ([]byte, string){
		"not multipart": func() ([]byte, string) { return []byte("{}"), "application/json" },
		"no boundary":   func() ([]byte, string) { return []byte("x"), "multipart/form-data" },
		"field too big": func() ([]byte, string) {
			return form(t, [][2]string{{"description", strings.Repeat("d", 11)}}, "", nil)
		},
		"form too big": func() ([]byte, string) {
			return form(t, [][2]string{{"a", strings.Repeat("d", 10)}, {"b", strings.Repeat("d", 10)}, {"c", strings.Repeat("d", 10)}}, "", nil)
		},
		"too many parts": func() ([]byte, string) {
			return form(t, [][2]string{{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}, {"e", "1"}}, "", nil)
		},
		"two files":        twoFiles,
		"big ignored file": bigIgnoredFile,
		"truncated": func() ([]byte, string) {
			b, ct := form(t, [][2]string{{"a", "1"}}, "a-1.tar.gz", []byte("xyz"))
			return b[:len(b)-10], ct
		},
		"garbage": func() ([]byte, string) { return []byte("--B\r\nno headers end"), "multipart/form-data; boundary=B" },
		"no disposition": func() ([]byte, string) {
			return []byte("--B\r\nX-A: b\r\n\r\nv\r\n--B--\r\n"), "multipart/form-data; boundary=B"
		},
		"nameless part": func() ([]byte, string) {
			return []byte("--B\r\nContent-Disposition: form-data\r\n\r\nv\r\n--B--\r\n"), "multipart/form-data; boundary=B"
		},
		"attachment": func() ([]byte, string) {
			return []byte("--B\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--B--\r\n"), "multipart/form-data; boundary=B"
		},
		"field name in nul": func() ([]byte, string) {
			return []byte("--B\r\nContent-Disposition: form-data; name=\"a\x00\"\r\n\r\nv\r\n--B--\r\n"), "multipart/form-data; boundary=B"
		},
	}
	for name, mk := range cases {
		body, ct := mk()
		var c collect
		if f, err := ParseUpload(bytes.NewReader(body), ct, lim, c.sink); err == nil {
			t.Errorf("%s: accepted %+v", name, f)
		}
	}
}

func FuzzParseUpload(f *testing.F) {
	b, ct := form(f, [][2]string{{":action", "file_upload"}, {"name", "a"}}, "a-1.tar.gz", []byte("data"))
	f.Add(b, ct)
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"content\"; filename=\"x\"\r\n\r\nv\r\n--B--\r\n"), "multipart/form-data; boundary=B")
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=41\r\n--B--"), "multipart/form-data; boundary=B")
	lim := Limits{MaxParts: 8, MaxFieldBytes: 64, MaxFormBytes: 256}
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		var got int64
		calls := 0
		form, err := ParseUpload(bytes.NewReader(body), ct, lim, func(_ *Form, _ string, r io.Reader) error {
			calls++
			n, err := io.Copy(io.Discard, r)
			got += n
			return err
		})
		if err != nil {
			return
		}
		// What is kept in memory stays within the limits, and the file
		// is never kept at all.
		var total, parts int
		for _, vs := range form.Fields {
			for _, v := range vs {
				if int64(len(v)) > lim.MaxFieldBytes {
					t.Fatalf("field of %d bytes kept", len(v))
				}
				total += len(v)
				parts++
			}
		}
		if int64(total) > lim.MaxFormBytes || parts+calls > lim.MaxParts || calls > 1 || got > int64(len(body)) {
			t.Fatalf("limits broken: %d bytes in %d fields, %d files", total, parts, calls)
		}
	})
}
