package meta

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Retention: each repository may carry a rule saying which versions of
// its packages are kept (Repository.Retention; without one the
// installation's default applies, a setting), and the origins remember
// the day each artifact was last downloaded (KindDownloaded) so that a
// rule can keep what is in use. The origin's retention job
// (origin/service/retention) reads both and deletes through each
// format's own delete; RetentionRan records how its last run went.

const (
	// KindDownloaded maps an artifact id to the last day (Unix days,
	// UTC) a download of it was counted. Origins only: an edge reports
	// what it served with its heartbeat.
	KindDownloaded  Kind    = 17
	CmdRepoRetain   CmdType = 47
	CmdDownloadSeen CmdType = 48
	CmdRetentionRan CmdType = 49
)

func init() {
	declareKind(KindDownloaded, kindDecl{Name: "last downloads", Bucket: "last_downloads", Unfed: true})
	declareCommand(CmdRepoRetain, func() Command { return new(RepoRetain) })
	declareCommand(CmdDownloadSeen, func() Command { return new(DownloadsSeen) })
	declareCommand(CmdRetentionRan, func() Command { return new(RetentionRan) })
}

// Retention is a repository's rule for which versions of each of its
// packages are kept. A version goes when every condition set lets it go:
// it is not among the KeepLast newest (by upload), it was uploaded more
// than OlderThanDays ago, and it was not downloaded in the last
// KeepDownloadedDays. Whatever the rule, a package's latest version and
// the versions its format's tags point at (npm dist-tags, the OCI tag
// latest) are kept. A rule with neither KeepLast nor OlderThanDays set
// keeps everything (KeepDownloadedDays only keeps).
type Retention struct {
	KeepLast           int `json:"keep_last"`
	OlderThanDays      int `json:"older_than_days"`
	KeepDownloadedDays int `json:"keep_downloaded_days"`
}

// MaxRetentionDays bounds the rule's days (about 100 years).
const MaxRetentionDays = 36500

// Check says what is wrong with a rule, for its author.
func (r Retention) Check() error {
	switch {
	case r.KeepLast < 0 || r.KeepLast > 1_000_000:
		return fmt.Errorf("keep_last must be from 0 (any number) to 1000000")
	case r.OlderThanDays < 0 || r.OlderThanDays > MaxRetentionDays:
		return fmt.Errorf("older_than_days must be from 0 (any age) to %d", MaxRetentionDays)
	case r.KeepDownloadedDays < 0 || r.KeepDownloadedDays > MaxRetentionDays:
		return fmt.Errorf("keep_downloaded_days must be from 0 (downloads not considered) to %d", MaxRetentionDays)
	}
	return nil
}

// Deletes reports whether the rule can delete anything at all.
func (r Retention) Deletes() bool { return r.KeepLast > 0 || r.OlderThanDays > 0 }

// String renders the rule for logs and reports.
func (r Retention) String() string {
	if !r.Deletes() {
		return "keep everything"
	}
	var parts []string
	if r.KeepLast > 0 {
		parts = append(parts, fmt.Sprintf("keep the last %d", r.KeepLast))
	}
	if r.OlderThanDays > 0 {
		parts = append(parts, fmt.Sprintf("delete only versions older than %d days", r.OlderThanDays))
	}
	if r.KeepDownloadedDays > 0 {
		parts = append(parts, fmt.Sprintf("keep what was downloaded in the last %d days", r.KeepDownloadedDays))
	}
	return strings.Join(parts, ", ")
}

// RepoRetain sets (or, Rule nil, removes) a repository's own rule. A
// command of its own, not a field of RepoUpdate: a build from before
// retention would drop the field it does not know from the record, and
// the leader commits this one only once every origin knows it.
type RepoRetain struct {
	ID   string     `json:"id"`
	Rule *Retention `json:"rule,omitempty"`
	At   time.Time  `json:"at"`
}

func (*RepoRetain) Type() CmdType   { return CmdRepoRetain }
func (c *RepoRetain) Scope() string { return c.ID }

func (c *RepoRetain) apply(tx *Tx) error {
	r, err := tx.Repo(c.ID)
	if err != nil {
		return err
	}
	if c.Rule != nil {
		if err := c.Rule.Check(); err != nil {
			return Invalidf("%s", err)
		}
	}
	r.Retention, r.UpdatedAt = c.Rule, c.At
	return tx.putRepo(r)
}

// MaxSeenPerCommand bounds the artifacts of one DownloadsSeen.
const MaxSeenPerCommand = 5000

// DownloadsSeen records that the artifacts were downloaded on Day (Unix
// days, UTC): each artifact still stored whose last recorded download is
// older takes Day. The first one also starts the tracking
// (DownloadsTrackedSince).
type DownloadsSeen struct {
	Day         int64    `json:"day"`
	ArtifactIDs []string `json:"artifact_ids"`
}

func (*DownloadsSeen) Type() CmdType { return CmdDownloadSeen }
func (*DownloadsSeen) Scope() string { return "" }

func (c *DownloadsSeen) apply(tx *Tx) error {
	if len(c.ArtifactIDs) > MaxSeenPerCommand || c.Day <= 0 {
		return Invalidf("a downloads record names 1 to %d artifacts and a day after 1970", MaxSeenPerCommand)
	}
	for _, id := range c.ArtifactIDs {
		if !tx.exists(KindArtifact, id) || tx.LastDownloaded(id) >= c.Day {
			continue
		}
		if err := tx.putRec(KindDownloaded, id, c.Day); err != nil {
			return err
		}
	}
	return tx.trackDownloadsSince(c.Day)
}

// LastDownloaded is the day (Unix days) artifact id was last downloaded,
// 0 when none was recorded.
func (tx *Tx) LastDownloaded(id string) int64 {
	raw, _ := tx.lookup(Space(KindDownloaded), id)
	var day int64
	if raw != nil {
		_ = json.Unmarshal(raw, &day)
	}
	return day
}

// forgetDownloaded drops the download record of an artifact that goes.
func (tx *Tx) forgetDownloaded(id string) error {
	if raw, _ := tx.lookup(Space(KindDownloaded), id); raw == nil {
		return nil
	}
	return tx.delRec(KindDownloaded, id)
}

// VersionsDownloaded maps each version of a package to the last day any
// of its files was downloaded (versions never downloaded are absent).
func (tx *Tx) VersionsDownloaded(repoID, name string) (map[string]int64, error) {
	out := map[string]int64{}
	p := key(repoID, name, "")
	err := tx.scan(SpaceArtifactPkgs, p, func(k string, _ []byte) error {
		version, id, _ := strings.Cut(k[len(p):], "\x00")
		if d := tx.LastDownloaded(id); d > out[version] {
			out[version] = d
		}
		return nil
	})
	return out, err
}

const stateRetention = "retention"

// RetentionState is the retention job's replicated state.
type RetentionState struct {
	// TrackedSince is the first day downloads were recorded: what was
	// uploaded before it may have been downloaded up to that day.
	TrackedSince int64 `json:"tracked_since,omitempty"`
	// ScheduledSince is when the leader first found a rule to apply: the
	// schedule counts from it until a run is recorded.
	ScheduledSince *time.Time `json:"scheduled_since,omitempty"`
	// Last is how the last run that deleted went (a dry run records
	// nothing).
	Last *RetentionRun `json:"last,omitempty"`
}

// RetentionRun is the outcome of one run of the retention rules.
type RetentionRun struct {
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at"`
	By           string    `json:"by"` // "schedule" or the administrator who asked
	Repositories int       `json:"repositories"`
	Versions     int       `json:"versions_deleted"`
	Files        int       `json:"files_deleted"`
	Bytes        int64     `json:"bytes_deleted"`
	Failed       int       `json:"failed"`
	Error        string    `json:"error,omitempty"`
}

// Retention reads the retention job's state.
func (tx *Tx) Retention() RetentionState {
	var s RetentionState
	if raw, _ := tx.lookup(Space(KindState), stateRetention); raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (tx *Tx) trackDownloadsSince(day int64) error {
	s := tx.Retention()
	if s.TrackedSince != 0 {
		return nil
	}
	s.TrackedSince = day
	return tx.putRec(KindState, stateRetention, s)
}

// RetentionRan records a run of the retention rules (Run) or the start
// of their schedule (Scheduled, kept only the first time); Day starts
// the download tracking if nothing did yet (a registry nobody downloads
// from).
type RetentionRan struct {
	Run       *RetentionRun `json:"run,omitempty"`
	Scheduled *time.Time    `json:"scheduled,omitempty"`
	Day       int64         `json:"day,omitempty"`
}

func (*RetentionRan) Type() CmdType { return CmdRetentionRan }
func (*RetentionRan) Scope() string { return "" }

func (c *RetentionRan) apply(tx *Tx) error {
	s := tx.Retention()
	if s.TrackedSince == 0 && c.Day > 0 {
		s.TrackedSince = c.Day
	}
	if c.Scheduled != nil && s.ScheduledSince == nil {
		s.ScheduledSince = c.Scheduled
	}
	if c.Run != nil {
		run := *c.Run
		run.Error = clip(run.Error, 1024)
		s.Last = &run
	}
	return tx.putRec(KindState, stateRetention, s)
}

// UnixDay is t's day since 1970 (UTC).
func UnixDay(t time.Time) int64 { return t.Unix() / 86400 }
