package composer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

func TestNextModified(t *testing.T) {
	t0 := time.Date(2024, 1, 2, 15, 4, 5, 0, time.UTC)
	ms := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, c := range []struct {
		prev, now, want time.Time
	}{
		{time.Time{}, ms(600 * time.Millisecond), t0},                       // first: now, in whole seconds
		{t0.Add(-time.Hour), ms(600 * time.Millisecond), t0},                // later than before
		{t0, ms(600 * time.Millisecond), t0.Add(time.Second)},               // the same second: one more
		{t0, t0, t0.Add(time.Second)},                                       // the very same instant
		{t0.Add(10 * time.Second), t0, t0.Add(11 * time.Second)},            // a clock behind
		{t0, ms(1500 * time.Millisecond), t0.Add(time.Second)},              // the next second
		{t0, ms(3*time.Second + time.Millisecond), t0.Add(3 * time.Second)}, // now again
	} {
		if got := nextModified(c.prev, c.now); !got.Equal(c.want) {
			t.Errorf("nextModified(%v, %v) = %v, want %v", c.prev, c.now, got, c.want)
		}
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// modifiedNode serves the format over e's store with the clock now, as
// an origin does (formattest.Node's nodes tell the wall clock).
func modifiedNode(t *testing.T, e *formattest.Env, now func() time.Time) (*Format, *format.Writer, string) {
	authn := &auth.Authenticator{Meta: e.Store, Now: time.Now, Hasher: auth.NewHasher(1), JWT: auth.NewJWT(auth.RandomSecret(), time.Now)}
	env := &format.Env{Meta: e.Store, Now: now, Tokens: authn}
	f, w := New(env), e.Writer(env)
	srv := format.NewServer(f, env, w, authn, slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(httpx.Forwarded(httpx.NewFormatHandler(srv, "/composer", e.Blobs), httpx.Proxies{}, ""))
	t.Cleanup(hs.Close)
	return f, w, hs.URL
}

// TestLastModified: packages.json, list.json and each package's p2 files
// are dated; a date moves forward, in whole seconds, with every change of
// what the document shows, even two within a second, a delete of the
// newest version (a date taken from the uploads would go back) and a
// change decided by a clock behind; it does not move for changes the
// document does not show. A client's If-Modified-Since with the date it
// was given gets a 304 until the next change, and a 200 after it. A
// package stored before dates were kept has none until its next change.
func TestLastModified(t *testing.T) {
	e := formattest.New(t)
	repo := e.Repo("php", Name)
	t0 := time.Date(2024, 1, 2, 15, 4, 5, 600_000_000, time.UTC)
	c := &clock{t: t0}
	f, w, base := modifiedNode(t, e, c.Now)
	date := func(d time.Duration) string { return t0.Truncate(time.Second).Add(d).UTC().Format(http.TimeFormat) }
	put := func(name, version string) {
		t.Helper()
		zip := formattest.Zip(t, map[string]string{"composer.json": `{"name":"` + name + `","version":"` + version + `"}`})
		if code, body := e.Do("PUT", base+"/composer/"+repo.Name, "application/zip", zip); code != http.StatusCreated {
			t.Fatalf("upload %s %s: %d %s", name, version, code, body)
		}
	}
	del := func(name, version string) {
		t.Helper()
		var a *meta.Artifact
		_ = e.Store.View(func(tx *meta.Tx) error {
			var err error
			a, err = tx.ArtifactByPath(repo.ID, name+"/"+version+"/"+strings.ReplaceAll(name, "/", "-")+"-"+version+".zip")
			return err
		})
		if a == nil {
			t.Fatalf("no artifact for %s %s", name, version)
		}
		if _, err := f.DeleteArtifact(context.Background(), &format.Request{Repo: repo, Principal: &auth.Principal{}}, w, a); err != nil {
			t.Fatalf("delete %s %s: %v", name, version, err)
		}
	}
	get := func(path string, hdr map[string]string) formattest.Answer {
		t.Helper()
		return formattest.Fetch(t, base, formattest.Call{Method: "GET", Path: "/composer/php" + path, Header: hdr}, e.Basic())
	}
	// dated checks path's date (want "": none), that a client with it is
	// answered 304, and one with an older one the document; it returns the
	// document.
	dated := func(path, want string) string {
		t.Helper()
		a := get(path, nil)
		if a.Status != http.StatusOK || a.Header.Get("Last-Modified") != want {
			t.Fatalf("%s: %d, Last-Modified %q, want %q", path, a.Status, a.Header.Get("Last-Modified"), want)
		}
		if want == "" {
			if r := get(path, map[string]string{"If-Modified-Since": "Sat, 01 Jan 2050 00:00:00 GMT"}); r.Status != http.StatusOK {
				t.Errorf("%s, undated, with If-Modified-Since: %d", path, r.Status)
			}
			return a.Body
		}
		if r := get(path, map[string]string{"If-Modified-Since": want}); r.Status != http.StatusNotModified || r.Body != "" {
			t.Errorf("%s with If-Modified-Since its date: %d %q", path, r.Status, r.Body)
		}
		lm, _ := http.ParseTime(want)
		if r := get(path, map[string]string{"If-Modified-Since": lm.Add(-time.Second).Format(http.TimeFormat)}); r.Status != http.StatusOK || r.Body != a.Body {
			t.Errorf("%s with If-Modified-Since a second before its date: %d %q", path, r.Status, r.Body)
		}
		return a.Body
	}
	versions := func(doc, name string) []string {
		var d struct {
			Packages map[string][]struct{ Version string }
		}
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("%v: %s", err, doc)
		}
		var out []string
		for _, v := range d.Packages[name] {
			out = append(out, v.Version)
		}
		return out
	}
	const p2, dev = "/p2/acme/greeter.json", "/p2/acme/greeter~dev.json"

	put("acme/greeter", "1.0.0")
	dated(p2, date(0))
	dated(dev, date(0))
	dated("/packages.json", date(0))
	dated("/list.json", date(0))
	dated("/search.json?q=acme", "")

	// Within the same second: a second later all the same.
	put("acme/greeter", "1.1.0")
	if vs := versions(dated(p2, date(time.Second)), "acme/greeter"); len(vs) != 2 {
		t.Fatalf("p2 lists %v", vs)
	}
	dated(dev, date(time.Second))
	dated("/packages.json", date(0)) // the same names
	dated("/list.json", date(0))

	// The newest version deleted: later again, not the older upload's.
	del("acme/greeter", "1.1.0")
	if vs := versions(dated(p2, date(2*time.Second)), "acme/greeter"); len(vs) != 1 || vs[0] != "1.0.0" {
		t.Fatalf("p2 after the delete lists %v", vs)
	}
	if r := get(p2, map[string]string{"If-Modified-Since": date(time.Second)}); r.Status != http.StatusOK || len(versions(r.Body, "acme/greeter")) != 1 {
		t.Errorf("p2 with the date before the delete: %d %s", r.Status, r.Body)
	}
	dated("/packages.json", date(0))

	// Another package: the names change, the first package's file does not.
	c.Set(t0.Add(5 * time.Second))
	put("acme/other", "0.1.0")
	dated("/packages.json", date(5*time.Second))
	dated("/p2/acme/other.json", date(5*time.Second))
	dated(p2, date(2*time.Second))

	// The last version deleted: the package is gone from the names.
	c.Set(t0.Add(10 * time.Second))
	del("acme/greeter", "1.0.0")
	if a := get(p2, nil); a.Status != http.StatusNotFound {
		t.Fatalf("p2 of a package with no version: %d", a.Status)
	}
	if doc := dated("/packages.json", date(10*time.Second)); strings.Contains(doc, "acme/greeter") {
		t.Fatalf("packages.json still names the package: %s", doc)
	}

	// Uploaded again by a node whose clock is behind: still later.
	c.Set(t0)
	put("acme/greeter", "1.0.0")
	dated(p2, date(11*time.Second))
	dated("/packages.json", date(11*time.Second))

	// A package stored before dates were kept has none, nor have the
	// names, until their next change.
	put("acme/legacy", "1.0.0")
	if _, err := e.Apply(context.Background(), &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{
		format.KVDelete(modifiedKey("acme/legacy")), format.KVDelete(namesKey)}}); err != nil {
		t.Fatal(err)
	}
	dated("/p2/acme/legacy.json", "")
	dated("/packages.json", "")
	put("acme/legacy", "1.1.0")
	dated("/p2/acme/legacy.json", date(0))
	dated("/packages.json", "") // the same names
	c.Set(t0.Add(time.Minute))
	put("acme/new", "1.0.0")
	dated("/packages.json", date(time.Minute))
}

// TestLastModifiedConcurrent: uploads of one package decided at once,
// within one second, each date the package a second later than the one
// before: none is lost to another read before it committed.
func TestLastModifiedConcurrent(t *testing.T) {
	e := formattest.New(t)
	e.Hop = 5 * time.Millisecond // the decisions overlap
	e.Repo("php", Name)
	t0 := time.Date(2024, 1, 2, 15, 4, 5, 0, time.UTC)
	_, _, base := modifiedNode(t, e, func() time.Time { return t0 })
	const n = 4
	var zips [n][]byte
	for i := range zips {
		zips[i] = formattest.Zip(t, map[string]string{"composer.json": fmt.Sprintf(`{"name":"acme/greeter","version":"1.0.%d"}`, i)})
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("PUT", base+"/composer/php", bytes.NewReader(zips[i]))
			req.Header.Set("Authorization", e.Basic())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("upload %d: %v", i, err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("upload %d: %d %s", i, resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a := formattest.Fetch(t, base, formattest.Call{Method: "GET", Path: "/composer/php/p2/acme/greeter.json"}, e.Basic())
	if want := t0.Add((n - 1) * time.Second).Format(http.TimeFormat); a.Header.Get("Last-Modified") != want {
		t.Fatalf("after %d uploads at %v: Last-Modified %q, want %q", n, t0, a.Header.Get("Last-Modified"), want)
	}
}
