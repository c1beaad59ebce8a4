package app

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// PolicyInput is what creating or changing a security policy takes; in
// a change, nil keeps what the policy has.
type PolicyInput struct {
	Name        *string     `json:"name,omitempty"`
	Description *string     `json:"description,omitempty"`
	Enabled     *bool       `json:"enabled,omitempty"`
	Scope       *ScopeInput `json:"scope,omitempty"`
	Rules       *RulesInput `json:"rules,omitempty"`
}

// ScopeInput names repositories (by name or id) and formats; empty: all.
type ScopeInput struct {
	Repositories []string `json:"repositories"`
	Formats      []string `json:"formats"`
}

// RulesInput is a policy's rules as given.
type RulesInput struct {
	SeverityThreshold string       `json:"severity_threshold"`
	BlockUpload       bool         `json:"block_upload"`
	BlockDownload     bool         `json:"block_download"`
	BlockUnscanned    bool         `json:"block_unscanned"`
	RequireSignature  bool         `json:"require_signature"`
	SigningKeys       []string     `json:"signing_keys"`
	Allowlist         []AllowInput `json:"allowlist"`
}

// AllowInput is an allow-list entry as given.
type AllowInput struct {
	ID        string     `json:"id"`
	Reason    string     `json:"reason"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ListPolicies lists the security policies (anyone signed in).
func (a *App) ListPolicies(_ context.Context, p *auth.Principal) ([]meta.Policy, error) {
	if p.Anonymous() {
		return nil, apierr.New(apierr.Unauthorized, "authentication required")
	}
	var out []meta.Policy
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.Policies(); return err })
	if out == nil {
		out = []meta.Policy{}
	}
	return out, err
}

// GetPolicy reads a policy (anyone signed in).
func (a *App) GetPolicy(_ context.Context, p *auth.Principal, id string) (*meta.Policy, error) {
	if p.Anonymous() {
		return nil, apierr.New(apierr.Unauthorized, "authentication required")
	}
	var out *meta.Policy
	err := a.view(func(tx *meta.Tx) error { var err error; out, err = tx.Policy(id); return err })
	return out, err
}

// CreatePolicy creates a security policy (administrators); it is enabled
// unless it says otherwise.
func (a *App) CreatePolicy(ctx context.Context, p *auth.Principal, in PolicyInput) (*meta.Policy, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	now := a.now().UTC()
	pol := meta.Policy{ID: a.NewID(), Enabled: true, CreatedAt: now, CreatedBy: p.Name(), UpdatedAt: now}
	var idx uint64
	idx, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		if err := a.applyPolicy(tx, p, &pol, in, now); err != nil {
			return nil, err
		}
		return &meta.PolicyPut{Policy: pol, Create: true}, nil
	})
	if err != nil {
		return nil, idx, err
	}
	return &pol, idx, nil
}

// UpdatePolicy changes the fields given of a policy (administrators).
func (a *App) UpdatePolicy(ctx context.Context, p *auth.Principal, id string, in PolicyInput) (*meta.Policy, uint64, error) {
	if err := requireAdmin(p); err != nil {
		return nil, 0, err
	}
	var pol meta.Policy
	idx, err := a.decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		old, err := tx.Policy(id)
		if err != nil {
			return nil, err
		}
		pol = *old
		was := old.UpdatedAt
		now := a.now().UTC()
		if err := a.applyPolicy(tx, p, &pol, in, now); err != nil {
			return nil, err
		}
		pol.UpdatedAt = now
		return &meta.PolicyPut{Policy: pol, Was: &was}, nil
	})
	if err != nil {
		return nil, idx, err
	}
	return &pol, idx, nil
}

// DeletePolicy removes a policy (administrators).
func (a *App) DeletePolicy(ctx context.Context, p *auth.Principal, id string) (uint64, error) {
	if err := requireAdmin(p); err != nil {
		return 0, err
	}
	return a.commit(ctx, &meta.PolicyDelete{ID: id})
}

// applyPolicy puts the fields given into pol, resolving repositories by
// name and checking formats; allow-list entries keep who added them.
func (a *App) applyPolicy(tx *meta.Tx, p *auth.Principal, pol *meta.Policy, in PolicyInput, now time.Time) error {
	if in.Name != nil {
		pol.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		pol.Description = *in.Description
	}
	if in.Enabled != nil {
		pol.Enabled = *in.Enabled
	}
	if in.Scope != nil {
		if len(in.Scope.Repositories) > meta.MaxPolicyScope || len(in.Scope.Formats) > meta.MaxPolicyScope {
			return apierr.Invalid("scope", "at most %d repositories and formats", meta.MaxPolicyScope)
		}
		scope := meta.PolicyScope{Repositories: []string{}, Formats: []string{}}
		for _, ref := range in.Scope.Repositories {
			r, err := tx.RepoByRef(ref)
			if err != nil {
				return apierr.Invalid("scope.repositories", "no repository %q", ref)
			}
			if !slices.Contains(scope.Repositories, r.ID) {
				scope.Repositories = append(scope.Repositories, r.ID)
			}
		}
		for _, f := range in.Scope.Formats {
			if !knownFormatIn(tx, f) {
				return apierr.Invalid("scope.formats", "unknown format %q; known: %s", f, strings.Join(a.knownFormats(), ", "))
			}
			if !slices.Contains(scope.Formats, f) {
				scope.Formats = append(scope.Formats, f)
			}
		}
		pol.Scope = scope
	}
	if in.Rules != nil {
		r := in.Rules
		rules := meta.PolicyRules{SeverityThreshold: strings.ToLower(r.SeverityThreshold), BlockUpload: r.BlockUpload,
			BlockDownload: r.BlockDownload, BlockUnscanned: r.BlockUnscanned, RequireSignature: r.RequireSignature, Allow: []meta.Allowed{}}
		if len(r.SigningKeys) > meta.MaxPolicyScope {
			return apierr.Invalid("rules.signing_keys", "at most %d keys", meta.MaxPolicyScope)
		}
		for _, id := range r.SigningKeys {
			if _, err := tx.SigningKey(id); err != nil {
				return apierr.Invalid("rules.signing_keys", "no signing key %q", id)
			}
			if !slices.Contains(rules.SigningKeys, id) {
				rules.SigningKeys = append(rules.SigningKeys, id)
			}
		}
		for _, e := range r.Allowlist {
			entry := meta.Allowed{ID: strings.TrimSpace(e.ID), Reason: e.Reason, ExpiresAt: e.ExpiresAt, AddedBy: p.Name(), AddedAt: now}
			if i := slices.IndexFunc(pol.Rules.Allow, func(o meta.Allowed) bool { return o.ID == entry.ID }); i >= 0 {
				entry.AddedBy, entry.AddedAt = pol.Rules.Allow[i].AddedBy, pol.Rules.Allow[i].AddedAt
			}
			if entry.Reason == "" {
				return apierr.Invalid("rules.allowlist", "allow-listing %s needs a reason", entry.ID)
			}
			rules.Allow = append(rules.Allow, entry)
		}
		pol.Rules = rules
	}
	if pol.Scope.Repositories == nil {
		pol.Scope = meta.PolicyScope{Repositories: []string{}, Formats: []string{}}
	}
	if field, msg := pol.Problem(); field != "" {
		return apierr.Invalid(field, "%s", msg)
	}
	return nil
}
