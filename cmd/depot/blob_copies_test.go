package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/origin/clienttest"
)

// TestBlobCopies: three origins started with DEPOT_BLOB_COPIES=1 keep one
// copy of each blob. An acknowledged upload is on the origin placement
// names for it (rendezvous hashing over the voters' ids, worked out here
// the same way), and is not copied to the origin that neither took the
// upload nor holds it; every origin serves every file (fetched from the
// holder). An origin restarted keeps, after its first repair pass, only
// the blobs placed on it (the copies it read or took are dropped once the
// holder has them). Health says the setting.
func TestBlobCopies(t *testing.T) {
	bin := buildDepot(t)
	c := startClusterOn(t, bin, func(int) site {
		return site{bin: bin, listen: clienttest.FreeAddr(t), raftAddr: clienttest.FreeAddr(t), gossipAddr: clienttest.FreeAddr(t),
			env: []string{"DEPOT_BLOB_COPIES=1", "DEPOT_GC_GRACE=1s"}}
	})
	if h := string(call(t, "GET", c.procs[0].url+"/api/v1/health", c.tok, nil, 200)); !strings.Contains(h, `"blob_copies":1`) {
		t.Fatalf("health does not say the setting: %s", h)
	}
	ids := c.byNodeID()
	if len(ids) != 3 {
		t.Fatalf("origins by node id: %v (view %+v)", ids, c.view)
	}
	members := make([]blobs.Member, len(c.view.Members))
	for i, m := range c.view.Members {
		members[i] = blobs.Member{ID: m.ID, Voter: true}
	}
	holderOf := func(digest string) int {
		h := blobs.Copies(1).Holders(digest, members)
		if len(h) != 1 {
			t.Fatalf("Copies(1) named %v", h)
		}
		return ids[h[0].ID]
	}

	call(t, "POST", c.procs[0].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	type file struct {
		path, body, digest string
		holder             int
	}
	var files []file
	placed := map[int]int{}
	// Uploads through origin 0 until at least twelve, some placed on each
	// of the others (placement depends on the node ids, random per run).
	for i := 0; len(files) < 12 || placed[1] == 0 || placed[2] == 0; i++ {
		if i == 100 {
			t.Fatalf("a hundred blobs, none placed on origin 1 or 2: %v", placed)
		}
		body := fmt.Sprintf("blob %d of the copies test", i)
		sum := sha256.Sum256([]byte(body))
		f := file{path: fmt.Sprintf("/generic/files/p/%d/f.txt", i), body: body, digest: "sha256:" + hex.EncodeToString(sum[:])}
		f.holder = holderOf(f.digest)
		call(t, "PUT", c.procs[0].url+f.path, c.basic, strings.NewReader(body), 201)
		if !c.hasBlob(f.holder, f.digest) {
			t.Fatalf("%s was acknowledged but is not on its holder, origin %d", f.path, f.holder)
		}
		placed[f.holder]++
		files = append(files, f)
	}
	// Nothing to wait for: with one copy no push is made. A second lets one
	// made by mistake land before looking.
	time.Sleep(time.Second)
	for _, f := range files {
		for i := range c.nodes {
			if i != f.holder && i != 0 && c.hasBlob(i, f.digest) {
				t.Fatalf("%s, placed on origin %d and taken by origin 0, was copied to origin %d too", f.path, f.holder, i)
			}
		}
	}
	for _, f := range files {
		for i, p := range c.procs {
			if got := get(p.url+f.path, c.basic); got != f.body {
				t.Fatalf("%s at origin %d: %q", f.path, i, got)
			}
		}
	}
	// Origin 2 read everything: after a restart its repair pass drops
	// what is not placed on it, and keeps what is.
	c.procs[2].stop(t)
	c.procs[2] = c.nodes[2].start(t)
	waitFor(t, 30*time.Second, "origin 2 to keep only the blobs placed on it", func() bool {
		for _, f := range files {
			if c.hasBlob(2, f.digest) != (f.holder == 2) {
				return false
			}
		}
		return true
	})
	for _, f := range files {
		if got := get(c.procs[2].url+f.path, c.basic); got != f.body {
			t.Fatalf("%s at origin 2 after its repair: %q", f.path, got)
		}
	}
}
