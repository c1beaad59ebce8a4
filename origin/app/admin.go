package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/origin/service/gc"
	"github.com/depot-registry/depot/origin/service/retention"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// Stats are the installation's totals (the spec's GET /admin/stats).
type Stats struct {
	Repositories   int64 `json:"repositories"`
	Artifacts      int64 `json:"artifacts"`
	TotalSizeBytes int64 `json:"total_size_bytes"`
	Users          int64 `json:"users"`
	Downloads24h   int64 `json:"downloads_24h"`
	// The cluster's downloads per hour over the last 48 hours and per
	// day (UTC) over the last 30, oldest first, from the history every
	// origin adds to each minute.
	DownloadsByHour []DownloadCount `json:"downloads_by_hour"`
	DownloadsByDay  []DownloadCount `json:"downloads_by_day"`
}

// DownloadCount is the downloads of the hour or day that starts at Start.
type DownloadCount struct {
	Start     time.Time `json:"start"`
	Downloads int64     `json:"downloads"`
}

// Stats counts repositories, artifacts, bytes, users and the last day's
// downloads (administrators only).
func (a *App) Stats(_ context.Context, p *auth.Principal) (Stats, error) {
	if err := requireAdmin(p); err != nil {
		return Stats{}, err
	}
	var st meta.Stats
	now := a.now().Unix() / 3600 // this hour
	firstDay := (now/24 - 29) * 24
	var hours map[int64]int64
	err := a.view(func(tx *meta.Tx) error {
		var err error
		st, err = tx.Stats()
		hours = tx.DownloadsByHour(firstDay, now+1)
		return err
	})
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Repositories: st.Repositories, Artifacts: st.Artifacts, TotalSizeBytes: st.TotalSizeBytes, Users: st.Users}
	for h := now - 47; h <= now; h++ {
		out.DownloadsByHour = append(out.DownloadsByHour, DownloadCount{Start: time.Unix(h*3600, 0).UTC(), Downloads: hours[h]})
	}
	for d := firstDay / 24; d <= now/24; d++ {
		c := DownloadCount{Start: time.Unix(d*86400, 0).UTC()}
		for h := d * 24; h < d*24+24; h++ {
			c.Downloads += hours[h]
		}
		out.DownloadsByDay = append(out.DownloadsByDay, c)
	}
	if a.Downloads != nil {
		out.Downloads24h = a.Downloads.Last24h()
	}
	return out, nil
}

// CleanupResult is the answer of POST /admin/cleanup: what the
// retention rules deleted (would delete, in a dry run), then what the
// garbage collection that followed removed, its fields at the top as
// before retention rules existed (absent in a dry run, which collects
// nothing).
type CleanupResult struct {
	*gc.Result
	DryRun    bool              `json:"dry_run"`
	Retention *retention.Report `json:"retention,omitempty"`
}

// Cleanup applies the retention rules, then runs a garbage collection, to
// their end even if the caller stops waiting (a half-done sweep would
// only have to be done again), and answers what they removed; a dry run
// only reports what the rules would delete (administrators only).
func (a *App) Cleanup(ctx context.Context, p *auth.Principal, dryRun bool) (CleanupResult, error) {
	if err := requireAdmin(p); err != nil {
		return CleanupResult{}, err
	}
	if a.GC == nil || a.Retention == nil {
		return CleanupResult{}, apierr.New(apierr.Unavailable, "cleanup is not available on this node")
	}
	ctx = context.WithoutCancel(ctx)
	out := CleanupResult{DryRun: dryRun}
	rep, err := a.Retention.Apply(ctx, dryRun, p.Name())
	switch {
	case errors.Is(err, retention.ErrRunning):
		return out, apierr.New(apierr.Conflict, "the retention rules are being applied already; try again when that has finished")
	case err != nil:
		return out, fmt.Errorf("applying the retention rules: %w", err)
	}
	out.Retention = &rep
	if dryRun {
		return out, nil
	}
	res, err := a.GC.Run(ctx)
	out.Result = &res
	if errors.Is(err, gc.ErrRunning) {
		return out, apierr.New(apierr.Conflict, "a garbage collection is running already; try again when it has finished")
	}
	if err != nil {
		return out, fmt.Errorf("garbage collection: %w", err)
	}
	return out, nil
}

// RetentionStatus is the retention rules' last run that deleted (nil:
// none yet), the default rule and how often the leader applies the rules
// (administrators only).
type RetentionStatus struct {
	Last          *meta.RetentionRun `json:"last"`
	Default       meta.Retention     `json:"default"`
	IntervalHours int64              `json:"interval_hours"`
}

// RetentionStatus reads the retention rules' state.
func (a *App) RetentionStatus(_ context.Context, p *auth.Principal) (RetentionStatus, error) {
	if err := requireAdmin(p); err != nil {
		return RetentionStatus{}, err
	}
	v := a.Settings()
	out := RetentionStatus{Default: v.Retention(), IntervalHours: v.RetentionIntervalHours}
	err := a.view(func(tx *meta.Tx) error { out.Last = tx.Retention().Last; return nil })
	return out, err
}
