package fsm

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/shared/meta"
)

func openStore(t *testing.T) *meta.Store {
	t.Helper()
	s, err := meta.Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestThroughRaft applies commands through a real (in-memory) raft node,
// then restores a raft snapshot into a fresh FSM.
func TestThroughRaft(t *testing.T) {
	store := openStore(t)
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	logs, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	_, trans := raft.NewInmemTransport("n1")
	if err := raft.BootstrapCluster(conf, logs, logs, snaps, trans, raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: trans.LocalAddr()}}}); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, New(store), logs, logs, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()
	deadline := time.Now().Add(5 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	apply := func(c meta.Command) any {
		data, _ := meta.Encode(c)
		f := r.Apply(data, time.Second)
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		return f.Response()
	}
	if resp := apply(&meta.UserCreate{User: meta.User{ID: "u1", Username: "alice"}}); resp != nil {
		t.Fatalf("create: %v", resp)
	}
	// A refused command comes back as the response, not as a raft error.
	if resp := apply(&meta.UserCreate{User: meta.User{ID: "u2", Username: "alice"}}); !errors.Is(resp.(error), meta.ErrConflict) {
		t.Fatalf("duplicate: %v", resp)
	}
	apply(&meta.RepoCreate{Repo: meta.Repository{ID: "r1", Name: "files", Format: "generic"}})

	if err := r.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("snapshots: %v %v", list, err)
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t)
	if err := New(fresh).Restore(rc); err != nil {
		t.Fatal(err)
	}
	err = fresh.View(func(tx *meta.Tx) error {
		if _, err := tx.UserByName("alice"); err != nil {
			return err
		}
		_, err := tx.RepoByName("files")
		return err
	})
	if err != nil {
		t.Fatalf("restored state: %v", err)
	}
	if fresh.LastApplied() != store.LastApplied() || fresh.LastApplied() == 0 {
		t.Fatalf("last applied %d vs %d", fresh.LastApplied(), store.LastApplied())
	}
}
