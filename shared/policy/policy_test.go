package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// TestDecisions: the threshold, the scope, unscanned artifacts and the
// allow-list with its expiry decide; the reason names the policy and the
// advisories.
func TestDecisions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	js := &meta.Repository{ID: "r1", Format: "npm"}
	py := &meta.Repository{ID: "r2", Format: "pypi"}
	policies := []meta.Policy{
		{ID: "p1", Name: "no highs in npm", Enabled: true, Scope: meta.PolicyScope{Formats: []string{"npm"}},
			Rules: meta.PolicyRules{SeverityThreshold: "high", BlockDownload: true,
				Allow: []meta.Allowed{{ID: "CVE-OK", ExpiresAt: &later}}}},
		{ID: "p2", Name: "scanned first", Enabled: true, Scope: meta.PolicyScope{Repositories: []string{"r2"}},
			Rules: meta.PolicyRules{BlockUnscanned: true}},
		{ID: "p3", Name: "off", Rules: meta.PolicyRules{SeverityThreshold: "low", BlockDownload: true}},
	}
	verdict := func(fs ...meta.Flagged) *meta.Verdict { return &meta.Verdict{Findings: fs} }
	high := meta.Flagged{ID: "GHSA-1", Severity: "high", Package: "lodash"}
	medium := meta.Flagged{ID: "GHSA-2", Severity: "medium", Package: "lodash"}
	allowed := meta.Flagged{ID: "GHSA-3", Aliases: []string{"CVE-OK"}, Severity: "critical", Package: "x"}

	d := Download(policies, js, verdict(medium, high), nil, now)
	if !d.Blocked || d.Policy != "no highs in npm" || len(d.Advisories) != 1 || !strings.Contains(d.Reason, "GHSA-1 (high, lodash)") {
		t.Errorf("a high finding: %+v", d)
	}
	if d := Download(policies, js, verdict(medium), nil, now); d.Blocked {
		t.Errorf("below the threshold: %+v", d)
	}
	if d := Download(policies, js, verdict(allowed), nil, now); d.Blocked {
		t.Errorf("allow-listed by an alias: %+v", d)
	}
	if d := Download(policies, js, verdict(allowed), nil, later.Add(time.Second)); !d.Blocked {
		t.Error("an expired allow-list entry still allows")
	}
	if d := Download(policies, js, nil, nil, now); d.Blocked {
		t.Errorf("unscanned, outside the scope of block_unscanned: %+v", d)
	}
	if d := Download(policies, py, nil, nil, now); !d.Blocked || !strings.Contains(d.Reason, "not scanned yet") {
		t.Errorf("unscanned: %+v", d)
	}
	if d := Download(policies, py, verdict(high), nil, now); d.Blocked {
		t.Errorf("a pypi repository with a high finding (no policy of its own blocks it): %+v", d)
	}
}

// TestRequireSignature: a policy requiring a signature blocks a download
// signed refuses, by the keys it names (none: any), and lets through one
// no signature is required of (signed nil).
func TestRequireSignature(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	repo := &meta.Repository{ID: "r1", Format: "generic"}
	policies := []meta.Policy{{ID: "p1", Name: "signed only", Enabled: true, Rules: meta.PolicyRules{RequireSignature: true, SigningKeys: []string{"k1"}}}}
	var asked []string
	signedBy := func(keys ...string) func([]string) bool {
		return func(want []string) bool {
			asked = want
			for _, k := range keys {
				if slices.Contains(want, k) {
					return true
				}
			}
			return false
		}
	}
	if d := Download(policies, repo, nil, signedBy("k2"), now); !d.Blocked || !strings.Contains(d.Reason, "not signed by a key it accepts") || d.Policy != "signed only" {
		t.Errorf("signed by another key: %+v", d)
	}
	if !slices.Equal(asked, []string{"k1"}) {
		t.Errorf("the keys asked about: %v", asked)
	}
	if d := Download(policies, repo, nil, signedBy("k1"), now); d.Blocked {
		t.Errorf("signed by the key: %+v", d)
	}
	if d := Download(policies, repo, nil, nil, now); d.Blocked {
		t.Errorf("a download no signature is required of: %+v", d)
	}
}

// TestUploads: only a policy that blocks uploads refuses one, by the same
// threshold and allow-list; Uploads says whether any covers a repository.
func TestUploads(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	js := &meta.Repository{ID: "r1", Format: "npm"}
	py := &meta.Repository{ID: "r2", Format: "pypi"}
	policies := []meta.Policy{
		{ID: "p1", Name: "downloads only", Enabled: true, Rules: meta.PolicyRules{SeverityThreshold: "low", BlockDownload: true}},
		{ID: "p2", Name: "no criticals in", Enabled: true, Scope: meta.PolicyScope{Formats: []string{"npm"}},
			Rules: meta.PolicyRules{SeverityThreshold: "critical", BlockUpload: true, Allow: []meta.Allowed{{ID: "GHSA-OK"}}}},
	}
	critical := meta.Flagged{ID: "GHSA-1", Severity: "critical", Package: "lodash"}
	high := meta.Flagged{ID: "GHSA-2", Severity: "high", Package: "lodash"}
	if !Uploads(policies, js) || Uploads(policies, py) {
		t.Fatal("Uploads: only the npm repository is covered by a policy that blocks uploads")
	}
	d := Upload(policies, js, []meta.Flagged{high, critical}, now)
	if !d.Blocked || d.Policy != "no criticals in" || len(d.Advisories) != 1 || !strings.HasPrefix(d.Reason, `upload blocked by security policy "no criticals in": GHSA-1`) {
		t.Errorf("a critical finding: %+v", d)
	}
	if d := Upload(policies, js, []meta.Flagged{high}, now); d.Blocked {
		t.Errorf("below the threshold (a download-only policy would block it): %+v", d)
	}
	if d := Upload(policies, js, []meta.Flagged{{ID: "GHSA-OK", Severity: "critical"}}, now); d.Blocked {
		t.Errorf("allow-listed: %+v", d)
	}
	if d := Upload(policies, py, []meta.Flagged{critical}, now); d.Blocked {
		t.Errorf("out of scope: %+v", d)
	}
}
