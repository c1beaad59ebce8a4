package protocol

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/progress"
)

// Bounds of one feed read.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
	MaxWait      = 60 * time.Second
	// MaxPrincipals bounds the users and groups one catch-up read names.
	MaxPrincipals = 500
)

// FeedQuery is one read of a node's change feed (GET
// /edge-nodes/:id/feed?<Values>): the client encodes it, the origin
// parses it back with ParseFeedQuery.
type FeedQuery struct {
	// Since is the last index the reader has applied (0: none).
	Since uint64
	// Repo, when set, reads only that repository's records (an edge
	// catching up on a repository it was just given); it must be assigned.
	Repo string
	// Principals, when set, reads the current records of these users
	// (with their API tokens and sessions) and groups, those of them in
	// the node's audience: an edge catching up on whom a change brought
	// in (at most MaxPrincipals). Since, Limit and Wait do not apply.
	Principals []string
	// Global, when set, reads only the global records (the audience's
	// users with their tokens and sessions, its groups): an edge whose
	// audience has just become every user.
	Global bool
	// Kinds are the record kinds the reader can apply; nil: those of an
	// edge from before readers named them. No record of another kind is
	// sent.
	Kinds []meta.Kind
	// Limit bounds the changes answered (0: DefaultLimit).
	Limit int
	// Wait is how long to wait for a change when there is none yet.
	Wait time.Duration
}

// Values encodes q as query parameters.
func (q FeedQuery) Values() url.Values {
	v := url.Values{"since": {strconv.FormatUint(q.Since, 10)}}
	if q.Repo != "" {
		v.Set("repository_id", q.Repo)
	}
	if len(q.Principals) > 0 {
		v.Set("principals", strings.Join(q.Principals, ","))
	}
	if q.Global {
		v.Set("global", "1")
	}
	if q.Kinds != nil {
		kinds := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = strconv.Itoa(int(k))
		}
		v.Set("kinds", strings.Join(kinds, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Wait > 0 {
		v.Set("wait", strconv.Itoa(int(q.Wait/time.Second)))
	}
	return v
}

// ParseFeedQuery reads a FeedQuery from query parameters, bounded: a
// malformed or oversized one is an apierr validation error naming the
// parameter.
func ParseFeedQuery(v url.Values) (FeedQuery, error) {
	var q FeedQuery
	for _, f := range []struct {
		name string
		max  uint64
		set  func(uint64)
	}{
		{"since", math.MaxUint64, func(n uint64) { q.Since = n }},
		{"limit", MaxLimit, func(n uint64) { q.Limit = int(n) }},
		{"wait", uint64(MaxWait / time.Second), func(n uint64) { q.Wait = time.Duration(n) * time.Second }},
	} {
		if raw := v.Get(f.name); raw != "" {
			n, err := strconv.ParseUint(raw, 10, 64)
			if err != nil || n > f.max {
				return q, apierr.Invalid(f.name, "%s must be a whole number up to %d", f.name, f.max)
			}
			f.set(n)
		}
	}
	q.Repo, q.Global = v.Get("repository_id"), v.Get("global") == "1"
	if raw := v.Get("principals"); raw != "" {
		q.Principals = strings.Split(raw, ",")
		if len(q.Principals) > MaxPrincipals || len(raw) > MaxPrincipals*80 {
			return q, apierr.Invalid("principals", "at most %d user and group ids in one read", MaxPrincipals)
		}
	}
	if raw := v.Get("kinds"); raw != "" {
		for _, k := range strings.SplitN(raw, ",", 257) {
			n, err := strconv.ParseUint(k, 10, 8)
			if err != nil || len(q.Kinds) == 256 {
				return q, apierr.Invalid("kinds", "kinds must be up to 256 record kind numbers, comma-separated")
			}
			q.Kinds = append(q.Kinds, meta.Kind(n))
		}
	}
	return q, nil
}

// Page is what one feed read answers.
type Page struct {
	Changes []meta.Change `json:"changes"`
	// Next is the index to read from next: the reader has seen everything
	// it may see up to it.
	Next uint64 `json:"next"`
}

// Report is what a node says of itself in a heartbeat (the body of
// POST /api/v1/edge-nodes/:id/heartbeat).
type Report struct {
	AppliedIndex uint64 `json:"applied_index"`
	CachedBytes  int64  `json:"cached_bytes"`
	MissingBlobs int64  `json:"missing_blobs"`
	Version      string `json:"version"`
	// Downloads the node served since its last report: the origin counts
	// them in one go, never a log entry per download.
	Downloads int64 `json:"downloads"`
	// Sync is the progress of the node's prefetch (absent from nodes
	// before it was reported).
	Sync *progress.Sync `json:"sync,omitempty"`
	// Seen are the artifacts the node served since its last report, each
	// once (at most MaxSeen): the origins record their last download
	// day, which retention rules read (absent from nodes before them).
	Seen []string `json:"seen,omitempty"`
}

// MaxSeen bounds the artifacts one report names.
const MaxSeen = 5000

// MaxEvents bounds one batch of downloads a node sends.
const MaxEvents = 1000

// Download is a download a node served, as it reports it: only what it
// witnessed, by ids (the artifact, the principal, the client's address,
// when). The origin builds the event from its own store, for an artifact
// of a repository assigned to the node.
type Download struct {
	ArtifactID string    `json:"artifact_id"`
	UserID     string    `json:"user_id,omitempty"` // "" for anonymous
	Remote     string    `json:"remote,omitempty"`  // the client's address
	At         time.Time `json:"at"`
}

// Violation is a download a node refused because a security policy, as
// its replica holds it, blocks the artifact; as a Download, only what it
// witnessed: the origin decides again from its own store what to record.
type Violation struct {
	ArtifactID string    `json:"artifact_id"`
	PolicyID   string    `json:"policy_id"`
	UserID     string    `json:"user_id,omitempty"`
	Remote     string    `json:"remote,omitempty"`
	At         time.Time `json:"at"`
}

// Events is a batch of downloads a node served, or of downloads it
// refused by a policy (the body of POST /api/v1/edge-nodes/:id/events;
// an origin that predates Violations ignores them).
type Events struct {
	Downloads  []Download  `json:"downloads"`
	Violations []Violation `json:"violations,omitempty"`
}

// EventsAnswer says how many of a batch the origin took; the others were
// dropped there (its queue was full, the artifact gone, the node past
// its rate) and counted.
type EventsAnswer struct {
	Accepted int `json:"accepted"`
}

// Assignment is an origin's answer to a heartbeat: what the node serves,
// and how far the origin's log is.
type Assignment struct {
	RepositoryIDs []string `json:"repository_ids"`
	OriginIndex   uint64   `json:"origin_index"`
	// Origins are the API URLs of the cluster's origins that are alive,
	// so a node given one origin finds the others.
	Origins []string `json:"origins,omitempty"`
	// RecordDownloads: the node sends its downloads as events (see
	// POST /edge-nodes/:id/events), those made from RecordDownloadsSince
	// on (zero: all it holds); false: it only counts them.
	RecordDownloads      bool      `json:"record_downloads,omitempty"`
	RecordDownloadsSince time.Time `json:"record_downloads_since,omitempty"`
}

// VouchRequest asks an origin to verify a JWT presented to the node.
type VouchRequest struct {
	Token string `json:"token"`
}

// Vouch is an origin's verdict on a JWT: Claims when it signed the token,
// the token is unexpired and its login session, if any, is active.
type Vouch struct {
	Valid  bool         `json:"valid"`
	Claims *auth.Claims `json:"claims,omitempty"`
}

// PasswordCheck asks an origin whether a password is a user's (an edge
// holds no password hashes): the client's address goes with it, so the
// origin counts a failure against it as well as against the node.
type PasswordCheck struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Remote   string `json:"remote"`
}

// PasswordVerdict is an origin's answer to a PasswordCheck.
type PasswordVerdict struct {
	Valid bool `json:"valid"`
}
