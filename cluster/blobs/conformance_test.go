package blobs_test

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/blobs"
	"github.com/depot-registry/depot/cluster/clustertest"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/blobtest"
	"github.com/depot-registry/depot/shared/blob/fs"
	"github.com/depot-registry/depot/shared/meta"
)

// The blob.Store, blob.Ingester and blob.Sweeper conformance suites run
// against the decorated store of the first origin of a three-origin
// cluster: real raft membership and the peers' RPC over the
// authenticated transport, every origin's own store on disk, under each
// placement. Every Put and Commit of the suites is replicated before it
// returns, every Open of a blob missing here asks the peers.
func TestConformance(t *testing.T) {
	for _, pc := range []struct {
		name string
		p    blobs.Placement
	}{{"everywhere", nil}, {"one copy", blobs.Copies(1)}, {"two copies", blobs.Copies(2)}} {
		t.Run(pc.name, func(t *testing.T) {
			c := clustertest.New(t, 3, func(*meta.Store) raft.FSM { return nopFSM{} })
			t.Run("Store", func(t *testing.T) {
				blobtest.Run(t, func(t *testing.T) blob.Store { return decorate(t, c, pc.p, nil)[0] })
			})
			t.Run("Ingester", func(t *testing.T) {
				blobtest.RunIngester(t, func(t *testing.T) (blobtest.IngestStore, func() blobtest.IngestStore) {
					stores := decorate(t, c, pc.p, nil)
					dir := stores[0].dir
					return stores[0], func() blobtest.IngestStore { return reopen(t, c, pc.p, dir) }
				})
			})
			t.Run("Sweeper", func(t *testing.T) {
				blobtest.RunSweeper(t, func(t *testing.T, now func() time.Time) blob.Store { return decorate(t, c, pc.p, now)[0] })
			})
		})
	}
}

// decorated is an origin's decorated store and where its disk store is.
type decorated struct {
	*blobs.Store
	dir string
}

// decorate gives every node of c a new empty disk store decorated under
// placement p (the first one's on the clock now) and serves it to the
// peers.
func decorate(t *testing.T, c *clustertest.Cluster, p blobs.Placement, now func() time.Time) []decorated {
	t.Helper()
	var out []decorated
	for i, n := range c.Nodes {
		var clock func() time.Time
		if i == 0 {
			clock = now
		}
		out = append(out, open(t, n, p, t.TempDir(), clock))
	}
	// Every store's pushes end before any of the directories goes: a
	// store pushes into its peers' directories, which the test removes
	// before that store's own cleanup would close it.
	t.Cleanup(func() {
		for _, d := range out {
			d.Close()
		}
	})
	return out
}

// reopen opens the first node's disk store again, as a restarted origin
// does.
func reopen(t *testing.T, c *clustertest.Cluster, p blobs.Placement, dir string) decorated {
	t.Helper()
	return open(t, c.Nodes[0], p, dir, nil)
}

func open(t *testing.T, n *clustertest.Node, p blobs.Placement, dir string, now func() time.Time) decorated {
	t.Helper()
	local, err := fs.New(dir, fs.WithClock(now), fs.WithUploadIDPrefix(blobs.UploadIDPrefix(n.ID)))
	if err != nil {
		t.Fatal(err)
	}
	s := blobs.New(blobs.Config{Self: n.ID, Local: local, Members: blobs.Raft(n.Raft), Peers: n.Peers, Placement: p, Now: now})
	t.Cleanup(s.Close) // its pushes end before its directory goes
	n.ServeBlobs(s.Server(), s.Server())
	return decorated{s, dir}
}

// nopFSM is a state machine with no state: the cluster is here for its
// membership and its transport.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(r io.ReadCloser) error       { return r.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnapshot) Release()                             {}
