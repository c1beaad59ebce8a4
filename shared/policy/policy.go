// Package policy decides, from the security policies and an artifact's
// verdict (what its last completed scan found), whether an upload or a
// download is blocked, and says why in words a client shows its user.
// Origins and edges decide alike from their own copies of both.
package policy

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/signing"
)

// Decision is what the policies say of one upload or download.
type Decision struct {
	Blocked bool
	// Policy is the name of the policy that blocks, Advisories the
	// findings that violate it (none: blocked for want of a scan).
	Policy     string
	PolicyID   string
	Advisories []string
	// Reason says it for the client's user.
	Reason string
}

// Download decides a download of an artifact of repo whose verdict is v
// (nil: no scan completed), at now: blocked by the first policy (by
// name) covering the repository that blocks downloads of what violates
// it, or of what is not scanned, or that requires a signature signed
// does not find (signed nil: none is required of this download).
func Download(policies []meta.Policy, repo *meta.Repository, v *meta.Verdict, signed func(keys []string) bool, now time.Time) Decision {
	for i := range policies {
		p := &policies[i]
		if !p.Covers(repo) {
			continue
		}
		if p.Rules.RequireSignature && signed != nil && !signed(p.Rules.SigningKeys) {
			return Decision{Blocked: true, Policy: p.Name, PolicyID: p.ID,
				Reason: fmt.Sprintf("blocked by security policy %q: not signed by a key it accepts (someone who may write the repository signs it: POST /api/v1/signing/sign)", p.Name)}
		}
		if v == nil {
			if p.Rules.BlockUnscanned {
				return Decision{Blocked: true, Policy: p.Name, PolicyID: p.ID,
					Reason: fmt.Sprintf("blocked by security policy %q: not scanned yet (downloads wait for a completed scan)", p.Name)}
			}
			continue
		}
		if !p.Rules.BlockDownload {
			continue
		}
		if d := violated(p, v.Findings, now); d.Blocked {
			return d
		}
	}
	return Decision{}
}

// Upload decides an upload of an artifact of repo whose findings (what
// matching it before it is recorded found) are given, at now: blocked by
// the first policy (by name) covering the repository that blocks uploads
// of what violates it.
func Upload(policies []meta.Policy, repo *meta.Repository, findings []meta.Flagged, now time.Time) Decision {
	for i := range policies {
		p := &policies[i]
		if !p.Covers(repo) || !p.Rules.BlockUpload {
			continue
		}
		if d := violated(p, findings, now); d.Blocked {
			d.Reason = "upload " + d.Reason
			return d
		}
	}
	return Decision{}
}

// Uploads reports whether a policy covering repo blocks uploads.
func Uploads(policies []meta.Policy, repo *meta.Repository) bool {
	for i := range policies {
		if policies[i].Covers(repo) && policies[i].Rules.BlockUpload {
			return true
		}
	}
	return false
}

// violated lists the findings at or above p's threshold that p does not
// allow at now.
func violated(p *meta.Policy, findings []meta.Flagged, now time.Time) Decision {
	threshold := meta.SeverityRank(p.Rules.SeverityThreshold)
	if threshold == 0 {
		return Decision{}
	}
	d := Decision{Policy: p.Name, PolicyID: p.ID}
	var named []string
	for _, f := range findings {
		if meta.SeverityRank(f.Severity) < threshold || p.Allows(f.ID, f.Aliases, now) {
			continue
		}
		d.Advisories = append(d.Advisories, f.ID)
		if len(named) < 5 {
			named = append(named, fmt.Sprintf("%s (%s, %s)", f.ID, f.Severity, f.Package))
		}
	}
	if len(d.Advisories) == 0 {
		return Decision{}
	}
	more := ""
	if n := len(d.Advisories) - len(named); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	d.Blocked = true
	d.Reason = fmt.Sprintf("blocked by security policy %q: %s%s at or above %s", p.Name, strings.Join(named, ", "), more, p.Rules.SeverityThreshold)
	return d
}

// Admit is a format.Env's Admit over a store (an origin's, or an edge's
// replica): a file is served unless the policies, as the store holds
// them, block its download by its verdict there. A blocked download is
// answered 403 with the reason, in the client's own error shape, and
// told to violated (nil: not told).
func Admit(store *meta.Store, now func() time.Time, violated func(r *format.Request, a *meta.Artifact, repo *meta.Repository, d Decision)) func(*format.Request, *meta.Artifact) error {
	return func(r *format.Request, a *meta.Artifact) error {
		var d Decision
		repo := r.Repo
		err := store.View(func(tx *meta.Tx) error {
			if tx.Count(meta.KindPolicy) == 0 {
				return nil
			}
			policies, err := tx.Policies()
			if err != nil {
				return err
			}
			if repo == nil || repo.ID != a.RepositoryID {
				if repo, err = tx.Repo(a.RepositoryID); err != nil {
					return err
				}
			}
			var who *auth.Principal
			if r != nil {
				who = r.Principal
			}
			d = Download(policies, repo, tx.Verdict(a.ID), Signed(tx, who, repo, a), now())
			return nil
		})
		if err != nil {
			return err
		}
		if !d.Blocked {
			return nil
		}
		if violated != nil {
			violated(r, a, repo, d)
		}
		return format.Errorf(apierr.Forbidden, "%s", d.Reason).With("policy", d.Policy).With("advisories", d.Advisories).WithReason()
	}
}

// Screen is a format.Writer's Screen over an origin's store: an upload is
// recorded unless a policy covering its repository blocks uploads and
// assess (matching the stored bytes as a scan does) finds what violates
// it, then refused 403 with the reason in the client's own error shape,
// and told to violated. An upload that cannot be assessed is refused 503
// (a policy that blocks never lets through what it could not look at);
// repositories no such policy covers pay one read of the policies.
func Screen(store *meta.Store, now func() time.Time, assess func(ctx context.Context, a *meta.Artifact, repo *meta.Repository) ([]meta.Flagged, error),
	violated func(ctx context.Context, a *meta.Artifact, repo *meta.Repository, d Decision)) func(context.Context, []*meta.Artifact) error {
	return func(ctx context.Context, arts []*meta.Artifact) error {
		for _, a := range arts {
			var policies []meta.Policy
			var repo *meta.Repository
			err := store.View(func(tx *meta.Tx) error {
				if tx.Count(meta.KindPolicy) == 0 {
					return nil
				}
				var err error
				if policies, err = tx.Policies(); err != nil {
					return err
				}
				repo, err = tx.Repo(a.RepositoryID)
				return err
			})
			if err != nil {
				return err
			}
			if repo == nil || !Uploads(policies, repo) {
				continue
			}
			findings, err := assess(ctx, a, repo)
			if err != nil {
				return format.Errorf(apierr.Unavailable, "the upload could not be checked against the security policies: %v; try again", err).WithReason()
			}
			d := Upload(policies, repo, findings, now())
			if !d.Blocked {
				continue
			}
			if violated != nil {
				violated(ctx, a, repo, d)
			}
			return format.Errorf(apierr.Forbidden, "%s", d.Reason).With("policy", d.Policy).With("advisories", d.Advisories).WithReason()
		}
		return nil
	}
}

// Signed says, for a download of a by p (nil: anyone), whether a key of
// keys (none: any) signed it as it is, checking each signature of a raw
// algorithm against its key's public part (an OpenPGP signature, of the
// bytes, was checked when it was made). Those who may write the
// repository (who sign, and read what they sign first) and the
// signatures themselves (cosign's signature manifests) need none. It
// reads tx only when asked, within tx's transaction.
func Signed(tx *meta.Tx, p *auth.Principal, repo *meta.Repository, a *meta.Artifact) func(keys []string) bool {
	return func(keys []string) bool {
		if oci.SignatureArtifact(a) {
			return true
		}
		if p != nil {
			if ok, err := auth.Can(tx, p, repo, meta.ActionWrite); err == nil && ok {
				return true
			}
		}
		sigs, err := tx.Signatures(a.ID)
		if err != nil {
			return false
		}
		digest, _ := hex.DecodeString(a.Checksums.SHA256)
		for _, s := range sigs {
			if len(keys) > 0 && !slices.Contains(keys, s.KeyID) || !strings.EqualFold(s.Digest, a.Checksums.SHA256) {
				continue
			}
			k, err := tx.SigningKey(s.KeyID)
			if err != nil {
				continue // deleted: its signatures count no more
			}
			if s.Algorithm == signing.OpenPGP || signing.VerifyDigest(k.PublicKey, digest, s.Value) == nil {
				return true
			}
		}
		return false
	}
}
