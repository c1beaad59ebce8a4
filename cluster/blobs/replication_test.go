package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/fs"
)

// TestPutReachesAQuorum: a write returns once a majority of the voters
// hold its blob (this origin and one of two peers), the third gets it in
// the background; with one peer down a write still succeeds, with both
// it is refused.
func TestPutReachesAQuorum(t *testing.T) {
	c := newOrigins(t, 3, nil)
	info, err := c.put(0, randomBlob(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.holding(info.Digest); len(got) < 2 || got[0] != 0 {
		t.Fatalf("when Put returned the blob was on origins %v, want this one and a peer", got)
	}
	c.waitHolding(info.Digest, 0, 1, 2)

	c.down[2].Store(true)
	if info, err = c.put(0, randomBlob(t)); err != nil {
		t.Fatalf("a write with one peer down: %v", err)
	}
	if got := c.holding(info.Digest); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("with origin 2 down the blob is on %v", got)
	}

	c.down[1].Store(true)
	if _, err := c.put(0, randomBlob(t)); !errors.Is(err, blob.ErrUnreplicated) {
		t.Fatalf("a write with both peers down: %v, want ErrUnreplicated", err)
	}
}

// TestCommitReachesAQuorum: an upload's commit is a write like a Put.
func TestCommitReachesAQuorum(t *testing.T) {
	c := newOrigins(t, 3, nil)
	commit := func() (blob.Info, error) {
		u, err := c.stores[0].Create(t.Context(), []byte("label"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Append(t.Context(), bytes.NewReader(randomBlob(t)), 0); err != nil {
			t.Fatal(err)
		}
		return u.Commit(t.Context(), blob.Checksums{})
	}
	info, err := commit()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.holding(info.Digest); len(got) < 2 {
		t.Fatalf("when Commit returned the blob was on origins %v", got)
	}
	c.down[1].Store(true)
	c.down[2].Store(true)
	if _, err := commit(); !errors.Is(err, blob.ErrUnreplicated) {
		t.Fatalf("a commit with both peers down: %v, want ErrUnreplicated", err)
	}
}

// TestLoneOrigin: a lone origin is its own quorum and asks no one.
func TestLoneOrigin(t *testing.T) {
	c := newOrigins(t, 1, nil)
	if _, err := c.put(0, randomBlob(t)); err != nil {
		t.Fatal(err)
	}
	if n := c.hits[0].get("HEAD") + c.hits[0].get("PUT"); n != 0 {
		t.Fatalf("a lone origin made %d requests", n)
	}
}

// TestNonVotersAreNotCounted: the quorum is of the voters; a non-voter is
// not pushed to and does not count.
func TestNonVotersAreNotCounted(t *testing.T) {
	c := newOrigins(t, 3, nil)
	c.setMembers(func(ms []blobs.Member) []blobs.Member { ms[2].Voter = false; return ms })
	info, err := c.put(0, randomBlob(t))
	if err != nil {
		t.Fatal(err)
	}
	if !c.has(1, info.Digest) || c.hits[2].get("PUT")+c.hits[2].get("HEAD") != 0 {
		t.Fatalf("the blob is on %v; the non-voter was asked %d times", c.holding(info.Digest), c.hits[2].get("PUT")+c.hits[2].get("HEAD"))
	}
	c.down[1].Store(true)
	if _, err := c.put(0, randomBlob(t)); !errors.Is(err, blob.ErrUnreplicated) {
		t.Fatalf("with the other voter down: %v, want ErrUnreplicated", err)
	}
}

// TestCopiesPutsOnTheHolders: under Copies(2) of four origins a write
// reaches a majority of the blob's two holders (both), whether or not
// the origin that took it is one of them, and no other origin.
func TestCopiesPutsOnTheHolders(t *testing.T) {
	p := blobs.Copies(2)
	c := newOrigins(t, 4, p)

	// Not placed on the origin that takes the write: both holders first.
	b := c.blobPlaced(p, 1, 2)
	info, err := c.put(0, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.holding(info.Digest); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("when Put returned the blob was on %v, want the two holders (and the origin that took it)", got)
	}
	if n := c.hits[3].get("PUT") + c.hits[3].get("HEAD"); n != 0 {
		t.Fatalf("origin 3, no holder, was asked %d times", n)
	}

	// Placed on it: one more holder is the quorum.
	b = c.blobPlaced(p, 0, 3)
	if info, err = c.put(0, b); err != nil {
		t.Fatal(err)
	}
	if !c.has(3, info.Digest) {
		t.Fatalf("when Put returned the blob was on %v, want the other holder too", c.holding(info.Digest))
	}
	for i := 1; i <= 3; i++ {
		if n := c.hits[i].get("PUT"); n != 1 {
			t.Fatalf("origin %d was pushed %d blobs, want the one it holds", i, n)
		}
	}

	// A holder down: the write cannot be on a majority of its holders.
	c.down[2].Store(true)
	if _, err := c.put(0, c.blobPlaced(p, 1, 2)); !errors.Is(err, blob.ErrUnreplicated) {
		t.Fatalf("a holder down: %v, want ErrUnreplicated", err)
	}
}

// TestOpenFetchesFromAHolder: a read of a blob missing here fetches it
// from the origins placement names for it first (the leader first among
// them), checks it and keeps it.
func TestOpenFetchesFromAHolder(t *testing.T) {
	read := func(t *testing.T, s *blobs.Store, want []byte) {
		t.Helper()
		f, err := s.Open(t.Context(), digestOf(want))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer f.Close()
		if got, _ := io.ReadAll(f); !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes, not the blob", len(got))
		}
	}
	t.Run("copies", func(t *testing.T) {
		p := blobs.Copies(1)
		c := newOrigins(t, 3, p)
		c.lead(1) // asked first if placement were not asked
		b := c.blobPlaced(p, 2)
		c.putHere(2, b)
		read(t, c.stores[0], b)
		if c.hits[1].get("GET") != 0 || c.hits[2].get("GET") != 1 {
			t.Fatalf("GETs: %d at the leader, %d at the holder; want the holder asked alone", c.hits[1].get("GET"), c.hits[2].get("GET"))
		}
		if !c.has(0, digestOf(b)) {
			t.Fatal("the fetched blob was not kept")
		}
	})
	t.Run("everywhere", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		c.lead(2)
		b := randomBlob(t)
		c.putHere(1, b)
		c.putHere(2, b)
		read(t, c.stores[0], b)
		if c.hits[1].get("GET") != 0 || c.hits[2].get("GET") != 1 {
			t.Fatalf("GETs: %d at origin 1, %d at the leader; want the leader asked first", c.hits[1].get("GET"), c.hits[2].get("GET"))
		}
	})
	t.Run("a peer's bad bytes are refused", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "not the blob") }))
		defer liar.Close()
		c.setMembers(func(ms []blobs.Member) []blobs.Member {
			ms[0].Leader = false
			return append(ms, blobs.Member{ID: "liar", Addr: liar.Listener.Addr().String(), Voter: true, Leader: true})
		})
		b := randomBlob(t)
		c.putHere(2, b)
		read(t, c.stores[0], b)
	})
	t.Run("nowhere", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		if _, err := c.stores[0].Open(t.Context(), digestOf([]byte("nowhere"))); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Open of a blob no origin has: %v, want ErrNotFound", err)
		}
	})
	t.Run("one fetch for many readers", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		b := randomBlob(t)
		c.putHere(0, b)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { read(t, c.stores[1], b) })
		}
		wg.Wait()
		if n := c.hits[0].get("GET"); n != 1 {
			t.Fatalf("%d fetches for 8 readers", n)
		}
	})
}

// TestRepair: a pass fetches the referenced blobs placement puts here
// that are missing, and nothing else; under Copies it drops a copy
// placement does not put here once the holders have it and it is no
// longer recent.
func TestRepair(t *testing.T) {
	t.Run("everywhere", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		b := randomBlob(t)
		c.putHere(1, b)
		c.refs = []string{digestOf(b), digestOf([]byte("lost"))}
		res, err := c.stores[0].Repair(t.Context())
		if err != nil || res != (blobs.RepairResult{Full: true, Checked: 2, Fetched: 1, Failed: 1}) {
			t.Fatalf("Repair = %+v, %v", res, err)
		}
		if !c.has(0, digestOf(b)) {
			t.Fatal("the repaired blob is not here")
		}
		// What the pass counted and did, for health and metrics: two
		// missing, one fetched (its bytes), one still missing.
		st := c.stores[0].RepairStatus()
		if st.Running || st.Total != 2 || st.Done != 2 || st.Failed != 1 || st.Bytes != int64(len(b)) || st.Operation != "blob_repair" {
			t.Errorf("RepairStatus = %+v", st)
		}
		if f := c.stores[0].RepairFigures(); f != (blobs.RepairFigures{Missing: 1, Fetched: 1, FetchedBytes: int64(len(b)), Failed: 1}) {
			t.Errorf("RepairFigures = %+v", f)
		}
		if res, _ = c.stores[0].Repair(t.Context()); res.Fetched != 0 || res.Failed != 1 {
			t.Fatalf("a second pass = %+v", res)
		}
		if f := c.stores[0].RepairFigures(); f.Missing != 1 || f.Failed != 2 {
			t.Errorf("after a second pass RepairFigures = %+v", f)
		}
		// Alone among the voters, an origin has nowhere to fetch from.
		c.setMembers(func(ms []blobs.Member) []blobs.Member { ms[1].Voter, ms[2].Voter = false, false; return ms })
		if res, _ = c.stores[2].Repair(t.Context()); res != (blobs.RepairResult{}) || c.has(2, digestOf(b)) {
			t.Fatalf("a pass with one voter = %+v", res)
		}
	})
	t.Run("copies", func(t *testing.T) {
		p := blobs.Copies(1)
		c := newOrigins(t, 3, p)
		b := c.blobPlaced(p, 2)
		d := digestOf(b)
		c.putHere(1, b) // it took the upload, say
		c.refs = []string{d}
		if res, _ := c.stores[0].Repair(t.Context()); res.Checked != 0 || c.has(0, d) {
			t.Fatalf("a pass on an origin placement does not name = %+v", res)
		}
		// Not on its holder yet: the other copy stays.
		c.clock.Set(c.clock.Now().Add(2 * time.Hour))
		if res, _ := c.stores[1].Repair(t.Context()); res.Dropped.Count != 0 || !c.has(1, d) {
			t.Fatalf("a copy its holder lacks was dropped: %+v", res)
		}
		if res, _ := c.stores[2].Repair(t.Context()); res.Fetched != 1 || !c.has(2, d) {
			t.Fatalf("the holder's pass = %+v", res)
		}
		// Made recent again (a write of the same bytes): kept for the grace.
		if _, err := c.locals[1].Put(t.Context(), bytes.NewReader(b), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if res, _ := c.stores[1].Repair(t.Context()); res.Dropped.Count != 0 || !c.has(1, d) {
			t.Fatalf("a recent copy was dropped: %+v", res)
		}
		c.clock.Set(c.clock.Now().Add(2 * time.Hour))
		res, err := c.stores[1].Repair(t.Context())
		if err != nil || res.Dropped != (blob.Swept{Count: 1, Bytes: int64(len(b))}) {
			t.Fatalf("Repair = %+v, %v; want the copy dropped", res, err)
		}
		c.waitHolding(d, 2)
	})
	t.Run("incremental", func(t *testing.T) {
		c := newOrigins(t, 3, nil)
		b1, b2 := randomBlob(t), randomBlob(t)
		c.putHere(1, b1)
		c.refs = []string{digestOf(b1)}
		if res, err := c.stores[0].Repair(t.Context()); err != nil || res != (blobs.RepairResult{Full: true, Checked: 1, Fetched: 1}) {
			t.Fatalf("the first pass = %+v, %v", res, err)
		}
		// Referenced since: only that is checked. A blob lost from the
		// disk meanwhile is not looked for...
		c.putHere(1, b2)
		c.refs = append(c.refs, digestOf(b2))
		if err := c.locals[0].Delete(t.Context(), digestOf(b1)); err != nil {
			t.Fatal(err)
		}
		if res, err := c.stores[0].Repair(t.Context()); err != nil || res != (blobs.RepairResult{Checked: 1, Fetched: 1}) {
			t.Fatalf("a pass after one new reference = %+v, %v", res, err)
		}
		if res, _ := c.stores[0].Repair(t.Context()); res != (blobs.RepairResult{}) {
			t.Fatalf("a pass with nothing new = %+v", res)
		}
		// ...until the voters change: then everything is checked again.
		c.setMembers(func(ms []blobs.Member) []blobs.Member { ms[2].Voter = false; return ms })
		if res, _ := c.stores[0].Repair(t.Context()); res != (blobs.RepairResult{Full: true, Checked: 2, Fetched: 1}) || !c.has(0, digestOf(b1)) {
			t.Fatalf("a pass after the voters changed = %+v", res)
		}
		// ...and once an hour.
		if err := c.locals[0].Delete(t.Context(), digestOf(b1)); err != nil {
			t.Fatal(err)
		}
		if res, _ := c.stores[0].Repair(t.Context()); res != (blobs.RepairResult{}) {
			t.Fatalf("a pass with nothing new = %+v", res)
		}
		c.clock.Set(c.clock.Now().Add(time.Hour))
		if res, _ := c.stores[0].Repair(t.Context()); res != (blobs.RepairResult{Full: true, Checked: 2, Fetched: 1}) || !c.has(0, digestOf(b1)) {
			t.Fatalf("a pass an hour after the last whole one = %+v", res)
		}
	})
}

// TestRepairLoop: the loop runs a pass at each tick of its clock until
// its context ends.
func TestRepairLoop(t *testing.T) {
	c := newOrigins(t, 2, nil)
	b := randomBlob(t)
	c.putHere(1, b)
	c.refs = []string{digestOf(b)}
	ticks := make(chan time.Time)
	local, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := blobs.New(blobs.Config{Self: "origin-0", Local: local, Members: blobs.MembersFunc(c.membership), Peers: peerrpc.NewClient(c.dial),
		Referenced: c.referenced, After: func(time.Duration) <-chan time.Time { return ticks }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.RepairLoop(ctx); close(done) }()
	if _, err := local.Stat(t.Context(), digestOf(b)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatal("repaired before the first tick")
	}
	ticks <- time.Time{}
	ticks <- time.Time{} // the first pass is over once the loop waits again
	if _, err := local.Stat(t.Context(), digestOf(b)); err != nil {
		t.Fatalf("not repaired after a tick: %v", err)
	}
	cancel()
	<-done
}

// TestUploadContinuesOnItsOrigin: an upload id handed out by one origin
// is continued there from the others: appends with the size each saw as
// a precondition, a commit that puts the blob on a quorum, a cancel; an
// id of no origin, or of one that is down, is unknown.
func TestUploadContinuesOnItsOrigin(t *testing.T) {
	c := newOrigins(t, 3, nil)
	ctx := t.Context()
	u, err := c.stores[0].Create(ctx, []byte("label"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Append(ctx, strings.NewReader("hello "), 0); err != nil {
		t.Fatal(err)
	}
	r1, err := c.stores[1].Resume(ctx, u.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r1.ID() != u.ID() || string(r1.Label()) != "label" || r1.Size() != 6 || !r1.ModTime().Equal(u.ModTime()) {
		t.Fatalf("resumed elsewhere: %s %q %d %v", r1.ID(), r1.Label(), r1.Size(), r1.ModTime())
	}
	if n, err := r1.Append(ctx, strings.NewReader("world"), 0); err != nil || n != 5 || r1.Size() != 11 {
		t.Fatalf("Append elsewhere = %d, %v (size %d)", n, err, r1.Size())
	}
	r2, err := c.stores[2].Resume(ctx, u.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Append(ctx, strings.NewReader("!"), 12); err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Append(ctx, strings.NewReader("?"), 0); !errors.Is(err, peerrpc.ErrUploadChanged) {
		t.Fatalf("an append through an overtaken value: %v, want ErrUploadChanged", err)
	}
	if _, err := r2.Append(ctx, strings.NewReader("more"), 12); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("an append past the limit elsewhere: %v, want ErrTooLarge", err)
	}
	if _, err := r2.Commit(ctx, blob.Checksums{SHA256: strings.Repeat("0", 64)}); !errors.Is(err, blob.ErrDigestMismatch) {
		t.Fatalf("a commit with the wrong digest elsewhere: %v, want ErrDigestMismatch", err)
	}
	data := []byte("hello world!")
	info, err := r2.Commit(ctx, blob.Checksums{SHA256: strings.TrimPrefix(digestOf(data), "sha256:")})
	if err != nil || info.Digest != digestOf(data) || info.Size != 12 || info.Checksums.MD5 == "" {
		t.Fatalf("Commit elsewhere = %+v, %v", info, err)
	}
	if got := c.holding(info.Digest); len(got) < 2 || got[0] != 0 {
		t.Fatalf("when the commit returned the blob was on %v", got)
	}
	if _, err := c.stores[1].Resume(ctx, u.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("a committed upload resumed: %v", err)
	}

	// Cancelled from elsewhere.
	u, _ = c.stores[0].Create(ctx, nil)
	r1, err = c.stores[1].Resume(ctx, u.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.stores[0].Resume(ctx, u.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("a cancelled upload resumed on its origin: %v", err)
	}

	// Ids of no origin, of an upload that never was, of an origin down.
	tag := blobs.UploadIDPrefix("origin-0")
	for _, id := range []string{"", "0a1b", strings.Repeat("f", 32), tag + strings.Repeat("0", 24), "../../etc/passwd"} {
		if _, err := c.stores[1].Resume(ctx, id); !errors.Is(err, blob.ErrUploadUnknown) {
			t.Fatalf("Resume(%q) = %v, want ErrUploadUnknown", id, err)
		}
	}
	u, _ = c.stores[0].Create(ctx, nil)
	c.down[0].Store(true)
	if _, err := c.stores[1].Resume(ctx, u.ID()); !errors.Is(err, blob.ErrUploadUnknown) {
		t.Fatalf("an upload whose origin is down: %v, want ErrUploadUnknown", err)
	}
}

// TestServerTakesPushes: a pushed blob is checked against its digest and
// bounded; one held already is made recent again, not read.
func TestServerTakesPushes(t *testing.T) {
	c := newOrigins(t, 1, nil)
	srv := c.stores[0].Server()
	ctx := t.Context()
	b, other := randomBlob(t), randomBlob(t)
	if created, err := srv.Take(ctx, digestOf(b), bytes.NewReader(b)); err != nil || !created {
		t.Fatalf("Take of a new blob = %v, %v", created, err)
	}
	c.putHere(0, other)
	// Later, a push of a blob held already stamps it; the one not pushed
	// again is old.
	cutoff := c.clock.Now().Add(time.Hour)
	c.clock.Set(cutoff.Add(time.Hour))
	if created, err := srv.Take(ctx, digestOf(b), strings.NewReader("never read")); err != nil || created {
		t.Fatalf("Take of a held blob = %v, %v", created, err)
	}
	res, err := c.locals[0].Sweep(ctx, cutoff, func(string) (bool, error) { return true, nil })
	if err != nil || res.Removed.Count != 1 || !c.has(0, digestOf(b)) || c.has(0, digestOf(other)) {
		t.Fatalf("sweep = %+v, %v: the pushed-again blob must stay, the other go", res, err)
	}

	lie := digestOf([]byte("something else"))
	if _, err := srv.Take(ctx, lie, bytes.NewReader(other)); !errors.Is(err, blob.ErrDigestMismatch) || c.has(0, lie) || c.has(0, digestOf(other)) {
		t.Fatalf("Take of bytes that are not the digest's: %v", err)
	}
	big := bytes.Repeat([]byte("x"), 1<<20+1)
	if _, err := srv.Take(ctx, digestOf(big), bytes.NewReader(big)); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Take past MaxSize: %v, want ErrTooLarge", err)
	}
}

// TestCloseStopsPushes: Close ends the pushes still running after a
// quorum held the blob, and later writes are not acknowledged.
func TestCloseStopsPushes(t *testing.T) {
	c := newOrigins(t, 3, nil)
	c.stall[2].Store(true)
	if _, err := c.put(0, randomBlob(t)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { c.stores[0].Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a push that hangs")
	}
	if _, err := c.put(0, randomBlob(t)); !errors.Is(err, blob.ErrUnreplicated) {
		t.Fatalf("a write after Close: %v, want ErrUnreplicated", err)
	}
}
