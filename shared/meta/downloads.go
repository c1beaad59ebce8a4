package meta

import (
	"fmt"
	"strconv"
	"strings"
)

// The cluster's downloads by hour: each origin adds what it counted (its
// own downloads and its edges') once a minute, so the history survives
// restarts and every origin reads the same.

// CmdDownloadsCounted adds an origin's downloads to the hourly counts.
const CmdDownloadsCounted CmdType = 39

func init() {
	declareCommand(CmdDownloadsCounted, func() Command { return new(DownloadsCounted) })
}

// DownloadHistoryHours is how long the hourly counts are kept: older
// hours are dropped as newer ones are counted.
const DownloadHistoryHours = 90 * 24

// maxCountedHours bounds one report (an origin that could not commit for
// a while reports the hours it kept).
const maxCountedHours = 48

// DownloadsCounted adds downloads to the hourly counts: Hours maps an hour
// (Unix seconds / 3600) to the downloads counted in it since the
// reporting origin's last report.
type DownloadsCounted struct {
	Hours map[int64]int64 `json:"hours"`
}

func (*DownloadsCounted) Type() CmdType { return CmdDownloadsCounted }
func (*DownloadsCounted) Scope() string { return "" }

const downloadsPrefix = "downloads/"

func downloadsKey(hour int64) string { return fmt.Sprintf("%s%012d", downloadsPrefix, hour) }

func (c *DownloadsCounted) apply(tx *Tx) error {
	if len(c.Hours) == 0 || len(c.Hours) > maxCountedHours {
		return Invalidf("a downloads report counts 1 to %d hours", maxCountedHours)
	}
	var newest int64
	for h, n := range c.Hours {
		if h <= 0 || n < 0 {
			return Invalidf("a downloads report counts hours after 1970, none negative")
		}
		newest = max(newest, h)
	}
	for h, n := range c.Hours {
		if h <= newest-DownloadHistoryHours || n == 0 {
			continue
		}
		key := downloadsKey(h)
		var was int64
		if raw, _ := tx.lookup(Space(KindState), key); raw != nil {
			was, _ = strconv.ParseInt(string(raw), 10, 64)
		}
		if err := tx.putRec(KindState, key, was+n); err != nil {
			return err
		}
	}
	// The hours past the history: from the first kept, up to the oldest
	// to keep (a few at most, as every report moves it an hour at most).
	oldest := downloadsKey(newest - DownloadHistoryHours + 1)
	var old []string
	cur := tx.space(Space(KindState)).Cursor()
	for k, _ := cur.Seek([]byte(downloadsPrefix)); k != nil && string(k) < oldest; k, _ = cur.Next() {
		old = append(old, string(k))
	}
	for _, k := range old {
		if err := tx.delRec(KindState, k); err != nil {
			return err
		}
	}
	return nil
}

// DownloadsByHour reads the hourly counts of the hours from from to to
// (Unix hours, to excluded); hours without a download are absent.
func (tx *Tx) DownloadsByHour(from, to int64) map[int64]int64 {
	out := map[int64]int64{}
	first, end := downloadsKey(from), downloadsKey(to)
	cur := tx.space(Space(KindState)).Cursor()
	for k, v := cur.Seek([]byte(first)); k != nil && string(k) < end && strings.HasPrefix(string(k), downloadsPrefix); k, v = cur.Next() {
		h, err1 := strconv.ParseInt(strings.TrimPrefix(string(k), downloadsPrefix), 10, 64)
		n, err2 := strconv.ParseInt(string(v[8:]), 10, 64)
		if err1 == nil && err2 == nil {
			out[h] = n
		}
	}
	return out
}
