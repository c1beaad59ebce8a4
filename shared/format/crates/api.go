package crates

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

func ok(idx uint64, msg string) *format.Response {
	resp := format.NewResponse(http.StatusOK)
	format.SetIndex(resp.Header, idx)
	resp.Header.Set("Content-Type", "application/json")
	body := map[string]any{"ok": true}
	if msg != "" {
		body["msg"] = msg
	}
	resp.Body, _ = json.Marshal(body)
	return resp
}

// yank sets or clears a version's yanked flag (a KV beside the artifact:
// the index line itself never changes).
func (f *Format) yank(yanked bool) format.WriteHandler {
	return func(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
		name, ver := r.Param("name"), r.Param("version")
		idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
			vs, err := f.versions(tx, r.Repo, name)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(vs, func(v version) bool { return v.art.Version == ver }) {
				return nil, format.NotFound("%s %s is not in repository %s", name, ver, r.Repo.Name)
			}
			op := format.KVDelete(yankKey(name, ver))
			if yanked {
				op = format.KVSet(yankKey(name, ver), true)
			}
			return &meta.KVApply{RepoID: r.Repo.ID, Ops: []meta.KVOp{op}}, nil
		})
		if err != nil {
			return nil, err
		}
		return ok(idx, ""), nil
	}
}

// DeleteArtifact is a REST delete of a version: its yank flag goes in the
// same command, so the version published again later is not yanked.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	return w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		cur, err := tx.Artifact(a.ID)
		if err != nil {
			return nil, err
		}
		c, err := w.ChangeCmd(r, r.Repo, []*meta.Artifact{cur}, nil, []meta.KVOp{format.KVDelete(yankKey(cur.PackageName, cur.Version))})
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

type user struct {
	ID    int    `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name,omitempty"`
}

// ownerList reads the crate's owners (the publisher of its first version,
// and whoever was added since).
func ownerList(tx *meta.Tx, repo *meta.Repository, name string) ([]string, bool) {
	raw, found := tx.KV(repo.ID, ownersKey(name))
	var logins []string
	if found {
		_ = json.Unmarshal(raw, &logins)
	}
	return logins, found
}

func (f *Format) owners(ctx context.Context, r *format.Request) (*format.Response, error) {
	var logins []string
	var found bool
	if err := f.Env.View(func(tx *meta.Tx) error { logins, found = ownerList(tx, r.Repo, r.Param("name")); return nil }); err != nil {
		return nil, err
	}
	if !found {
		return nil, format.NotFound("crate %s is not in repository %s", r.Param("name"), r.Repo.Name)
	}
	users := []user{}
	for i, l := range logins {
		users = append(users, user{ID: i + 1, Login: l})
	}
	resp := format.JSON(http.StatusOK, map[string]any{"users": users})
	return resp, nil
}

// changeOwners adds or removes owners by login. Owners are the crate's
// record of who looks after it; what a caller may do is decided by the
// repository's permissions.
func (f *Format) changeOwners(add bool) format.WriteHandler {
	return func(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
		raw, err := format.ReadBody(r, 64<<10)
		if err != nil {
			return nil, err
		}
		var req struct {
			Users []string `json:"users"`
		}
		if json.Unmarshal(raw, &req) != nil || len(req.Users) == 0 {
			return nil, format.BadRequest(`the body must be {"users":["login",...]}`)
		}
		idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
			logins, found := ownerList(tx, r.Repo, r.Param("name"))
			if !found {
				return nil, format.NotFound("crate %s is not in repository %s", r.Param("name"), r.Repo.Name)
			}
			for _, u := range req.Users {
				if _, err := tx.UserByName(u); add && err != nil {
					return nil, format.NotFound("no user %s", u)
				}
				i := slices.Index(logins, u)
				switch {
				case add && i < 0:
					logins = append(logins, u)
				case !add && i >= 0:
					logins = slices.Delete(logins, i, i+1)
				}
			}
			if len(logins) == 0 {
				return nil, format.BadRequest("a crate keeps at least one owner")
			}
			return &meta.KVApply{RepoID: r.Repo.ID, Ops: []meta.KVOp{format.KVSet(ownersKey(r.Param("name")), logins)}}, nil
		})
		if err != nil {
			return nil, err
		}
		verb := "added"
		if !add {
			verb = "removed"
		}
		return ok(idx, "owners "+verb+": "+strings.Join(req.Users, ", ")), nil
	}
}

// search lists the crates whose name contains q, with their newest
// version.
func (f *Format) search(ctx context.Context, r *format.Request) (*format.Response, error) {
	q := strings.ToLower(r.Query.Get("q"))
	per, _ := strconv.Atoi(r.Query.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 10
	}
	arts, err := f.Env.List(r.Repo, "")
	if err != nil {
		return nil, err
	}
	type hit struct {
		Name        string `json:"name"`
		MaxVersion  string `json:"max_version"`
		Description string `json:"description"`
	}
	byName := map[string]*hit{}
	for _, a := range arts {
		if !strings.HasSuffix(a.Path, ".crate") || !strings.Contains(strings.ToLower(a.PackageName), q) {
			continue
		}
		h := byName[a.PackageName]
		if h == nil {
			h = &hit{Name: a.PackageName}
			byName[a.PackageName] = h
		}
		if h.MaxVersion == "" || semver.Compare("v"+a.Version, "v"+h.MaxVersion) > 0 {
			h.MaxVersion = a.Version
			var line struct {
				Description string `json:"description"`
			}
			_ = json.Unmarshal(a.Attrs, &line)
			h.Description = line.Description
		}
	}
	hits := []hit{}
	for _, h := range byName {
		hits = append(hits, *h)
	}
	slices.SortFunc(hits, func(a, b hit) int { return strings.Compare(a.Name, b.Name) })
	total := len(hits)
	hits = hits[:min(per, len(hits))]
	resp := format.JSON(http.StatusOK, map[string]any{"crates": hits, "meta": map[string]int{"total": total}})
	return resp, nil
}
