package origin

import (
	"context"
	"log/slog"
	"time"

	"github.com/depot-registry/depot/origin/api"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	secpolicy "github.com/depot-registry/depot/shared/policy"
)

// The security scans and policies of an origin: the scanner, and the
// policies' checks of downloads and uploads.

// screenTimeout bounds the matching of an upload a security policy may
// block (an image's layers are read): past it the upload is refused 503.
const screenTimeout = 5 * time.Minute

// newScans makes the scanner, which reports at the origin's base URL.
func (o *Origin) newScans(formats map[string]format.Format, now func() time.Time, log *slog.Logger) *scan.Service {
	return scan.New(scan.Config{Store: o.store, Commit: o.commit, Blobs: o.blobs, Formats: formats, NewID: auth.NewID, Node: o.nodeID,
		Now: now, Log: log.With("component", "scan"), ScanOnUpload: func() bool { return o.app.Settings().ScanOnUpload },
		Directory: func() string { return o.app.Settings().AdvisoriesDirectory },
		ReportURL: func(id string) string {
			base := ""
			if b := o.baseURL.Load(); b != nil {
				base = *b
			}
			return base + api.Prefix + "/security/scans/" + id
		}})
}

// admitDownloads refuses the downloads the policies block, recording each
// refusal as policy.violated.
func (o *Origin) admitDownloads(now func() time.Time) func(*format.Request, *meta.Artifact) error {
	return secpolicy.Admit(o.store, now, func(r *format.Request, a *meta.Artifact, repo *meta.Repository, d secpolicy.Decision) {
		who := r.Principal.Actor()
		who.IPAddress = r.RemoteAddr
		o.events.Add(meta.ViolationEvent("download", a, repo, d.PolicyID, d.Policy, d.Reason, d.Advisories, who, now()))
	})
}

// screenUploads matches the uploads a policy blocks before they are
// recorded (screenTimeout at most) and refuses them, recording each
// refusal as policy.violated.
func (o *Origin) screenUploads(now func() time.Time) func(context.Context, []*meta.Artifact) error {
	return secpolicy.Screen(o.store, now, func(ctx context.Context, a *meta.Artifact, repo *meta.Repository) ([]meta.Flagged, error) {
		ctx, cancel := context.WithTimeout(ctx, screenTimeout)
		defer cancel()
		rep, err := o.scans.Assess(ctx, a, repo)
		return rep.Flagged(), err
	}, func(ctx context.Context, a *meta.Artifact, repo *meta.Repository, d secpolicy.Decision) {
		who, _ := meta.ActorOf(ctx)
		refused := *a
		refused.ID = "" // never recorded
		o.events.Add(meta.ViolationEvent("upload", &refused, repo, d.PolicyID, d.Policy, d.Reason, d.Advisories, who, now()))
	})
}
