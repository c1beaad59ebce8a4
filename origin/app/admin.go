package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/origin/service/gc"
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

// Cleanup runs a garbage collection to its end, even if the caller stops
// waiting (a half-done sweep would only have to be done again), and
// returns what it removed (administrators only).
func (a *App) Cleanup(ctx context.Context, p *auth.Principal) (gc.Result, error) {
	if err := requireAdmin(p); err != nil {
		return gc.Result{}, err
	}
	if a.GC == nil {
		return gc.Result{}, apierr.New(apierr.Unavailable, "garbage collection is not available on this node")
	}
	res, err := a.GC.Run(context.WithoutCancel(ctx))
	if errors.Is(err, gc.ErrRunning) {
		return res, apierr.New(apierr.Conflict, "a garbage collection is running already; try again when it has finished")
	}
	if err != nil {
		return res, fmt.Errorf("garbage collection: %w", err)
	}
	return res, nil
}
