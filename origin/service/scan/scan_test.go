package scan

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// TestExactVersion: what each ecosystem's declarations pin, and what
// they leave to the client.
func TestExactVersion(t *testing.T) {
	for _, c := range []struct {
		eco, constraint, want string
		exact                 bool
	}{
		{vuln.Go, "v1.2.3", "v1.2.3", true},
		{vuln.Go, "v0.0.0-20240101000000-abcdef123456", "v0.0.0-20240101000000-abcdef123456", true},
		{vuln.NPM, "1.2.3", "1.2.3", true},
		{vuln.NPM, "^1.2.3", "", false},
		{vuln.NPM, "latest", "", false},
		{vuln.NPM, "github:x/y", "", false},
		{vuln.PyPI, "==2.0.1", "2.0.1", true},
		{vuln.PyPI, "=== 2.0.1", "2.0.1", true},
		{vuln.PyPI, "(==1.26.17)", "1.26.17", true},
		{vuln.PyPI, ">=2.0", "", false},
		{vuln.PyPI, "==2.*", "", false},
		{vuln.Crates, "=1.0.0", "1.0.0", true},
		{vuln.Crates, "1.0.0", "", false},
		{vuln.Maven, "31.1-jre", "31.1-jre", true},
		{vuln.Maven, "[4.1.99.Final]", "4.1.99.Final", true},
		{vuln.Maven, "[1.0,2.0)", "", false},
		{vuln.Maven, "${netty.version}", "", false},
		{vuln.NuGet, "6.0.0", "6.0.0", true},
		{vuln.NuGet, "[6.0.0, )", "", false},
		{vuln.RubyGems, "= 2.2.3", "2.2.3", true},
		{vuln.RubyGems, "~> 2.2", "", false},
		{vuln.Packagist, "v5.4.1", "5.4.1", true},
		{vuln.Packagist, "^5.4", "", false},
	} {
		got, exact := exactVersion(c.eco, c.constraint)
		if exact != c.exact || exact && got != c.want {
			t.Errorf("%s %q: %q %v, want %q %v", c.eco, c.constraint, got, exact, c.want, c.exact)
		}
	}
}

// TestReadAdvisories: a zip of records (other files skipped), one
// record, an array; a bad record refuses the whole upload, naming it.
func TestReadAdvisories(t *testing.T) {
	ctx := context.Background()
	read := func(b []byte) ([]vuln.Advisory, error) { return ReadAdvisories(ctx, bytes.NewReader(b), int64(len(b))) }
	advs, err := read(vulntest.Zip(t, "npm"))
	if err != nil || len(advs) != 474 {
		t.Fatalf("the npm zip: %d records, %v", len(advs), err)
	}
	one := `{"id":"X-1","modified":"2026-01-01T00:00:00Z","affected":[{"package":{"ecosystem":"npm","name":"x"},"versions":["1.0.0"]}]}`
	if advs, err := read([]byte(one)); err != nil || len(advs) != 1 || advs[0].ID != "X-1" {
		t.Errorf("one record: %v %v", advs, err)
	}
	if advs, err := read([]byte("[" + one + "," + strings.Replace(one, "X-1", "X-2", 1) + "]")); err != nil || len(advs) != 2 {
		t.Errorf("an array: %v %v", advs, err)
	}
	_, err = read([]byte(`[` + one + `, {"id": "bad/id"}]`))
	var fe *format.Error
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("a bad record: %v", err)
	}
	if _, err := read([]byte("not json")); err == nil {
		t.Error("garbage was read")
	}
}

// TestLeaderTakesOver: a scan another leader left running is queued
// again and completed by the next, with those still queued; the report
// says nothing covers a generic file.
func TestLeaderTakesOver(t *testing.T) {
	env := formattest.New(t)
	repo := env.Repo("files", "generic")
	ctx := context.Background()
	var ids []string
	for i, v := range []string{"1", "2", "3"} {
		info, err := env.Blobs.Put(ctx, strings.NewReader("file "+v), blob.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := meta.Artifact{ID: "a" + v, RepositoryID: repo.ID, Path: "tool/" + v + "/f", PackageName: "tool", Version: v,
			Digest: info.Digest, SizeBytes: info.Size, UploadedAt: time.Now()}
		if _, err := env.Apply(ctx, &meta.ArtifactPut{Artifact: a}); err != nil {
			t.Fatal(err)
		}
		sc := meta.Scan{ID: "s" + v, ArtifactID: a.ID, Scanner: Scanner, Status: meta.ScanQueued, Trigger: "request",
			CreatedAt: time.Now().Add(time.Duration(i) * time.Millisecond)}
		if _, err := env.Apply(ctx, &meta.ScansRequest{Scans: []meta.Scan{sc}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sc.ID)
	}
	// The old leader took s1 and stopped leading.
	var s1 *meta.Scan
	_ = env.Store.View(func(tx *meta.Tx) error { s1, _ = tx.Scan("s1"); return nil })
	s1.Status, s1.Node = meta.ScanRunning, "gone"
	if _, err := env.Apply(ctx, &meta.ScanUpdate{Scan: *s1, Was: meta.ScanQueued}); err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Store: env.Store, Commit: env, Blobs: env.Blobs, NewID: func() string { return "x" }, Node: "next",
		Poll: 20 * time.Millisecond})
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var finished []meta.Scan
		_ = env.Store.View(func(tx *meta.Tx) error {
			for _, id := range ids {
				if s, _ := tx.Scan(id); s != nil && s.Status == meta.ScanCompleted {
					finished = append(finished, *s)
				}
			}
			return nil
		})
		if len(finished) == len(ids) {
			if finished[0].Node != "next" || finished[0].NotScanned != 1 {
				t.Errorf("s1 after the takeover: %+v", finished[0])
			}
			rep, err := svc.OpenReport(ctx, &finished[0])
			if err != nil || len(rep.NotScanned) != 1 || rep.NotScanned[0].Reason != "no advisory data covers generic packages" {
				t.Errorf("report: %+v %v", rep, err)
			}
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d scans completed", len(finished), len(ids))
		}
	}
}

// TestDirectory: the leader loads the advisories directory's files, and
// a file added later; the same records again change nothing.
func TestDirectory(t *testing.T) {
	env := formattest.New(t)
	dir := t.TempDir()
	record := func(id string) string {
		return `{"id":"` + id + `","modified":"2026-01-01T00:00:00Z","affected":[{"package":{"ecosystem":"npm","name":"x"},"versions":["1.0.0"]}]}`
	}
	if err := os.WriteFile(filepath.Join(dir, "one.json"), []byte(record("D-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Store: env.Store, Commit: env, Blobs: env.Blobs, NewID: func() string { return "x" }, Poll: 10 * time.Millisecond,
		Directory: func() string { return dir }})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	defer func() { stop(); <-done }()
	count := func() (int, int) {
		var db *meta.AdvisoryDB
		_ = env.Store.View(func(tx *meta.Tx) error { db = tx.AdvisoryDB(); return nil })
		if db == nil {
			return 0, 0
		}
		return db.Advisories, len(db.Loads)
	}
	wait := func(want int) int {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if n, loads := count(); n == want {
				return loads
			}
		}
		n, _ := count()
		t.Fatalf("%d advisories, want %d", n, want)
		return 0
	}
	wait(1)
	if err := os.WriteFile(filepath.Join(dir, "two.json"), []byte(record("D-2")), 0o644); err != nil {
		t.Fatal(err)
	}
	loads := wait(2)
	time.Sleep(300 * time.Millisecond) // several more looks: nothing changed
	if _, again := count(); again != loads {
		t.Errorf("loads %d then %d with nothing new", loads, again)
	}
}
