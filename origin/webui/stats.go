package webui

import (
	"fmt"
	"net/http"

	"github.com/depot-registry/depot/origin/app"
)

// The statistics page: the installation's totals and the cluster's
// downloads per hour (48 hours) and per day (30 days), drawn as bar
// charts in SVG on the server (no script), each with its figures in a
// table for those who do not see the chart.

type chart struct {
	Title, ID    string
	Width        int
	Height       int
	Max          int64
	Bars         []bar
	FirstLabel   string
	LastLabel    string
	Total        int64
	Counts       []app.DownloadCount
	LabelOfCount func(app.DownloadCount) string
}

type bar struct {
	X, Y, W, H int
	Label      string
}

func chartOf(id, title string, counts []app.DownloadCount, label func(app.DownloadCount) string) chart {
	const w, h = 720, 160
	c := chart{Title: title, ID: id, Width: w, Height: h, Counts: counts, LabelOfCount: label}
	for _, n := range counts {
		c.Max = max(c.Max, n.Downloads)
		c.Total += n.Downloads
	}
	if len(counts) == 0 {
		return c
	}
	step := w / len(counts)
	for i, n := range counts {
		bh := 0
		if c.Max > 0 {
			bh = int(int64(h-4) * n.Downloads / c.Max)
		}
		if n.Downloads > 0 && bh == 0 {
			bh = 1
		}
		c.Bars = append(c.Bars, bar{X: i * step, Y: h - bh, W: max(step-2, 1), H: bh, Label: fmt.Sprintf("%s: %d", label(n), n.Downloads)})
	}
	c.FirstLabel, c.LastLabel = label(counts[0]), label(counts[len(counts)-1])
	return c
}

type statsPage struct {
	Stats app.Stats
	Hours chart
	Days  chart
}

func (u *UI) stats(w http.ResponseWriter, c *call) error {
	st, err := u.d.App.Stats(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	hour := func(d app.DownloadCount) string { return d.Start.Format("Jan 2 15:00") }
	day := func(d app.DownloadCount) string { return d.Start.Format("Jan 2") }
	return u.render(w, c, 0, "stats", "Statistics", statsPage{Stats: st,
		Hours: chartOf("hours", "Downloads per hour, the last 48 hours (UTC)", st.DownloadsByHour, hour),
		Days:  chartOf("days", "Downloads per day, the last 30 days (UTC)", st.DownloadsByDay, day)})
}
