package blobs_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/depot-registry/depot/cluster/blobs"
)

func members(voters, others int) []blobs.Member {
	var ms []blobs.Member
	for i := range voters + others {
		ms = append(ms, blobs.Member{ID: fmt.Sprintf("origin-%02d", i), Addr: fmt.Sprintf("10.0.0.%d:8300", i), Voter: i < voters})
	}
	return ms
}

func digestN(i int) string { return digestOf(fmt.Appendf(nil, "blob %d", i)) }

func ids(ms []blobs.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// TestPlacements: what every placement must do, whichever it is: name
// members only, in their order, the same ones whatever order the members
// come in (each origin decides alone), and ask a majority of the holders.
func TestPlacements(t *testing.T) {
	for _, p := range []blobs.Placement{blobs.Everywhere{}, blobs.Copies(1), blobs.Copies(2), blobs.Copies(3), blobs.Copies(7)} {
		t.Run(fmt.Sprintf("%T%v", p, p), func(t *testing.T) {
			for _, shape := range [][2]int{{1, 0}, {3, 0}, {5, 1}, {2, 2}} {
				ms := members(shape[0], shape[1])
				for i := range 200 {
					d := digestN(i)
					h := p.Holders(d, ms)
					if len(h) == 0 {
						t.Fatalf("%s has no holder among %v", d, ids(ms))
					}
					pos := -1
					for _, m := range h {
						at := slices.Index(ms, m)
						if at <= pos {
							t.Fatalf("holders %v are not members in their order %v", ids(h), ids(ms))
						}
						pos = at
					}
					shuffled := slices.Clone(ms)
					rand.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
					again := ids(p.Holders(d, shuffled))
					slices.Sort(again)
					if want := ids(h); !slices.Equal(again, slices.Sorted(slices.Values(want))) {
						t.Fatalf("holders of %s depend on the members' order: %v, then %v", d, want, again)
					}
				}
			}
			for n := 1; n <= 7; n++ {
				if q := p.Quorum(n); q <= n/2 || q > n {
					t.Fatalf("Quorum(%d) = %d: not a majority", n, q)
				}
			}
		})
	}
}

// TestEverywhere: every member holds every blob, voter or not.
func TestEverywhere(t *testing.T) {
	ms := members(3, 2)
	if h := (blobs.Everywhere{}).Holders(digestN(0), ms); !slices.Equal(h, ms) {
		t.Fatalf("Everywhere holders = %v, want every member", ids(h))
	}
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3} {
		if q := (blobs.Everywhere{}).Quorum(n); q != want {
			t.Fatalf("Quorum(%d) = %d, want %d", n, q, want)
		}
	}
}

// TestCopies: n voters hold each blob (every voter when there are fewer,
// never a non-voter), blobs spread evenly, and a voter that joins takes
// blobs only for itself: every blob whose holders change has it among
// its new holders.
func TestCopies(t *testing.T) {
	const blobsN = 3000
	ms := members(5, 2)
	p := blobs.Copies(2)
	load := map[string]int{}
	before := map[string][]string{}
	for i := range blobsN {
		d := digestN(i)
		h := p.Holders(d, ms)
		if len(h) != 2 {
			t.Fatalf("Copies(2) named %v", ids(h))
		}
		for _, m := range h {
			if !m.Voter {
				t.Fatalf("Copies named the non-voter %s", m.ID)
			}
			load[m.ID]++
		}
		before[d] = ids(h)
	}
	// Each of 5 voters holds 2/5 of the blobs: within a tenth of it.
	for id, n := range load {
		if want := blobsN * 2 / 5; n < want*9/10 || n > want*11/10 {
			t.Fatalf("%s holds %d blobs, want about %d (%v)", id, n, want, load)
		}
	}
	if len(load) != 5 {
		t.Fatalf("blobs held by %d voters: %v", len(load), load)
	}

	ms[5].Voter = true // a new voter
	moved := 0
	for i := range blobsN {
		d := digestN(i)
		after := ids(p.Holders(d, ms))
		if slices.Equal(after, before[d]) {
			continue
		}
		moved++
		if !slices.Contains(after, ms[5].ID) {
			t.Fatalf("%s moved from %v to %v without the new voter", d, before[d], after)
		}
	}
	if want := blobsN * 2 / 6; moved < want*8/10 || moved > want*12/10 {
		t.Fatalf("%d blobs moved to the new voter, want about %d", moved, want)
	}

	if h := blobs.Copies(4).Holders(digestN(0), members(2, 3)); len(h) != 2 || !h[0].Voter || !h[1].Voter {
		t.Fatalf("Copies(4) of 2 voters named %v, want both voters", ids(h))
	}
	if h := blobs.Copies(0).Holders(digestN(0), members(3, 0)); len(h) != 1 {
		t.Fatalf("Copies(0) named %v, want one holder", ids(h))
	}
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2} {
		if q := p.Quorum(n); q != want {
			t.Fatalf("Quorum(%d) = %d, want %d", n, q, want)
		}
	}
}
