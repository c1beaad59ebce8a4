package format

import (
	"context"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// What every format shares: finding the repository a request names and
// checking access, storing an upload as an artifact, and serving one.

// Repo returns repository name if it has format fmtName and the caller may
// do action on it. An anonymous caller is asked to authenticate (401)
// rather than told whether a private repository exists.
func (d *Deps) Repo(r *Request, name, fmtName, action string) (*meta.Repository, error) {
	var repo *meta.Repository
	allowed := false
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		repo, err = tx.RepoByName(name)
		if err != nil || repo.Format != fmtName {
			repo = nil
			return nil
		}
		allowed = auth.Can(tx, r.Principal, repo, action)
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case repo == nil && r.Principal.Anonymous():
		return nil, Unauthorized()
	case repo == nil:
		return nil, NotFound("repository %s not found", name)
	case allowed:
		return repo, nil
	case r.Principal.Anonymous():
		return nil, Unauthorized()
	case r.Principal.MustChangePassword:
		return nil, Forbidden("password change required before using this account")
	}
	return nil, Forbidden("%s may not %s in repository %s", r.Principal.Name(), action, name)
}

// Can reports whether the caller may do action on repo.
func (d *Deps) Can(r *Request, repo *meta.Repository, action string) bool {
	ok := false
	_ = d.Meta.View(func(tx *meta.Tx) error { ok = auth.Can(tx, r.Principal, repo, action); return nil })
	return ok
}

// Artifact returns the artifact stored at path in repo.
func (d *Deps) Artifact(repo *meta.Repository, p string) (*meta.Artifact, error) {
	var a *meta.Artifact
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		a, err = tx.ArtifactByPath(repo.ID, p)
		return err
	})
	return a, err
}

// Upload describes one file to store.
type Upload struct {
	Repo        *meta.Repository
	Path        string // unique within the repository
	Package     string
	Version     string
	ContentType string
	Body        io.Reader
	Expect      blob.Checksums // checksums the client announced, verified
}

// Store streams an upload into the blob store and then records it with one
// command, so metadata never points at bytes that are not durable. An
// existing path is a conflict unless the caller may delete (then it is
// replaced). It returns the artifact and the command's log index.
func (d *Deps) Store(ctx context.Context, r *Request, u Upload) (*meta.Artifact, uint64, error) {
	if d.Commit == nil {
		return nil, 0, Errorf(http.StatusMethodNotAllowed, "UNSUPPORTED", "writes are not served here")
	}
	replace := d.Can(r, u.Repo, meta.ActionDelete)
	if !replace {
		if _, err := d.Artifact(u.Repo, u.Path); err == nil {
			return nil, 0, Conflict("%s already exists; deleting it first needs the delete permission", u.Path)
		}
	}
	info, err := d.Blobs.Put(ctx, u.Body, blob.PutOptions{MaxSize: d.MaxUpload, Expect: u.Expect})
	if err != nil {
		return nil, 0, err
	}
	a := meta.Artifact{
		ID:           d.NewID(),
		RepositoryID: u.Repo.ID,
		Path:         u.Path,
		PackageName:  u.Package,
		Version:      u.Version,
		Format:       u.Repo.Format,
		SizeBytes:    info.Size,
		Digest:       info.Digest,
		Checksums:    info.Checksums,
		ContentType:  u.ContentType,
		UploadedAt:   d.now().UTC(),
		UploadedBy:   r.Principal.Name(),
	}
	if !r.Principal.Anonymous() {
		a.UploaderID = r.Principal.UserID
	}
	idx, err := d.Commit.Apply(ctx, &meta.ArtifactPut{Artifact: a, Replace: replace})
	if err != nil {
		return nil, 0, err
	}
	return &a, idx, nil
}

// Delete removes an artifact's metadata (its blob is collected later, once
// nothing references it).
func (d *Deps) Delete(ctx context.Context, a *meta.Artifact) (uint64, error) {
	if d.Commit == nil {
		return 0, Errorf(http.StatusMethodNotAllowed, "UNSUPPORTED", "writes are not served here")
	}
	return d.Commit.Apply(ctx, &meta.ArtifactDelete{ID: a.ID})
}

// Serve answers with an artifact's bytes and its checksum headers; a GET
// counts as a download.
func (d *Deps) Serve(ctx context.Context, r *Request, a *meta.Artifact) (*Response, error) {
	f, err := d.Blobs.Open(ctx, a.Digest)
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodGet && d.OnDownload != nil {
		d.OnDownload(r, a)
	}
	resp := NewResponse(http.StatusOK)
	resp.File, resp.Name, resp.ModTime = f, path.Base(a.Path), a.UploadedAt
	ct := a.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(a.Path))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := resp.Header
	h.Set("Content-Type", ct)
	h.Set("ETag", `"`+a.Checksums.SHA256+`"`)
	SetChecksumHeaders(h, a.Checksums)
	return resp, nil
}

// SetChecksumHeaders adds the X-Checksum-* headers that Artifactory and
// Nexus clients know.
func SetChecksumHeaders(h http.Header, c blob.Checksums) {
	h.Set("X-Checksum-Md5", c.MD5)
	h.Set("X-Checksum-Sha1", c.SHA1)
	h.Set("X-Checksum-Sha256", c.SHA256)
	if c.SHA512 != "" {
		h.Set("X-Checksum-Sha512", c.SHA512)
	}
}

// SetIndex tells the client (and an edge in between) which log index holds
// its write, so it can wait to read it.
func SetIndex(h http.Header, idx uint64) {
	h.Set("X-Depot-Index", strconv.FormatUint(idx, 10))
}

// now returns d.Now() or the wall clock.
func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
