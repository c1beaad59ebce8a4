package composer

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// The Last-Modified of the metadata documents.
//
// composer revalidates a metadata file it has cached (p2/<vendor>/<name>.json,
// ~dev.json, packages.json) with If-Modified-Since and the Last-Modified it
// was given, never with If-None-Match, and only when it was given one. A
// date derived from the artifacts (the newest upload) would move back when
// the newest version is deleted, and a client's If-Modified-Since would
// then be answered a wrong 304. So each document's date is a record of its
// own in the format's keyspace, set by the same command as every change of
// what the document shows:
//
//   - "modified/<name>": every upload and every delete of a version of the
//     package (its .json and ~dev.json share it: a change of one dates
//     both, which costs a client one download, never a stale copy);
//   - "modified": a package appearing or its last version going, the only
//     changes of packages.json and list.json (they show the names).
//     search.json, which shows descriptions and answers any query, is
//     not dated.
//
// A new date is strictly later, in whole seconds (an HTTP date's
// resolution), than the one it replaces: max(now truncated to the second,
// previous + 1 s). Two changes within a second, or a change decided on a
// node whose clock is behind, still date the document later. The decision
// reads the record, so a concurrent change of the same document makes it
// stale and it is decided again (meta.Decide). A record stays when the
// last version goes: a package deleted and uploaded again goes on from its
// old date. A document whose record does not exist (a package stored
// before these records were kept) has no Last-Modified, so no client can
// revalidate it by date; its next change starts the record.
//
// The date follows what the repository holds, not the base URL a
// document's absolute URLs are built from: a client asks each host at a
// URL of its own, but a changed external URL setting does not move the
// dates (the ETag, of the bytes, does).

const namesKey = "modified"

func modifiedKey(name string) string { return "modified/" + name }

// readModified is the date recorded under key (zero: none).
func readModified(tx *meta.Tx, repoID, key string) time.Time {
	raw, ok := tx.KV(repoID, key)
	if !ok {
		return time.Time{}
	}
	var sec int64
	if json.Unmarshal(raw, &sec) != nil || sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// nextModified is the date a change made at now gives a document last
// dated prev (zero: never): now in whole seconds, and always after prev.
func nextModified(prev, now time.Time) time.Time {
	t := now.UTC().Truncate(time.Second)
	if !prev.IsZero() && !t.After(prev) {
		t = prev.Truncate(time.Second).Add(time.Second)
	}
	return t
}

// modifiedOps date a change of package name's versions at now, and of
// the repository's names when the package appears or goes with it.
func modifiedOps(tx *meta.Tx, repoID, name string, namesChange bool, now time.Time) []meta.KVOp {
	keys := []string{modifiedKey(name)}
	if namesChange {
		keys = append(keys, namesKey)
	}
	ops := make([]meta.KVOp, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, format.KVSet(k, nextModified(readModified(tx, repoID, k), now).Unix()))
	}
	return ops
}

// uploadModified is an upload's Decide hook: it dates the change of the
// package the upload adds a version to.
func (f *Format) uploadModified(repoID, name string) func(tx *meta.Tx) ([]meta.KVOp, error) {
	return func(tx *meta.Tx) ([]meta.KVOp, error) {
		vs, err := tx.Versions(repoID, name)
		if err != nil {
			return nil, err
		}
		return modifiedOps(tx, repoID, name, len(vs) == 0, f.Env.Time()), nil
	}
}

// DeleteArtifact is a REST delete of a version: its zip goes, and the
// documents that showed it are dated again, in one command.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	repo := r.Repo
	return w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		cur, err := tx.Artifact(a.ID)
		if err != nil {
			return nil, err
		}
		vs, err := tx.Versions(repo.ID, cur.PackageName)
		if err != nil {
			return nil, err
		}
		files := 0
		for _, v := range vs {
			files += v.FileCount
		}
		c, err := w.ChangeCmd(r, repo, []*meta.Artifact{cur}, nil, modifiedOps(tx, repo.ID, cur.PackageName, files <= 1, f.Env.Time()))
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

// setModified gives a document the date read with it (none when zero).
func setModified(resp *format.Response, t time.Time) *format.Response {
	if !t.IsZero() {
		resp.Header.Set("Last-Modified", t.UTC().Format(http.TimeFormat))
	}
	return resp
}
