package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
)

// Upload sessions are uploads of the blob ingester (Writer.Ingest), whose
// label says whose they are. They are not metadata: a session becomes a
// blob, and then one KV command links it, only when it is closed with a
// digest that matches.

// session is an upload's label.
type session struct {
	RepoID  string `json:"repo_id"`
	Name    string `json:"name"`  // full OCI name it was started under
	Owner   string `json:"owner"` // user id; only they may continue it
	Started string `json:"started"`
}

func parseSession(label []byte) (session, bool) {
	var s session
	return s, json.Unmarshal(label, &s) == nil
}

// sweep drops uploads idle for longer than SessionTTL and reports how many
// remain, in all and of owner, so abandoned uploads neither fill the disk
// nor the limits.
func (f *Format) sweep(ctx context.Context, w *format.Writer, owner string) (live, mine int, err error) {
	cutoff := f.Env.Time().Add(-SessionTTL)
	stale := false
	err = w.Ingest.Uploads(ctx, func(u blob.UploadInfo) error {
		if u.ModTime.Before(cutoff) {
			stale = true
			return nil
		}
		live++
		if s, ok := parseSession(u.Label); ok && s.Owner == owner {
			mine++
		}
		return nil
	})
	if err == nil && stale {
		_, err = w.Ingest.SweepUploads(ctx, cutoff)
	}
	return live, mine, err
}

// createSession starts an empty session.
func (f *Format) createSession(ctx context.Context, w *format.Writer, repoID, name, owner string) (blob.Upload, error) {
	live, mine, err := f.sweep(ctx, w, owner)
	if err != nil {
		return nil, err
	}
	if live >= MaxSessions || mine >= MaxSessionsPerUser {
		return nil, errf(http.StatusTooManyRequests, codeTooManyRequests, "too many uploads in progress; retry later")
	}
	label, err := json.Marshal(session{RepoID: repoID, Name: name, Owner: owner, Started: f.Env.Time().Format(time.RFC3339)})
	if err != nil {
		return nil, err
	}
	return w.Ingest.Create(ctx, label)
}

// openSession finds a live session of name started by owner; anything
// else is BLOB_UPLOAD_UNKNOWN, so ids of other people's uploads reveal
// nothing.
func (f *Format) openSession(ctx context.Context, w *format.Writer, id, repoID, name, owner string) (blob.Upload, error) {
	unknown := errf(http.StatusNotFound, codeBlobUploadUnknown, "upload %s not found", id)
	u, err := w.Ingest.Resume(ctx, id)
	if errors.Is(err, blob.ErrUploadUnknown) {
		return nil, unknown
	}
	if err != nil {
		return nil, err
	}
	s, ok := parseSession(u.Label())
	if !ok || s.RepoID != repoID || s.Name != name || s.Owner != owner || f.Env.Time().Sub(u.ModTime()) > SessionTTL {
		return nil, unknown
	}
	return u, nil
}

// rangeHeader is the spec's inclusive "0-<last>", without "bytes=".
func rangeHeader(u blob.Upload) string {
	if u.Size() == 0 {
		return "0-0"
	}
	return fmt.Sprintf("0-%d", u.Size()-1)
}
