package blobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/depot-registry/depot/cluster/peerrpc"
	"github.com/depot-registry/depot/shared/blob"
)

// An upload that arrives in several requests (an OCI chunked upload) keeps
// its bytes on the origin that started it; behind a load balancer its
// next requests may reach any origin. Upload ids start with a tag of the
// origin that handed them out (UploadIDPrefix), so an origin given
// another's id continues the upload there, over the peers' RPC
// (peerrpc.UploadsPath), passing the size it saw: the owner refuses the
// request if the upload has changed since (another request got in
// between), as its own store does for two values of one upload. The
// owner's commit puts the blob on a quorum before it answers. When the
// owner is gone (dead, removed, unreachable) the upload is unknown: the
// client starts over, and the bytes that were on the owner are swept
// there like any abandoned upload.

// UploadIDPrefix is the tag that starts the upload ids origin nodeID
// hands out: give it to the local store (fs.WithUploadIDPrefix).
func UploadIDPrefix(nodeID string) string {
	sum := sha256.Sum256([]byte("depot upload id\x00" + nodeID))
	return hex.EncodeToString(sum[:4])
}

// remoteUploadWait bounds a call to an upload's owner that carries no
// bytes: an origin that does not answer in that time is taken as gone.
const remoteUploadWait = 10 * time.Second

// Create starts an upload here whose Commit puts the blob on a quorum.
func (s *Store) Create(ctx context.Context, label []byte) (blob.Upload, error) {
	u, err := s.Local.Create(ctx, label)
	if err != nil {
		return nil, err
	}
	return replicated{u, s}, nil
}

// Resume continues an upload of this origin, or one another origin of
// the cluster holds.
func (s *Store) Resume(ctx context.Context, id string) (blob.Upload, error) {
	u, err := s.Local.Resume(ctx, id)
	if errors.Is(err, blob.ErrUploadUnknown) {
		return s.resumeRemote(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return replicated{u, s}, nil
}

// replicated is a local upload whose Commit replicates the blob.
type replicated struct {
	blob.Upload
	s *Store
}

func (u replicated) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	info, err := u.Upload.Commit(ctx, expect)
	if err != nil {
		return info, err
	}
	return info, u.s.replicate(ctx, info.Digest, info.Size)
}

// resumeRemote continues upload id on the origin whose tag it carries.
func (s *Store) resumeRemote(ctx context.Context, id string) (blob.Upload, error) {
	unknown := fmt.Errorf("%w: %q", blob.ErrUploadUnknown, id)
	members, err := s.cfg.Members.Members()
	if err != nil || len(id) < 8 {
		return nil, unknown
	}
	for _, m := range members {
		if m.ID == s.cfg.Self || UploadIDPrefix(m.ID) != id[:8] {
			continue
		}
		u := &remoteUpload{peers: s.cfg.Peers, addr: m.Addr, id: id}
		wctx, cancel := context.WithTimeout(ctx, remoteUploadWait)
		u.state, err = u.peers.Upload(wctx, m.Addr, id)
		cancel()
		if err != nil {
			if !errors.Is(err, blob.ErrUploadUnknown) {
				s.cfg.Log.Warn("an upload's origin did not answer; the upload is unknown", "upload", id, "origin", m.ID, "err", err)
			}
			return nil, unknown
		}
		return u, nil
	}
	return nil, unknown
}

// remoteUpload is an upload held by another origin.
type remoteUpload struct {
	peers *peerrpc.Client
	addr  string
	id    string
	state peerrpc.UploadState // as the owner last reported it
}

func (u *remoteUpload) ID() string         { return u.id }
func (u *remoteUpload) Label() []byte      { return u.state.Label }
func (u *remoteUpload) Size() int64        { return u.state.Size }
func (u *remoteUpload) ModTime() time.Time { return u.state.ModTime }

func (u *remoteUpload) Append(ctx context.Context, r io.Reader, max int64) (int64, error) {
	before := u.state.Size
	st, err := u.peers.AppendUpload(ctx, u.addr, u.id, peerrpc.AppendRequest{Offset: before, Max: max}, r)
	if err != nil {
		return 0, err
	}
	u.state = st
	return st.Size - before, nil
}

func (u *remoteUpload) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	info, err := u.peers.CommitUpload(ctx, u.addr, u.id, peerrpc.CommitRequest{Offset: u.state.Size, Expect: peerrpc.WireChecksums(expect)})
	return info.Blob(), err
}

func (u *remoteUpload) Cancel(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, remoteUploadWait)
	defer cancel()
	return u.peers.CancelUpload(ctx, u.addr, u.id)
}
