package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/fs"
)

// An upload is acknowledged only once its blob is durable on a quorum of
// the origins: this one and enough peers that, with it, they are a
// majority of the voters. A write stores the blob here, pushes it to the
// peers (the peers' RPC: PUT /v1/blobs/<digest>) and goes on once a
// quorum holds it; pushes still running finish in the background. Only
// then is the metadata committed, so no record names a blob that the loss
// of a minority of the origins could take with it. A lone origin is its
// own quorum.

// pushTimeout bounds one push of a blob to a peer.
const pushTimeout = time.Hour

// quorumBlobs is the blob store writes use: this origin's, every new blob
// pushed to a quorum before Put returns.
type quorumBlobs struct {
	*fs.FS
	o *Origin
}

// Put stores the blob here, then on a quorum.
func (q quorumBlobs) Put(ctx context.Context, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	info, err := q.FS.Put(ctx, r, opts)
	if err != nil {
		return info, err
	}
	return info, q.o.replicate(ctx, info.Digest, info.Size)
}

// quorumIngest hands out uploads (OCI sessions) whose Commit pushes the
// blob to a quorum.
type quorumIngest struct {
	*fs.FS
	o *Origin
}

func (q quorumIngest) Create(ctx context.Context, label []byte) (blob.Upload, error) {
	u, err := q.FS.Create(ctx, label)
	if err != nil {
		return nil, err
	}
	return quorumUpload{u, q.o}, nil
}

// Resume continues an upload of this origin, or one another origin of the
// cluster holds (uploads.go).
func (q quorumIngest) Resume(ctx context.Context, id string) (blob.Upload, error) {
	u, err := q.FS.Resume(ctx, id)
	if errors.Is(err, blob.ErrUploadUnknown) {
		return q.o.resumeRemote(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return quorumUpload{u, q.o}, nil
}

type quorumUpload struct {
	blob.Upload
	o *Origin
}

func (u quorumUpload) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	info, err := u.Upload.Commit(ctx, expect)
	if err != nil {
		return info, err
	}
	return info, u.o.replicate(ctx, info.Digest, info.Size)
}

// replicate pushes digest to the peers until, with this origin, a
// majority of the voters holds it.
func (o *Origin) replicate(ctx context.Context, digest string, size int64) error {
	servers, err := o.node.Servers()
	if err != nil {
		return err
	}
	voters, self := 0, false
	var peers []string
	for _, s := range servers {
		if !s.Voter {
			continue
		}
		voters++
		if s.ID == o.nodeID {
			self = true
		} else {
			peers = append(peers, s.Addr)
		}
	}
	need := voters/2 + 1
	if self {
		need--
	}
	if need <= 0 {
		return nil
	}
	done := make(chan error, len(peers))
	bg := context.WithoutCancel(ctx) // pushes beyond the quorum finish on their own
	for _, addr := range peers {
		go func() { done <- o.push(bg, addr, digest, size) }()
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
	o.log.Warn("a blob did not reach a quorum of the origins; the write is refused", "digest", digest, "peers_needed", need,
		"peers_holding", got, "err", errors.Join(errs...))
	return fmt.Errorf("%w: %d of the %d peers needed hold it", blob.ErrUnreplicated, got, need)
}

// push copies digest to the peer at addr, unless it has it already.
func (o *Origin) push(ctx context.Context, addr, digest string, size int64) error {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	url := "http://" + addr + BlobsPath + digest
	head, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return err
	}
	if resp, err := o.peers.Do(head); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	f, err := o.blobs.Open(ctx, digest)
	if err != nil {
		return err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, f)
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := o.peers.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s: %s", addr, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// takePushedBlob stores a blob a peer pushes, verified against its
// digest: 201, or 204 when it was here already.
func (o *Origin) takePushedBlob(w http.ResponseWriter, r *http.Request, digest string) {
	expect, err := blob.DigestChecksums(digest)
	if err != nil {
		http.Error(w, "bad digest", http.StatusBadRequest)
		return
	}
	if _, err := o.blobs.Stat(r.Context(), digest); err == nil {
		_ = o.blobs.Keep(r.Context(), digest) // recent again: the record naming it is on its way
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if _, err := o.blobs.Put(r.Context(), r.Body, blob.PutOptions{MaxSize: o.cfg.MaxUploadBytes, Expect: expect}); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, blob.ErrDigestMismatch):
			status = http.StatusBadRequest
		case errors.Is(err, blob.ErrTooLarge):
			status = http.StatusRequestEntityTooLarge
		case errors.Is(err, blob.ErrNoSpace):
			status = http.StatusInsufficientStorage
		}
		http.Error(w, err.Error(), status)
		return
	}
	w.WriteHeader(http.StatusCreated)
}
