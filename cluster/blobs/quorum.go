package blobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// A write is acknowledged only once its blob is durable on a quorum of
// the voting origins placement names: this one, when it is one of them,
// and enough peers. A write stores the blob here, pushes it to those
// peers and goes on once a quorum holds it; pushes still running finish
// in the background. Only then is the metadata committed, so no record
// names a blob that the loss of a minority of them could take with it.
// A lone origin is its own quorum.

// pushTimeout bounds one push of a blob to a peer.
const pushTimeout = time.Hour

var errClosed = errors.New("blob replication is closed")

// replicate pushes digest to the voting holders until a quorum of them
// holds it.
func (s *Store) replicate(ctx context.Context, digest string, size int64) error {
	members, err := s.members()
	if err != nil {
		return err
	}
	s.noteUnplaced(digest, members)
	voters, self := 0, false
	var peers []Member
	for _, m := range s.place.Holders(digest, members) {
		if !m.Voter {
			continue
		}
		voters++
		if m.ID == s.cfg.Self {
			self = true
		} else {
			peers = append(peers, m)
		}
	}
	need := s.place.Quorum(voters)
	if self {
		need--
	}
	if need <= 0 {
		return nil
	}
	// Pushes beyond the quorum finish on their own, after the write.
	done := make(chan error, len(peers))
	for _, p := range peers {
		if !s.background(func(bg context.Context) { done <- s.push(bg, p.Addr, digest, size) }) {
			done <- errClosed
		}
	}
	got := 0
	var errs []error
	for range peers {
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if got++; got >= need {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.cfg.Log.Warn("a blob did not reach a quorum of the origins; the write is refused", "digest", digest, "peers_needed", need,
		"peers_holding", got, "err", errors.Join(errs...))
	return fmt.Errorf("%w: %d of the %d peers needed hold it", blob.ErrUnreplicated, got, need)
}

// push copies digest to the peer at addr, unless it has it already.
func (s *Store) push(ctx context.Context, addr, digest string, size int64) error {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	if s.cfg.Peers.HasBlob(ctx, addr, digest) {
		return nil
	}
	f, err := s.Local.Open(ctx, digest)
	if err != nil {
		return err
	}
	defer f.Close()
	return s.cfg.Peers.PushBlob(ctx, addr, digest, f, size)
}
