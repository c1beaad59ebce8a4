package app

import (
	"context"
	"errors"
	"io"

	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// RequestScan queues a scan of an artifact p may write to (scanner: "" or
// "osv", the built-in one). An artifact with a scan queued or running
// already answers that scan.
func (a *App) RequestScan(ctx context.Context, p *auth.Principal, artifactID, scanner string) (*meta.Scan, uint64, error) {
	if a.Scans == nil {
		return nil, 0, apierr.New(apierr.Unavailable, "scans are not available on this node")
	}
	if scanner == "" {
		scanner = scan.Scanner
	}
	if scanner != scan.Scanner {
		return nil, 0, apierr.Invalid("scanner", "unknown scanner %q; the built-in scanner is %q", scanner, scan.Scanner)
	}
	if artifactID == "" {
		return nil, 0, apierr.Invalid("artifact_id", "artifact_id is required")
	}
	art, _, err := a.Artifact(ctx, p, artifactID, meta.ActionWrite)
	if err != nil {
		return nil, 0, err
	}
	// Queued here, unless a scan of the artifact is queued or running
	// already (another request's, the upload's): that one is the answer.
	// One that ended between the refusal and the look is no answer: the
	// request is queued again.
	var out *meta.Scan
	var idx uint64
	for attempt := 0; out == nil && attempt < 3; attempt++ {
		sc := meta.Scan{ID: a.NewID(), ArtifactID: art.ID, Scanner: scanner, Status: meta.ScanQueued, Trigger: "request",
			RequestedBy: p.Name(), CreatedAt: a.now().UTC()}
		idx, err = a.commit(ctx, &meta.ScansRequest{Scans: []meta.Scan{sc}})
		if err != nil && !errors.Is(err, meta.ErrConflict) {
			return nil, idx, err
		}
		a.Scans.Wake()
		err = a.view(func(tx *meta.Tx) error {
			if out = tx.QueuedScanOf(art.ID); out != nil {
				return nil
			}
			s, err := tx.Scan(sc.ID) // this one, done already
			if err == nil {
				out = s
			}
			if errors.Is(err, meta.ErrNotFound) {
				return nil // refused, and the one in the way ended meanwhile
			}
			return err
		})
		if err != nil {
			return nil, idx, err
		}
	}
	if out == nil {
		return nil, idx, apierr.New(apierr.Unavailable, "scans of this artifact kept ending as this one was asked for; ask again")
	}
	return out, idx, err
}

// ScanFilter narrows a listing of scans.
type ScanFilter struct {
	ArtifactID, RepositoryID, Status string
	Page                             Page
}

// ListScans lists the scans of artifacts p may read, newest first.
func (a *App) ListScans(_ context.Context, p *auth.Principal, in ScanFilter) (Listing[meta.Scan], error) {
	out := Listing[meta.Scan]{Page: in.Page.clamped()}
	switch in.Status {
	case "", meta.ScanQueued, meta.ScanRunning, meta.ScanCompleted, meta.ScanFailed:
	default:
		return out, apierr.Invalid("status", "status is one of queued, running, completed, failed")
	}
	err := a.view(func(tx *meta.Tx) error {
		repos, err := readableRepos(tx, p, in.RepositoryID)
		if err != nil {
			return err
		}
		// The repository may have been named by its name: repos holds its id.
		out.Items, out.Total = tx.Scans(meta.ScanFilter{ArtifactID: in.ArtifactID, Status: in.Status,
			Repos: repos, Offset: out.Page.offset(), Limit: out.Page.Limit})
		return nil
	})
	return out, err
}

// GetScan reads a scan of an artifact p may read, with its report once
// it has one.
func (a *App) GetScan(ctx context.Context, p *auth.Principal, id string) (*meta.Scan, *scan.Report, error) {
	var sc *meta.Scan
	err := a.view(func(tx *meta.Tx) error {
		var err error
		if sc, err = tx.Scan(id); err != nil {
			return err
		}
		_, err = RepoAccess(tx, p, sc.RepositoryID, meta.ActionRead)
		return err
	})
	if err != nil || a.Scans == nil {
		return sc, nil, err
	}
	rep, err := a.Scans.OpenReport(ctx, sc)
	return sc, rep, err
}

// LoadAdvisories reads an upload of OSV records (a zip of them, one, or
// a JSON array; name is the uploaded file's name, if any) and merges
// them into the advisory database every origin uses (administrators).
func (a *App) LoadAdvisories(ctx context.Context, p *auth.Principal, name string, body io.Reader) (meta.AdvisoryLoad, *meta.AdvisoryDB, error) {
	if err := requireAdmin(p); err != nil {
		return meta.AdvisoryLoad{}, nil, err
	}
	if a.Scans == nil {
		return meta.AdvisoryLoad{}, nil, apierr.New(apierr.Unavailable, "scans are not available on this node")
	}
	f, size, remove, err := a.Writer.Spill(io.LimitReader(body, scan.MaxUpload+1), "advisories")
	if err != nil {
		return meta.AdvisoryLoad{}, nil, err
	}
	defer remove()
	if size > scan.MaxUpload {
		return meta.AdvisoryLoad{}, nil, apierr.New(apierr.PayloadTooLarge, "an upload of advisories is at most %d bytes", scan.MaxUpload)
	}
	advs, err := scan.ReadAdvisories(ctx, f, size)
	if err != nil {
		return meta.AdvisoryLoad{}, nil, err
	}
	if len(advs) == 0 {
		return meta.AdvisoryLoad{}, nil, apierr.Invalid("file", "the upload holds no OSV record (*.json)")
	}
	return a.Scans.Load(context.WithoutCancel(ctx), advs, scan.Describe(name, len(advs)), p.Name())
}

// Advisories describes the advisory database in force (nil: none loaded)
// to a signed-in caller.
func (a *App) Advisories(_ context.Context, p *auth.Principal) (*meta.AdvisoryDB, error) {
	if p.Anonymous() {
		return nil, apierr.New(apierr.Unauthorized, "authentication required")
	}
	var db *meta.AdvisoryDB
	err := a.view(func(tx *meta.Tx) error { db = tx.AdvisoryDB(); return nil })
	return db, err
}
