package blobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// A download can arrive at any origin; one that does not have the blob
// fetches it from a peer that has it, checks it against its digest, keeps
// it, and serves it.

// fetchTimeout bounds one fetch of a blob from the peers.
const fetchTimeout = time.Hour

// Open opens digest here, fetching it from a peer first when it is not
// here yet.
func (s *Store) Open(ctx context.Context, digest string) (blob.File, error) {
	f, err := s.Local.Open(ctx, digest)
	if !errors.Is(err, blob.ErrNotFound) {
		return f, err
	}
	if s.fetchOnce(ctx, digest) != nil {
		return nil, err // still not found: say so, not why the peers failed
	}
	return s.Local.Open(ctx, digest)
}

// fetchOnce fetches digest from a peer, once however many ask at once.
func (s *Store) fetchOnce(ctx context.Context, digest string) error {
	_, err, _ := s.fetches.Do(digest, func() (any, error) { return nil, s.fetch(context.WithoutCancel(ctx), digest) })
	return err
}

// fetch copies digest from the first peer that gives it into the local
// store.
func (s *Store) fetch(ctx context.Context, digest string) error {
	expect, err := blob.DigestChecksums(digest)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var errs []error
	for _, p := range s.sources(digest) {
		body, err := s.cfg.Peers.GetBlob(ctx, p.Addr, digest)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = s.Local.Put(ctx, body, blob.PutOptions{Expect: expect})
		body.Close()
		if err == nil {
			if members, err := s.members(); err == nil {
				s.noteUnplaced(digest, members)
			}
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Addr, err))
	}
	return fmt.Errorf("no peer gave %s: %w", digest, errors.Join(errs...))
}

// sources are the other origins in the order a blob is asked of them:
// those placement names for it first, then the rest (one that took the
// upload, or read it, may still have it), the leader first in each.
func (s *Store) sources(digest string) []Member {
	members, err := s.members()
	if err != nil {
		return nil
	}
	holds := map[string]bool{}
	for _, m := range s.place.Holders(digest, members) {
		holds[m.ID] = true
	}
	var out []Member
	for _, named := range []bool{true, false} {
		start := len(out)
		for _, m := range members {
			if m.ID == s.cfg.Self || holds[m.ID] != named {
				continue
			}
			if m.Leader {
				out = append(out[:start], append([]Member{m}, out[start:]...)...)
			} else {
				out = append(out, m)
			}
		}
	}
	return out
}
