package meta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Security policies and verdicts. A policy says what is blocked (by the
// severity of findings, or for want of a scan) and where (repositories,
// formats); a verdict is what the last completed scan of an artifact
// found, by advisory id and severity. Both are replicated to edges (a
// verdict with its repository), so every node decides a download alike,
// from its own replica, with every origin down; the advisory database
// itself stays on the origins.

const (
	KindPolicy      Kind    = 28 // kinds and spaces share numbers: 20-27 are lookups
	KindVerdict     Kind    = 29
	CmdPolicyPut    CmdType = 53
	CmdPolicyDelete CmdType = 54
	CmdViolations   CmdType = 55
)

func init() {
	declareKind(KindPolicy, kindDecl{Name: "security policies", Bucket: "policies"})
	declareKind(KindVerdict, kindDecl{Name: "verdicts", Bucket: "verdicts", Repo: scanRepo})
	declareCommand(CmdPolicyPut, func() Command { return new(PolicyPut) })
	declareCommand(CmdPolicyDelete, func() Command { return new(PolicyDelete) })
	declareCommand(CmdViolations, func() Command { return new(ViolationsRecord) })
}

// Policy is a security policy.
type Policy struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Enabled     bool        `json:"enabled"`
	Scope       PolicyScope `json:"scope"`
	Rules       PolicyRules `json:"rules"`
	CreatedAt   time.Time   `json:"created_at"`
	CreatedBy   string      `json:"created_by,omitempty"`
	UpdatedAt   time.Time   `json:"updated_at"`
}

// PolicyScope is where a policy applies: the repositories (ids) and
// formats named, each list empty for all.
type PolicyScope struct {
	Repositories []string `json:"repositories"`
	Formats      []string `json:"formats"`
}

// PolicyRules is what a policy blocks.
type PolicyRules struct {
	// SeverityThreshold: a finding at or above it (critical, high,
	// medium, low) violates the policy; "" none does.
	SeverityThreshold string `json:"severity_threshold"`
	// BlockUpload refuses an upload that violates it; BlockDownload
	// refuses downloads of an artifact that does; BlockUnscanned refuses
	// downloads of an artifact no scan has completed for.
	BlockUpload    bool `json:"block_upload"`
	BlockDownload  bool `json:"block_download"`
	BlockUnscanned bool `json:"block_unscanned"`
	// RequireSignature refuses downloads of an artifact no signing key
	// of SigningKeys (empty: any key of this registry) signed as it is;
	// those who may write the repository (who sign) are let through.
	RequireSignature bool     `json:"require_signature"`
	SigningKeys      []string `json:"signing_keys,omitempty"`
	// Allow lists advisories that do not count, each until it expires.
	Allow []Allowed `json:"allowlist"`
}

// Allowed is an advisory a policy lets through, until ExpiresAt (nil:
// until removed), with why and who said so.
type Allowed struct {
	ID        string     `json:"id"`
	Reason    string     `json:"reason"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	AddedBy   string     `json:"added_by,omitempty"`
	AddedAt   time.Time  `json:"added_at"`
}

// Bounds of a policy.
const (
	MaxPolicyName  = 200
	MaxPolicyText  = 2000
	MaxPolicyScope = 1000
	MaxAllowed     = 1000
	MaxPolicies    = 1000
)

// Problem says what is wrong with a policy, for its author: the field
// and why ("" when nothing is).
func (p *Policy) Problem() (field, msg string) {
	switch {
	case strings.TrimSpace(p.Name) == "" || len(p.Name) > MaxPolicyName:
		return "name", fmt.Sprintf("a policy needs a name of at most %d bytes", MaxPolicyName)
	case len(p.Description) > MaxPolicyText:
		return "description", fmt.Sprintf("at most %d bytes", MaxPolicyText)
	case len(p.Scope.Repositories) > MaxPolicyScope || len(p.Scope.Formats) > MaxPolicyScope:
		return "scope", fmt.Sprintf("at most %d repositories and formats", MaxPolicyScope)
	case p.Rules.SeverityThreshold != "" && SeverityRank(p.Rules.SeverityThreshold) == 0:
		return "rules.severity_threshold", "one of critical, high, medium, low, or empty"
	case len(p.Rules.Allow) > MaxAllowed:
		return "rules.allowlist", fmt.Sprintf("at most %d advisories", MaxAllowed)
	case len(p.Rules.SigningKeys) > MaxPolicyScope:
		return "rules.signing_keys", fmt.Sprintf("at most %d keys", MaxPolicyScope)
	}
	for _, a := range p.Rules.Allow {
		if a.ID == "" || len(a.ID) > 256 || len(a.Reason) > MaxPolicyText {
			return "rules.allowlist", "each entry names an advisory id (at most 256 bytes) and a reason"
		}
	}
	return "", ""
}

// SeverityRank orders severities: critical 4, high 3, medium 2, low 1,
// anything else 0.
func SeverityRank(s string) int {
	switch s {
	case "critical":
		return 4
	case "high":
		return 3
	case "medium":
		return 2
	case "low":
		return 1
	}
	return 0
}

// Covers reports whether the policy applies to a repository.
func (p *Policy) Covers(r *Repository) bool {
	return p.Enabled && (len(p.Scope.Repositories) == 0 || slices.Contains(p.Scope.Repositories, r.ID)) &&
		(len(p.Scope.Formats) == 0 || slices.Contains(p.Scope.Formats, r.Format))
}

// Allows reports whether advisory id (or one of its aliases) is
// allow-listed at now.
func (p *Policy) Allows(id string, aliases []string, now time.Time) bool {
	for _, a := range p.Rules.Allow {
		if (a.ID == id || slices.Contains(aliases, a.ID)) && (a.ExpiresAt == nil || now.Before(*a.ExpiresAt)) {
			return true
		}
	}
	return false
}

// PolicyPut creates a policy (Create: refused when its id or name is
// taken) or replaces one (refused when it is gone, or was changed since
// it was read at UpdatedAt Was).
type PolicyPut struct {
	Policy Policy     `json:"policy"`
	Create bool       `json:"create,omitempty"`
	Was    *time.Time `json:"was,omitempty"`
}

func (*PolicyPut) Type() CmdType { return CmdPolicyPut }
func (*PolicyPut) Scope() string { return "" }

func (c *PolicyPut) apply(tx *Tx) error {
	p := c.Policy
	if p.ID == "" {
		return Invalidf("a policy needs an id")
	}
	if field, msg := p.Problem(); field != "" {
		return Invalidf("%s: %s", field, msg)
	}
	old, err := tx.Policy(p.ID)
	switch {
	case c.Create && err == nil:
		return Conflictf("policy %s exists", p.ID)
	case c.Create && tx.Count(KindPolicy) >= MaxPolicies:
		return Invalidf("at most %d policies", MaxPolicies)
	case !c.Create && err != nil:
		return err
	case !c.Create && c.Was != nil && !old.UpdatedAt.Equal(*c.Was):
		return Conflictf("policy %s was changed meanwhile: read it again", p.Name)
	}
	all, err := tx.Policies()
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.ID != p.ID && strings.EqualFold(o.Name, p.Name) {
			return Conflictf("a policy is named %q already", p.Name)
		}
	}
	return tx.putRec(KindPolicy, p.ID, p)
}

// PolicyDelete removes a policy.
type PolicyDelete struct {
	ID string `json:"id"`
}

func (*PolicyDelete) Type() CmdType { return CmdPolicyDelete }
func (*PolicyDelete) Scope() string { return "" }

func (c *PolicyDelete) apply(tx *Tx) error {
	if _, err := tx.Policy(c.ID); err != nil {
		return err
	}
	return tx.delRec(KindPolicy, c.ID)
}

// Policy reads one policy.
func (tx *Tx) Policy(id string) (*Policy, error) { return getRec[Policy](tx, KindPolicy, id, "policy") }

// Policies lists the policies by name.
func (tx *Tx) Policies() ([]Policy, error) {
	out, err := listRecs[Policy](tx, KindPolicy, "")
	slices.SortFunc(out, func(a, b Policy) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, err
}

// Verdict is what the last completed scan of an artifact found: enough
// for any node to apply the policies.
type Verdict struct {
	ArtifactID   string    `json:"artifact_id"`
	RepositoryID string    `json:"repository_id"`
	ScanID       string    `json:"scan_id"`
	ScannedAt    time.Time `json:"scanned_at"`
	// Advisories is the digest of the advisory database it was matched
	// against.
	Advisories string    `json:"advisories,omitempty"`
	Findings   []Flagged `json:"findings,omitempty"`
	// Truncated: more findings than MaxVerdictFindings (the most severe
	// are kept).
	Truncated bool `json:"truncated,omitempty"`
}

// Flagged is one finding of a verdict.
type Flagged struct {
	ID       string   `json:"id"`
	Aliases  []string `json:"aliases,omitempty"`
	Severity string   `json:"severity"`
	Package  string   `json:"package"`
}

// MaxVerdictFindings bounds a verdict.
const MaxVerdictFindings = 500

// Verdict reads an artifact's verdict (nil: no scan completed).
func (tx *Tx) Verdict(artifactID string) *Verdict {
	v, err := getRec[Verdict](tx, KindVerdict, artifactID, "verdict")
	if err != nil {
		return nil
	}
	return v
}

// putVerdict records the verdict of a completed scan, the most severe
// findings first when they must be cut.
func (tx *Tx) putVerdict(v Verdict) error {
	slices.SortStableFunc(v.Findings, func(a, b Flagged) int { return SeverityRank(b.Severity) - SeverityRank(a.Severity) })
	if len(v.Findings) > MaxVerdictFindings {
		v.Findings, v.Truncated = v.Findings[:MaxVerdictFindings], true
	}
	for i := range v.Findings {
		v.Findings[i].ID = clip(v.Findings[i].ID, 256)
		v.Findings[i].Package = clip(v.Findings[i].Package, 512)
		if len(v.Findings[i].Aliases) > 16 {
			v.Findings[i].Aliases = v.Findings[i].Aliases[:16]
		}
	}
	return tx.putRec(KindVerdict, v.ArtifactID, v)
}

// forgetVerdict drops the verdict of an artifact that goes.
func (tx *Tx) forgetVerdict(artifactID string) error {
	if raw, _ := tx.lookup(Space(KindVerdict), artifactID); raw == nil {
		return nil
	}
	return tx.delRec(KindVerdict, artifactID)
}

// ViolationsRecord records policy.violated events a node saw (a blocked
// download), in a batch, as EventsRecord records downloads: a command of
// its own, which the leader commits only once every origin knows it.
type ViolationsRecord struct {
	Events []Event `json:"events"`
}

func (*ViolationsRecord) Type() CmdType { return CmdViolations }
func (*ViolationsRecord) Scope() string { return "" }

func (c *ViolationsRecord) apply(tx *Tx) error {
	if len(c.Events) == 0 || len(c.Events) > MaxRecordedEvents {
		return Invalidf("a violations record holds 1 to %d events", MaxRecordedEvents)
	}
	for _, e := range c.Events {
		if e.Name != EventPolicyViolated || len(e.Data) > 4096 || !json.Valid(e.Data) {
			return Invalidf("only policy.violated events of at most 4 KiB are recorded this way")
		}
	}
	for _, e := range c.Events {
		if err := tx.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// violationData is the data of a policy.violated event.
type violationData struct {
	Action         string   `json:"action"` // download, upload
	PolicyID       string   `json:"policy_id"`
	PolicyName     string   `json:"policy_name"`
	ArtifactID     string   `json:"artifact_id,omitempty"`
	RepositoryID   string   `json:"repository_id"`
	RepositoryName string   `json:"repository_name"`
	PackageName    string   `json:"package_name"`
	Version        string   `json:"version"`
	Advisories     []string `json:"advisories"`
	Reason         string   `json:"reason"`
	User           Actor    `json:"user"`
}

// ViolationEvent is the policy.violated event of action (download,
// upload) on a (of r) by who, refused by policy p for advisories.
func ViolationEvent(action string, a *Artifact, r *Repository, policyID, policyName, reason string, advisories []string, who Actor, at time.Time) Event {
	if len(advisories) > 50 {
		advisories = advisories[:50]
	}
	return Event{Name: EventPolicyViolated, Timestamp: at.UTC(), RepositoryID: r.ID, Format: r.Format, UserID: who.UserID,
		Data: mustJSON(violationData{Action: action, PolicyID: policyID, PolicyName: policyName, ArtifactID: a.ID, RepositoryID: r.ID,
			RepositoryName: r.Name, PackageName: a.PackageName, Version: a.Version, Advisories: advisories, Reason: clip(reason, 1024), User: who})}
}
