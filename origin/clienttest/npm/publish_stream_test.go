package npm

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestStalledBodiesBlockNoPublish: clients that send a write's headers and
// part of its body, then stall, hold nothing another write waits for: not
// the node's publish slots (there are twice as many stalled publishes as
// slots), nor the lock of the package they name.
func TestStalledBodiesBlockNoPublish(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("js", "npm", false)
	u := clienttest.NewUser(e, "alice")
	e.Grant(repoID, u.ID, false, "read", "write", "delete")
	e.Do("PUT", "/npm/js/demo", u.Token, publishDoc(t, "demo", "1.0.0", goodTgz(t), nil)).Want(201)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()

	type write struct {
		path, partial string
		length        int // announced, more than partial
	}
	stalled := []write{
		{"/npm/js/demo", `{"name":"demo","_attachments":{"demo-2.0.0.tgz":{"data":"H4sI`, 1 << 20},
		{"/npm/js/demo/-rev/1-x", `{"name":"demo","versions":{`, 1 << 20},
		{"/npm/js/-/package/demo/dist-tags/beta", `"1.0`, 10},
	}
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("slow%d", i)
		stalled = append(stalled, write{"/npm/js/" + name,
			`{"name":"` + name + `","_attachments":{"` + name + `-1.0.0.tgz":{"data":"H4sI`, 1 << 20})
	}
	for _, s := range stalled {
		conn, err := net.Dial("tcp", e.Server.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(deadline)
		// With Expect: 100-continue the server answers 100 only once the
		// handler reads the body: past that point the old handler held
		// the slot and the package lock while it waited for the rest.
		fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", s.path, clienttest.HostPort(e), u.Token, s.length)
		status, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(status, " 100 ") {
			t.Fatalf("stalled PUT %s: the handler never read its body (%q, %v): earlier stalled writes block it", s.path, status, err)
		}
		if _, err := io.WriteString(conn, s.partial); err != nil {
			t.Fatal(err)
		}
	}

	req, _ := http.NewRequestWithContext(ctx, "PUT", e.URL+"/npm/js/demo", strings.NewReader(string(publishDoc(t, "demo", "1.1.0", goodTgz(t), nil))))
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a publish beside %d stalled writes did not complete: %v", len(stalled), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish beside stalled writes: status %d", resp.StatusCode)
	}
}

// TestLargePublishStreams: a 64 MiB tarball is published, or refused for a
// wrong shasum, without the origin holding it in memory: the whole request
// (client, generator and origin share this process) allocates a small
// fraction of its size. Versions follow the attachment here, so the
// origin checks the shasum only after it has the bytes.
func TestLargePublishStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 64 MiB")
	}
	e := clienttest.Start(t)
	repoID := e.CreateRepo("js", "npm", false)
	const size = 64 << 20
	for _, c := range []struct {
		name   string
		wrong  bool
		status int
	}{{"big", false, http.StatusCreated}, {"bad", true, http.StatusBadRequest}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		status, body := publishStream(t, e, c.name, size, c.wrong)
		runtime.ReadMemStats(&after)
		if status != c.status {
			t.Fatalf("%s: status %d, want %d: %s", c.name, status, c.status, body)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
			t.Errorf("%s: publishing a %d MiB tarball allocated %d MiB", c.name, size>>20, alloc>>20)
		}
	}
	if n, bytes := e.RepoCounters(repoID); n != 1 || bytes < size {
		t.Errorf("artifact_count %d size_bytes %d, want the one good publish", n, bytes)
	}
	e.Do("HEAD", "/npm/js/big/-/big-1.0.0.tgz", e.Admin, nil).Want(200)
}

// publishStream PUTs a publish of name@1.0.0 whose tarball (a package.json
// and size bytes of noise) is generated as it is sent; versions come last,
// with the tarball's checksums (a wrong shasum when wrong).
func publishStream(t *testing.T, e *origintest.Env, name string, size int, wrong bool) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprintf(pw, `{"_id":%q,"name":%q,"_attachments":{"%s-1.0.0.tgz":{"content_type":"application/octet-stream","data":"`, name, name, name)
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		s1, s512 := sha1.New(), sha512.New()
		writeTgz(io.MultiWriter(enc, s1, s512), name, size)
		_ = enc.Close()
		shasum := hex.EncodeToString(s1.Sum(nil))
		if wrong {
			shasum = strings.Repeat("0", 40)
		}
		_, err := fmt.Fprintf(pw, `"}},"dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":%q,"version":"1.0.0",`+
			`"dist":{"shasum":%q,"integrity":"sha512-%s"}}}}`, name, shasum, base64.StdEncoding.EncodeToString(s512.Sum(nil)))
		pw.CloseWithError(err)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", e.URL+"/npm/js/"+name, pr)
	req.Header.Set("Authorization", "Bearer "+e.Admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// writeTgz writes a package tarball with size bytes of noise in it;
// stored, not compressed, so that the tarball is as large as its content.
func writeTgz(w io.Writer, name string, size int) {
	zw, _ := gzip.NewWriterLevel(w, gzip.NoCompression)
	tw := tar.NewWriter(zw)
	manifest := fmt.Sprintf(`{"name":%q,"version":"1.0.0"}`, name)
	_ = tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg})
	_, _ = io.WriteString(tw, manifest)
	_ = tw.WriteHeader(&tar.Header{Name: "package/noise.bin", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg})
	chunk := make([]byte, 64<<10)
	rng := rand.NewChaCha8([32]byte{byte(len(name))})
	for left := size; left > 0; left -= len(chunk) {
		_, _ = rng.Read(chunk)
		_, _ = tw.Write(chunk[:min(left, len(chunk))])
	}
	_ = tw.Close()
	_ = zw.Close()
}
