package blobs

import (
	"context"
	"io"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
)

// Server is an origin's side of the blob and upload routes of the peers'
// RPC: it hands out the blobs this origin holds (never asking further
// peers), takes those its peers push to make a write durable, and
// continues the uploads it holds for origins given their ids.
type Server struct{ s *Store }

var (
	_ peerrpc.Blobs   = Server{}
	_ peerrpc.Uploads = Server{}
)

// Server is s's side of the peers' RPC.
func (s *Store) Server() Server { return Server{s} }

// OpenHere opens a blob this origin holds.
func (v Server) OpenHere(ctx context.Context, digest string) (blob.File, error) {
	return v.s.Local.Open(ctx, digest)
}

// Take stores a blob a peer pushes, checked against its digest; one that
// is here already is made recent again (the record naming it is on its
// way) and not read. It runs under the store's life: Close ends a
// transfer still going and waits for it, as it does the store's own
// pushes, so nothing writes to Local after Close returns.
func (v Server) Take(ctx context.Context, digest string, body io.Reader) (bool, error) {
	expect, err := blob.DigestChecksums(digest)
	if err != nil {
		return false, err
	}
	ctx, done, ok := v.s.hold(ctx)
	if !ok {
		return false, errClosed
	}
	defer done()
	if _, err := v.s.Local.Stat(ctx, digest); err == nil {
		_ = v.s.Local.Keep(ctx, digest)
		return false, nil
	}
	if _, err := v.s.Local.Put(ctx, body, blob.PutOptions{MaxSize: v.s.cfg.MaxSize, Expect: expect}); err != nil {
		return false, err
	}
	if members, err := v.s.members(); err == nil {
		v.s.noteUnplaced(digest, members) // a peer placing blobs otherwise (another --blob-copies)
	}
	return true, nil
}

// ResumeHere continues an upload this origin holds; its Commit puts the
// blob on a quorum, as a commit here does.
func (v Server) ResumeHere(ctx context.Context, id string) (blob.Upload, error) {
	u, err := v.s.Local.Resume(ctx, id)
	if err != nil {
		return nil, err
	}
	return replicated{u, v.s}, nil
}
