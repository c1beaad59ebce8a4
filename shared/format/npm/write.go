package npm

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// publisherEmail is the email of the account publishing, "" when it has
// none (or the request is not a user's).
func publisherEmail(w *format.Writer, p *auth.Principal) string {
	if p == nil || p.UserID == "" || w.Meta == nil {
		return ""
	}
	var email string
	_ = w.Meta.View(func(tx *meta.Tx) error {
		u, err := tx.User(p.UserID)
		if err == nil {
			email = u.Email
		}
		return err
	})
	return email
}

// maxTagBody bounds a dist-tag PUT body (a JSON string holding a version).
const maxTagBody = 4 << 10

// publish handles PUT /<name>: a new version (with its tarball in
// _attachments), or, without attachments, npm deprecate sending the
// packument back.
func (f *Format) publish(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	repo, lim := r.Repo, f.limits(w)
	body, err := format.BodyReader(r, lim.MaxBody())
	if err != nil {
		return nil, err
	}
	// The tarball goes to this node's disk, so the free-space guard
	// admits the body.
	if body, err = w.GuardUpload(body, r.ContentLength); err != nil {
		return nil, err
	}
	// The whole body is read, the tarball into a scratch file, before
	// anything shared is taken: however slowly a client sends, it holds
	// only its own connection.
	doc, err := ReadDocument(body, e.Name, spillTarball(spillDir(w.ScratchDir), lim.MaxTarball))
	if err != nil {
		return nil, w.WriteErr(err)
	}
	defer doc.Close()
	if !doc.Publishing() {
		defer f.lock(e)()
		return f.deprecate(ctx, w, repo, e, doc)
	}
	select {
	case f.publishing <- struct{}{}:
		defer func() { <-f.publishing }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p, err := doc.Publish(e.Name, lim)
	if err != nil {
		return nil, err
	}
	if err := p.SetPublisher(publisherEmail(w, r.Principal)); err != nil {
		return nil, err
	}
	defer f.lock(e)()
	// The package record and tags are decided from the state the version
	// is recorded against (see format.Writer.Decide): a publish of another
	// version that commits first, on any node, makes this one decide again.
	// A version already there is refused by the overwrite check, before
	// the tarball is stored.
	_, idx, err := w.Store(ctx, r, format.Upload{
		Repo: repo, Path: e.Name.Path(p.Version), Package: e.Name.String(), Version: p.Version,
		ContentType: "application/octet-stream", Body: p.Tarball.Reader(),
		Expect:    blob.Checksums{SHA1: p.SHA1, SHA512: p.SHA512},
		Overwrite: format.OverwriteNever, Attrs: p.Manifest,
		Decide: func(tx *meta.Tx) ([]meta.KVOp, error) {
			st, err := loadTx(tx, repo, e.Name)
			if err != nil {
				return nil, err
			}
			return f.publishOps(st, doc, p), nil
		},
	})
	if err != nil {
		if fe := format.Classify(err); fe.Code == apierr.Conflict {
			// A concurrent publish of the same version won the race.
			return nil, format.Conflict("cannot publish over the previously published version %s of %s", p.Version, e.Name)
		}
		return nil, err
	}
	return okResponse(http.StatusCreated, idx, map[string]any{"ok": true, "id": e.Name.String()}), nil
}

// publishOps are the keyspace changes of publishing p on st.
func (f *Format) publishOps(st *pkgState, doc *Document, p *Publish) []meta.KVOp {
	now := f.Env.Time()
	m := st.Meta
	if m.Created.IsZero() {
		m.Created = now
	}
	m.Modified = now
	// The package record is rewritten by every later write of the
	// package, so its free text is kept bounded (npm does the same to
	// readmes).
	if doc.Description != "" {
		m.Description = truncate(doc.Description, maxDescription)
	}
	if p.Readme != "" {
		m.Readme = truncate(p.Readme, maxReadme)
	}
	if kw := keywords(p.Manifest); kw != nil {
		m.Keywords = kw
	}
	kv := []meta.KVOp{format.KVSet(pkgKey(st.Name), m), findOp(st.Name, m)}
	tags := slices.Clone(p.Tags)
	if _, ok := st.Tags["latest"]; !ok && !slices.Contains(tags, "latest") {
		// A first publish under another tag still needs a latest.
		tags = append(tags, "latest")
	}
	sort.Strings(tags)
	for _, t := range tags {
		kv = append(kv, format.KVSet(tagKey(st.Name, t), p.Version))
	}
	if p.Deprecated != "" {
		kv = append(kv, format.KVSet(depKey(st.Name, p.Version), p.Deprecated))
	}
	return kv
}

// decide commits the command fn decides from the state of package n, read
// in a tracked view (format.Writer.Decide); a package without versions is
// npm's 404.
func (f *Format) decide(ctx context.Context, w *format.Writer, repo *meta.Repository, n Name, fn func(st *pkgState) (meta.Command, error)) (uint64, error) {
	return w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		st, err := loadTx(tx, repo, n)
		if err != nil {
			return nil, err
		}
		if len(st.Versions) == 0 {
			return nil, format.NotFound("not found")
		}
		return fn(st)
	})
}

// written answers a write: with its log index, or without one when there
// was nothing to change.
func written(status int, idx uint64) *format.Response {
	if idx == 0 {
		return jsonResponse(status, mediaJSON, map[string]any{"ok": true})
	}
	return okResponse(status, idx, map[string]any{"ok": true})
}

// deprecate applies the one change npm deprecate makes to the packument
// it sends back: the deprecated message of versions. Everything else in
// the document is ignored, and versions missing from it are kept (one
// published meanwhile must not vanish).
func (f *Format) deprecate(ctx context.Context, w *format.Writer, repo *meta.Repository, e Endpoint, doc *Document) (*format.Response, error) {
	u, err := doc.Update()
	if err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		if ops := f.deprecationOps(st, u); len(ops) > 0 {
			return &meta.KVApply{RepoID: repo.ID, Ops: ops}, nil
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return written(http.StatusOK, idx), nil
}

// deprecationOps are the keyspace changes for the deprecations in u that
// differ from the stored ones, plus the package's modified time.
func (f *Format) deprecationOps(st *pkgState, u *Update) []meta.KVOp {
	var ops []meta.KVOp
	for _, v := range sortedKeys(u.Versions) {
		msg := u.Versions[v]
		if _, ok := st.find(v); !ok || st.Deprecated[v] == msg {
			continue
		}
		if msg == "" {
			ops = append(ops, format.KVDelete(depKey(st.Name, v)))
		} else {
			ops = append(ops, format.KVSet(depKey(st.Name, v), msg))
		}
	}
	if len(ops) > 0 {
		m := st.Meta
		m.Modified = f.Env.Time()
		ops = append(ops, format.KVSet(pkgKey(st.Name), m))
	}
	return ops
}

// revPut handles PUT /<name>/-rev/<rev>, unpublish's second step: the
// versions missing from the document are removed.
func (f *Format) revPut(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	repo := r.Repo
	if err := f.Env.Require(r, meta.ActionDelete); err != nil {
		return nil, err
	}
	body, err := format.ReadBody(r, maxMetadata)
	if err != nil {
		return nil, err
	}
	defer f.lock(e)()
	doc, err := ParseDocument(body, e.Name)
	if err != nil {
		return nil, err
	}
	if doc.Publishing() {
		return nil, format.BadRequest("attachments are not accepted when updating a package; publish with PUT /%s", e.Name)
	}
	u, err := doc.Update()
	if err != nil {
		return nil, err
	}
	mayWrite, err := f.Env.Can(r, repo, meta.ActionWrite)
	if err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		// The client removes versions from the document it read: if the
		// package changed since (a publish in between), that document is
		// stale and applying it would remove the new version too.
		if e.Rev != st.rev() {
			return nil, format.Conflict("the package changed since revision %s was read; retry", e.Rev)
		}
		gone := map[string]bool{}
		for _, v := range st.Versions {
			if _, ok := u.Versions[v.Raw]; !ok {
				gone[v.Raw] = true
			}
		}
		if len(gone) > 0 {
			return f.removeCmd(repo, st, gone, u.Latest), nil
		}
		ops := f.deprecationOps(st, u)
		if len(ops) == 0 {
			return nil, nil
		}
		if !mayWrite {
			return nil, format.Forbidden("%s may not write in repository %s", r.Principal.Name(), repo.Name)
		}
		return &meta.KVApply{RepoID: repo.ID, Ops: ops}, nil
	})
	if err != nil {
		return nil, err
	}
	return written(http.StatusOK, idx), nil
}

// tarballDelete handles DELETE /<name>/-/<file>/-rev/<rev>: unpublish's
// last step (usually already done by revPut, so 404, which npm accepts).
func (f *Format) tarballDelete(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	defer f.lock(e)()
	repo := r.Repo
	if err := f.Env.Require(r, meta.ActionDelete); err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		for _, v := range st.Versions {
			if e.Name.File(v.Raw) == e.File {
				return f.removeCmd(repo, st, map[string]bool{v.Raw: true}, ""), nil
			}
		}
		return nil, format.NotFound("not found: %s/-/%s", e.Name, e.File)
	})
	if err != nil {
		return nil, err
	}
	return written(http.StatusOK, idx), nil
}

// packageDelete handles DELETE /<name>/-rev/<rev>: the whole package.
func (f *Format) packageDelete(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	defer f.lock(e)()
	repo := r.Repo
	if err := f.Env.Require(r, meta.ActionDelete); err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		gone := map[string]bool{}
		for _, v := range st.Versions {
			gone[v.Raw] = true
		}
		return f.removeCmd(repo, st, gone, ""), nil
	})
	if err != nil {
		return nil, err
	}
	return written(http.StatusOK, idx), nil
}

// DeleteArtifact is a REST delete of one version: an unpublish, so the
// dist-tags and deprecations follow.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	repo := r.Repo
	n, err := ParseName(a.PackageName)
	if err != nil {
		return 0, err
	}
	return f.decide(ctx, w, repo, n, func(st *pkgState) (meta.Command, error) {
		if _, ok := st.find(a.Version); !ok {
			return nil, format.NotFound("%s@%s not found", n, a.Version)
		}
		return f.removeCmd(repo, st, map[string]bool{a.Version: true}, ""), nil
	})
}

// removeCmd deletes the versions in gone with one command; removing the
// last version removes the package's keyspace entries too.
func (f *Format) removeCmd(repo *meta.Repository, st *pkgState, gone map[string]bool, prefer string) meta.Command {
	var ids []string
	for _, v := range st.Versions {
		if gone[v.Raw] {
			ids = append(ids, v.A.ID)
		}
	}
	ops := st.purgeOps()
	if len(ids) < len(st.Versions) {
		ops = st.dropOps(gone, prefer, f.Env.Time())
	}
	return &meta.ArtifactDelete{IDs: ids, RepoID: repo.ID, KV: ops}
}

// tagPut handles PUT /-/package/<name>/dist-tags/<tag>; the body is the
// version as a JSON string.
func (f *Format) tagPut(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	repo := r.Repo
	body, err := format.ReadBody(r, maxTagBody)
	if err != nil {
		return nil, err
	}
	defer f.lock(e)()
	var v string
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, format.BadRequest("dist-tag body must be a JSON string holding a version")
	}
	v = strings.TrimSpace(v)
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		if _, ok := st.find(v); !ok {
			return nil, format.NotFound("version not found: %s@%s", e.Name, v)
		}
		m := st.Meta
		m.Modified = f.Env.Time()
		return &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{
			format.KVSet(tagKey(e.Name, e.Spec), v), format.KVSet(pkgKey(e.Name), m)}}, nil
	})
	if err != nil {
		return nil, err
	}
	return okResponse(http.StatusCreated, idx, map[string]any{"ok": true}), nil
}

// tagDelete handles DELETE /-/package/<name>/dist-tags/<tag>; latest
// stays (clients need it).
func (f *Format) tagDelete(ctx context.Context, r *format.Request, w *format.Writer, e Endpoint) (*format.Response, error) {
	repo := r.Repo
	if e.Spec == "latest" {
		return nil, format.BadRequest("the latest dist-tag cannot be removed")
	}
	defer f.lock(e)()
	idx, err := f.decide(ctx, w, repo, e.Name, func(st *pkgState) (meta.Command, error) {
		if _, ok := st.Tags[e.Spec]; !ok {
			return nil, format.NotFound("%s is not a dist-tag on %s", e.Spec, e.Name)
		}
		m := st.Meta
		m.Modified = f.Env.Time()
		return &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{
			format.KVDelete(tagKey(e.Name, e.Spec)), format.KVSet(pkgKey(e.Name), m)}}, nil
	})
	if err != nil {
		return nil, err
	}
	return okResponse(http.StatusOK, idx, map[string]any{"ok": true}), nil
}

// Bounds of the package record's free text.
const (
	maxReadme      = 64 << 10
	maxDescription = 4 << 10
)

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
