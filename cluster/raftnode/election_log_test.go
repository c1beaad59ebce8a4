package raftnode

import (
	"errors"
	"github.com/depot-registry/depot/shared/syncbuf"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/logx"
)

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots here") }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// TestElectionWarning: a lone voter electing itself at start is normal
// (debug); a voter of a larger cluster that lost its leader warns.
func TestElectionWarning(t *testing.T) {
	var log syncbuf.Buffer
	n, err := New(Config{
		NodeID: "n1", BindAddr: "127.0.0.1:0", Dir: t.TempDir(), Bootstrap: true, Key: peerauth.NewKey(),
		Logger: logx.New(&log, "text", "debug"), HeartbeatTimeout: 50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond,
	}, nopFSM{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	if err := n.WaitLeader(t.Context()); err != nil {
		t.Fatal(err)
	}
	const debugLine, warnLine = `level=DEBUG msg="` + electionWarning, `level=WARN msg="` + electionWarning
	if out := log.String(); strings.Contains(out, warnLine) || !strings.Contains(out, debugLine) {
		t.Fatalf("a lone voter's start election is not logged at debug only:\n%s", out)
	}

	// A second voter that never answers: the leader loses its lease,
	// steps down, and its next heartbeat timeout is worth a warning.
	candidate := make(chan raft.Observation, 8)
	n.Raft.RegisterObserver(raft.NewObserver(candidate, false, func(o *raft.Observation) bool {
		s, ok := o.Data.(raft.RaftState)
		return ok && s == raft.Candidate
	}))
	ghost, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ghostAddr := ghost.Addr().String()
	ghost.Close()
	n.Raft.AddVoter("ghost", raft.ServerAddress(ghostAddr), 0, 0)
	select {
	case <-candidate:
	case <-time.After(10 * time.Second):
		t.Fatalf("no election after the second voter was added:\n%s", log.String())
	}
	if out := log.String(); !strings.Contains(out, warnLine) {
		t.Fatalf("a voter of a two-voter cluster starts an election without a warning:\n%s", out)
	}
}

// TestChatter: raft's lines of a cluster's normal life are told from
// real failures.
func TestChatter(t *testing.T) {
	for _, c := range []struct {
		msg    string
		voters int
		want   bool
	}{
		{"appendEntries rejected, sending older logs", 3, true},
		{"failed to make requestVote RPC", 3, true},
		{electionWarning, 1, true},
		{electionWarning, 3, false},
		{"failed to contact quorum of nodes, stepping down", 3, false},
		{"failed to heartbeat to", 3, false},
		{"failed to appendEntries to", 3, false},
	} {
		if got := chatter(c.msg, func() int { return c.voters }); got != c.want {
			t.Errorf("%q with %d voters: chatter %v, want %v", c.msg, c.voters, got, c.want)
		}
	}
}
