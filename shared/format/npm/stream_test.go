package npm

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/depot-registry/depot/shared/format"
)

// countingReader counts what a parser has read of its body.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// repeatReader yields b forever.
type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func wantStatus(t *testing.T, err error, status int, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want %d %q", status, msg)
	}
	if fe := format.Classify(err); fe.Status() != status || !strings.Contains(fe.Message, msg) {
		t.Fatalf("error %d %q, want %d mentioning %q", fe.Status(), fe.Message, status, msg)
	}
}

// TestReadDocumentKeyOrder: a document whose versions come after the
// attachment (the tarball is spilled before its checksums are known)
// publishes the same as npm's order.
func TestReadDocumentKeyOrder(t *testing.T) {
	data := pkgTgz(t)
	d := doc(t, "demo", "1.0.0", data)
	att, _ := json.Marshal(d["_attachments"])
	delete(d, "_attachments")
	rest, _ := json.Marshal(d)
	body := `{"_attachments":` + string(att) + `,` + string(rest[1:])
	dir := t.TempDir()
	parsed, err := ReadDocument(strings.NewReader(body), Name{Base: "demo"}, spillTarball(dir, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer parsed.Close()
	p, err := parsed.Publish(Name{Base: "demo"}, testLimits)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if !bytes.Equal(readAll(t, p.Tarball), data) || p.Version != "1.0.0" || p.Readme != "# hi" {
		t.Errorf("Publish = %+v", p)
	}
	// The spill file is unlinked as soon as it is made: a crash leaves
	// nothing in the scratch directory.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("scratch dir holds %d entries", len(ents))
	}
}

// TestReadDocumentEscapes: JSON escapes inside the base64 string decode as
// encoding/json decodes them.
func TestReadDocumentEscapes(t *testing.T) {
	data := []byte("any bytes >>> ??? ~~~ \xff\xfe")
	b64 := base64.StdEncoding.EncodeToString(data)
	esc := strings.NewReplacer("/", `\/`, "+", `\u002B`, "A", `\u0041`).Replace(b64)
	body := `{"_attachments":{"demo-1.0.0.tgz":{"data":"` + esc + `"}}}`
	d, err := ParseDocument([]byte(body), Name{Base: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d.Tarball); !bytes.Equal(got, data) {
		t.Errorf("decoded %q, want %q", got, data)
	}
}

// TestReadDocumentErrors: malformed documents are 400s in the words the
// handler used before; the body's own errors pass through unchanged.
func TestReadDocumentErrors(t *testing.T) {
	n := Name{Base: "demo"}
	cases := map[string]string{
		``:                                 "unexpected end",
		`  `:                               "unexpected end",
		`{"_attachments":`:                 "unexpected end",
		`{"_attachments":{"a":`:            "unexpected end",
		`{"_attachments":{"a":{"data":`:    "unexpected end",
		`{"_attachments":{"a":{"data":"AA`: "unexpected end",
		`{"name":`:                         "unexpected end",
		`{"name":"demo"} x`:                "after the document",
		`{"_attachments":{"demo-1.0.0.tgz":{"data":"!!"}}}`:                 "invalid package document",
		`{"_attachments":{"demo-1.0.0.tgz":{"data":"AAA"}}}`:                "invalid package document",
		`{"_attachments":{"demo-1.0.0.tgz":{"data":"AA\u0000=="}}}`:         "invalid package document",
		`{"_attachments":{"demo-1.0.0.tgz":{"data":3}}}`:                    "invalid package document",
		`{"_attachments":[]}`:                                               "invalid package document",
		`{"versions":{"1.0.0":{}},}`:                                        "invalid package document",
		`{"access":tru}`:                                                    "invalid package document",
		`{"name":"demo","name":"other"}`:                                    "document names",
		`[]`:                                                                "not a JSON object",
		`{"_attachments":{"a.tgz":{"data":""},"b.tgz":{"data":""}}}`:        "exactly one version and its tarball",
		`{"_attachments":{"a.tgz":{"data":"AAAA","data":"AAAA"}}}`:          "exactly one version and its tarball",
		`{"_attachments":{"a.tgz":{}},"_attachments":{"b.tgz":{}}}`:         "exactly one version and its tarball",
		`{"_attachments":{"demo-1.0.0.tgz":{"data":"AAAA"}}, "versions":7}`: "invalid package document",
	}
	for body, msg := range cases {
		_, err := ParseDocument([]byte(body), n)
		if err == nil {
			t.Errorf("%s: accepted", body)
			continue
		}
		if fe := format.Classify(err); fe.Status() != http.StatusBadRequest || !strings.Contains(fe.Message, msg) {
			t.Errorf("%s: %d %q, want 400 mentioning %q", body, fe.Status(), fe.Message, msg)
		}
	}
	// A body that fails mid-attachment reports its own error.
	broken := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(`{"_attachments":{"demo-1.0.0.tgz":{"data":"AAAA`), iotest.ErrReader(broken))
	if _, err := ReadDocument(r, n, spillTarball(t.TempDir(), 1<<20)); !errors.Is(err, broken) {
		t.Errorf("body failure: %v", err)
	}
}

// TestReadDocumentBounds: oversized parts are refused with 413 as soon as
// they pass their bound, without reading the rest of the body.
func TestReadDocumentBounds(t *testing.T) {
	n := Name{Base: "demo"}
	const slack = 128 << 10 // the scanner's buffer and the decoder's
	t.Run("tarball", func(t *testing.T) {
		const max = 1 << 20
		body := &countingReader{r: io.MultiReader(strings.NewReader(`{"_attachments":{"demo-1.0.0.tgz":{"data":"`), repeatReader('A'))}
		_, err := ReadDocument(body, n, spillTarball(t.TempDir(), max))
		wantStatus(t, err, http.StatusRequestEntityTooLarge, "tarball exceeds")
		if body.n > max*4/3+slack {
			t.Errorf("read %d bytes of an endless body to refuse a %d-byte tarball", body.n, max)
		}
	})
	t.Run("metadata", func(t *testing.T) {
		body := &countingReader{r: io.MultiReader(strings.NewReader(`{"readme":"`), repeatReader('x'))}
		_, err := ReadDocument(body, n, spillTarball(t.TempDir(), 1<<20))
		wantStatus(t, err, http.StatusRequestEntityTooLarge, "besides its tarball")
		if body.n > maxMetadata+slack {
			t.Errorf("read %d bytes of an endless readme", body.n)
		}
	})
	t.Run("second attachment", func(t *testing.T) {
		body := &countingReader{r: io.MultiReader(strings.NewReader(`{"_attachments":{"demo-1.0.0.tgz":{"data":"AAAA"},"sig":{"data":"`), repeatReader('A'))}
		_, err := ReadDocument(body, n, spillTarball(t.TempDir(), 1<<30))
		wantStatus(t, err, http.StatusBadRequest, "exactly one version and its tarball")
		if body.n > slack {
			t.Errorf("read %d bytes of a second attachment", body.n)
		}
	})
}

// TestReadDocumentMemory: a 16 MiB tarball streams through the parser
// into its spill file with a few buffers' worth of allocation.
func TestReadDocumentMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 16 MiB")
	}
	const size = 16 << 20
	pr, pw := io.Pipe()
	h := sha1.New()
	go func() {
		_, _ = io.WriteString(pw, `{"name":"demo","_attachments":{"demo-1.0.0.tgz":{"length":16777216,"data":"`)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for i := 0; i < size/len(chunk); i++ {
			_, _ = enc.Write(chunk)
			h.Write(chunk)
		}
		_ = enc.Close()
		_ = pw.CloseWithError(func() error { _, err := io.WriteString(pw, `"}}}`); return err }())
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := ReadDocument(pr, Name{Base: "demo"}, spillTarball(t.TempDir(), size))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Tarball.Size() != size {
		t.Fatalf("size %d", d.Tarball.Size())
	}
	if got, _ := d.Tarball.Sum("sha1"); hex.EncodeToString(got) != hex.EncodeToString(h.Sum(nil)) {
		t.Errorf("sha1 differs")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("parsing a %d-byte publish allocated %d bytes", size, alloc)
	}
}

// FuzzReadDocument: what the stream parser accepts is JSON, and the
// attachment bytes are those encoding/json decodes from the same body;
// what it refuses is the client's fault.
func FuzzReadDocument(f *testing.F) {
	f.Add(encode(f, doc(f, "demo", "1.0.0", pkgTgz(f))))
	f.Add([]byte(`{"_attachments":{"demo-1.0.0.tgz":{"data":"QU\/B\u0042Qg==","length":5}}}`))
	f.Add([]byte(`{"versions":{"1.0.0":{"deprecated":"x"}}, "_attachments" : null }`))
	f.Add([]byte(`{"_attachments":{"x":null},"dist-tags":{"a":"1"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := ParseDocument(body, Name{Base: "demo"})
		if err != nil {
			if fe := format.Classify(err); fe.Status()/100 != 4 {
				t.Fatalf("%q: %d %s, want a client error", body, fe.Status(), err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		// Decoded by hand, as encoding/json matches struct fields
		// regardless of case and the parser does not.
		var top map[string]json.RawMessage
		var atts map[string]map[string]json.RawMessage
		var want []byte
		err = json.Unmarshal(body, &top)
		if err == nil && top["_attachments"] != nil {
			err = json.Unmarshal(top["_attachments"], &atts)
		}
		for _, a := range atts {
			if err == nil && a["data"] != nil {
				err = json.Unmarshal(a["data"], &want)
			}
		}
		if err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		var got []byte
		if d.Tarball != nil {
			got = readAll(t, d.Tarball)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("attachment %q, encoding/json decodes %q", got, want)
		}
	})
}
