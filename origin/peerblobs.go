package origin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/fs"
)

// In a cluster a blob is first on the origin that took its upload. A
// download can arrive at any origin: one that does not have the blob yet
// fetches it from a peer that has it (the peers' RPC on the raft port),
// verifies it against its digest, keeps it, and serves it. One fetch per
// digest however many readers ask at once.

// BlobsPath is the peers' RPC route that serves this origin's own blobs.
const BlobsPath = "/v1/blobs/"

// peerBlobs is the blob store readers see: this origin's, and its peers'
// through it.
type peerBlobs struct {
	*fs.FS
	peers  func() []string // raft addresses of the other origins, the leader first
	client *http.Client
	flight singleflight.Group
}

// Open opens digest here, fetching it from a peer first when it is not
// here yet.
func (p *peerBlobs) Open(ctx context.Context, digest string) (blob.File, error) {
	f, err := p.FS.Open(ctx, digest)
	if !errors.Is(err, blob.ErrNotFound) || p.peers == nil {
		return f, err
	}
	if p.fetchOnce(ctx, digest) != nil {
		return nil, err // still not found: say so, not why the peers failed
	}
	return p.FS.Open(ctx, digest)
}

// fetchOnce fetches digest from a peer, once however many ask at once.
func (p *peerBlobs) fetchOnce(ctx context.Context, digest string) error {
	_, err, _ := p.flight.Do(digest, func() (any, error) { return nil, p.fetch(context.WithoutCancel(ctx), digest) })
	return err
}

// fetch copies digest from the first peer that has it into the store.
func (p *peerBlobs) fetch(ctx context.Context, digest string) error {
	expect, err := blob.DigestChecksums(digest)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	var errs []error
	for _, addr := range p.peers() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+BlobsPath+digest, nil)
		if err != nil {
			return err
		}
		resp, err := p.client.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			errs = append(errs, fmt.Errorf("%s: %s", addr, resp.Status))
			continue
		}
		_, err = p.FS.Put(ctx, resp.Body, blob.PutOptions{Expect: expect})
		resp.Body.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return fmt.Errorf("no peer gave %s: %w", digest, errors.Join(errs...))
}

// peerBlobHandler answers the peers on /v1/blobs/<digest>: GET (Range
// honoured) and HEAD of a blob this origin holds, never asking further
// peers; PUT of a blob a peer pushes to make an upload durable.
func (o *Origin) peerBlobHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest := strings.TrimPrefix(r.URL.Path, BlobsPath)
		if _, _, err := blob.ParseDigest(digest); err != nil {
			http.Error(w, "bad digest", http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPut:
			o.takePushedBlob(w, r, digest)
			return
		default:
			http.Error(w, "GET, HEAD or PUT", http.StatusMethodNotAllowed)
			return
		}
		f, err := o.blobs.Open(r.Context(), digest)
		if errors.Is(err, blob.ErrNotFound) {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", time.Time{}, f)
	})
}

// peerAddrs are the raft addresses of the other voters, the leader first:
// where a blob that is not here is asked for.
func (o *Origin) peerAddrs() []string {
	servers, err := o.node.Servers()
	if err != nil {
		return nil
	}
	_, leaderAddr := o.node.Leader()
	var out []string
	for _, s := range servers {
		if s.ID == o.nodeID {
			continue
		}
		if s.Addr == leaderAddr {
			out = append([]string{s.Addr}, out...)
		} else {
			out = append(out, s.Addr)
		}
	}
	return out
}
