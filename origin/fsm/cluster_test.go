package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/clustertest"
	"github.com/depot-registry/depot/cluster/leader"
	"github.com/depot-registry/depot/origin/fsm"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

func newFSM(s *meta.Store) raft.FSM { return fsm.New(s) }

func repo(name string) meta.Command {
	return &meta.RepoCreate{Repo: meta.Repository{ID: "r-" + name, Name: name, Format: "generic", CreatedAt: time.Unix(0, 0).UTC()}}
}

// TestPartitionedMinorityCannotCommit: three nodes running the real FSM;
// the leader is cut off alone. It cannot commit (its writes fail within
// the wait, none acknowledged); the majority elects a leader and goes on
// committing, through either of its nodes. After healing, the old leader
// converges: every node holds the same state, with the majority's writes
// and none of the minority's.
func TestPartitionedMinorityCannotCommit(t *testing.T) {
	c := clustertest.New(t, 3, newFSM)
	old := c.Leader()
	var minority, majority []int
	for i, n := range c.Nodes {
		if n == old {
			minority = append(minority, i)
		} else {
			majority = append(majority, i)
		}
	}
	if _, err := old.Commit.Apply(t.Context(), repo("before")); err != nil {
		t.Fatal(err)
	}
	c.Partition(minority, majority)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := old.Commit.Apply(ctx, repo("minority"))
	if err == nil {
		t.Fatal("the cut-off leader committed a write")
	}
	if !errors.Is(err, meta.ErrNoLeader) && !errors.Is(err, meta.ErrUnknownOutcome) {
		t.Fatalf("the minority's write failed with %v, want no leader or unknown outcome", err)
	}
	t.Logf("the minority's write failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if err := old.Commit.Sync(ctx); err == nil && !old.Raft.IsLeader() {
		t.Fatal("the minority synced with a leader it cannot reach")
	}

	for i, at := range majority {
		if _, err := c.Nodes[at].Commit.Apply(t.Context(), repo(fmt.Sprint("majority", i))); err != nil {
			t.Fatalf("the majority's write through %s: %v", c.Nodes[at].ID, err)
		}
	}
	c.Heal()
	c.WaitConverged()
	for _, n := range c.Nodes {
		err := n.Store.View(func(tx *meta.Tx) error {
			for _, name := range []string{"before", "majority0", "majority1"} {
				if _, err := tx.RepoByName(name); err != nil {
					return fmt.Errorf("%s lacks %s: %w", n.ID, name, err)
				}
			}
			if _, err := tx.RepoByName("minority"); err == nil {
				return fmt.Errorf("%s has the minority's write", n.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartedNodeCatchesUp: a node stopped while the others commit
// comes back on its data and converges with them.
func TestRestartedNodeCatchesUp(t *testing.T) {
	c := clustertest.New(t, 3, newFSM)
	lead := c.Leader()
	down := 0
	for i, n := range c.Nodes {
		if n != lead {
			down = i
		}
	}
	c.Stop(down)
	for i := range 20 {
		if _, err := lead.Commit.Apply(t.Context(), repo(fmt.Sprint("r", i))); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart(down)
	c.WaitConverged()
}

// TestRacesAcrossOrigins: every format's concurrent writes, on two
// origins of a three-node cluster that each decide from their own
// replica (the followers, so both forward to the leader): no
// acknowledged write is lost or overwritten.
func TestRacesAcrossOrigins(t *testing.T) {
	formattest.RunRaces(t, func(t *testing.T) (*formattest.Env, [2]string) {
		c := clustertest.New(t, 3, newFSM)
		lead := c.Leader()
		var backends []formattest.Backend
		for _, n := range c.Nodes {
			if n != lead {
				backends = append(backends, formattest.Backend{Store: n.Store, Commit: n.Commit, Sync: n.Commit.Sync})
			}
		}
		e := formattest.NewCluster(t, backends...)
		return e, [2]string{e.Node(all.Build).URL, e.Node(all.Build).URL}
	})
}

// TestLeaderLoopMovesWithLeadership: the cluster's jobs run on the leader
// alone; when it stops, they stop there and start on the new leader,
// after a barrier: the new leader's store holds every write committed
// before when they start.
func TestLeaderLoopMovesWithLeadership(t *testing.T) {
	c := clustertest.New(t, 3, newFSM)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var mu sync.Mutex
	running := map[string]int{}
	startedAt := map[string]uint64{} // the store's applied index when the jobs started
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, n := range c.Nodes {
		wg.Go(func() {
			leader.Loop(ctx, n.Raft, quiet, func(jobs context.Context) {
				mu.Lock()
				running[n.ID]++
				startedAt[n.ID] = n.Store.LastApplied()
				mu.Unlock()
				<-jobs.Done()
				mu.Lock()
				running[n.ID]--
				mu.Unlock()
			})
		})
	}
	only := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		for n, r := range running {
			if (n == id) != (r == 1) || r > 1 {
				return false
			}
		}
		return running[id] == 1
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: jobs running %v", what, running)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := c.Leader()
	waitUntil("the jobs on the first leader alone", func() bool { return only(first.ID) })
	var last uint64
	for i := range 5 {
		idx, err := first.Commit.Apply(t.Context(), repo(fmt.Sprint("r", i)))
		if err != nil {
			t.Fatal(err)
		}
		last = idx
	}
	for i, n := range c.Nodes {
		if n == first {
			c.Stop(i)
		}
	}
	next := c.Leader()
	waitUntil("the jobs on the new leader alone", func() bool { return only(next.ID) })
	mu.Lock()
	defer mu.Unlock()
	if startedAt[next.ID] < last {
		t.Fatalf("the new leader's jobs started at index %d, before the last write (%d) was applied there", startedAt[next.ID], last)
	}
}
