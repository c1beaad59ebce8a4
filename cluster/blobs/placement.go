package blobs

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Placement decides which origins keep a blob, and how many of them must
// hold a new blob before the write that stored it is acknowledged. Every
// origin decides alone, so a placement must give the same answer for the
// same digest and members wherever it runs.
type Placement interface {
	// Holders are the members that keep digest: a subset of members, in
	// their order. members are every origin of the raft configuration
	// (this one included), voters and others.
	Holders(digest string, members []Member) []Member
	// Quorum is how many of n voting holders must hold a new blob before
	// a write is acknowledged. A majority (n/2+1) keeps an acknowledged
	// blob through the loss of any minority of them.
	Quorum(n int) int
}

// majority is the quorum both placements ask for.
func majority(n int) int { return n/2 + 1 }

// Everywhere is the default placement: every origin keeps every blob,
// and a write is acknowledged once a majority of the voters hold it
// (the others get it in the background, by push or repair).
type Everywhere struct{}

// Holders is every member.
func (Everywhere) Holders(_ string, members []Member) []Member { return members }

// Quorum is a majority.
func (Everywhere) Quorum(n int) int { return majority(n) }

// Copies is the placement that keeps n copies of each blob (at least 1;
// every voter when there are fewer): on the voters whose ids rank
// highest for the digest by rendezvous hashing, so each origin works out
// the same holders alone, blobs spread evenly, and a voter that joins or
// leaves moves only the blobs it gains or loses. A write is acknowledged
// once a majority of the n holders have the blob.
func Copies(n int) Placement { return copies(max(n, 1)) }

type copies int

// Holders are the voters that rank highest for digest.
func (c copies) Holders(digest string, members []Member) []Member {
	type ranked struct {
		score uint64
		i     int
	}
	var voters []ranked
	for i, m := range members {
		if m.Voter {
			voters = append(voters, ranked{rendezvous(digest, m.ID), i})
		}
	}
	slices.SortFunc(voters, func(a, b ranked) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return cmp.Compare(members[a.i].ID, members[b.i].ID)
	})
	voters = voters[:min(int(c), len(voters))]
	slices.SortFunc(voters, func(a, b ranked) int { return cmp.Compare(a.i, b.i) })
	out := make([]Member, len(voters))
	for j, v := range voters {
		out[j] = members[v.i]
	}
	return out
}

// Quorum is a majority of the holders.
func (copies) Quorum(n int) int { return majority(n) }

// rendezvous is node id's rank for digest.
func rendezvous(digest, id string) uint64 {
	h := sha256.New()
	h.Write([]byte(digest))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return binary.BigEndian.Uint64(h.Sum(nil))
}
