package format

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// Storing: an upload as an artifact, the one command that changes
// artifacts, deletes, and decisions with preconditions.

// Overwrite says what storing at an existing path does.
type Overwrite int

// Overwrite policies.
const (
	// OverwriteIfDelete replaces when the caller may delete, else 409
	// (generic files, the Artifactory rule).
	OverwriteIfDelete Overwrite = iota
	// OverwriteAlways replaces (maven metadata, snapshots).
	OverwriteAlways
	// OverwriteNever refuses (published npm versions, pypi files).
	OverwriteNever
)

// Upload describes one file to store.
type Upload struct {
	Repo        *meta.Repository
	Path        string // unique within the repository
	Package     string
	Version     string
	ContentType string
	Body        io.Reader
	Expect      blob.Checksums // checksums the client announced, verified
	Overwrite   Overwrite
	Attrs       json.RawMessage // the format's record of the file
	Refs        []string        // other blobs the file needs, kept with it
	// Companion marks a file that goes with its version's main file (a
	// POM beside its jar, a sources jar): the REST API names the main file
	// as the version's, and its format decides what deleting it removes.
	Companion bool
	// Decide, when set, runs on the view the artifact is recorded from
	// (see Writer.Decide): it may refuse the upload, and returns the format
	// state that changes with the file, atomically.
	Decide func(tx *meta.Tx) ([]meta.KVOp, error)
}

// Store streams an upload into the blob store and then records it with one
// command, so metadata never points at bytes that are not durable. It
// returns the artifact and the command's log index.
func (d *Writer) Store(ctx context.Context, r *Request, u Upload) (*meta.Artifact, uint64, error) {
	if err := checkUpload(&u); err != nil {
		return nil, 0, err // before a byte is stored
	}
	// Refuse early, before the bytes: Record decides again.
	if err := d.View(func(tx *meta.Tx) error {
		_, err := d.mayReplace(tx, r, u)
		return err
	}); err != nil {
		return nil, 0, err
	}
	info, err := d.PutBlob(ctx, u.Body, u.Expect)
	if err != nil {
		return nil, 0, err
	}
	return d.record(ctx, r, u, info)
}

// mayReplace says whether the upload may replace what is at its path, and
// refuses when the path is taken and may not be replaced.
func (d *Writer) mayReplace(tx *meta.Tx, r *Request, u Upload) (bool, error) {
	if u.Overwrite == OverwriteAlways {
		return true, nil
	}
	if u.Overwrite == OverwriteIfDelete {
		if ok, err := auth.Can(tx, r.Principal, u.Repo, meta.ActionDelete); ok || err != nil {
			return ok, err
		}
	}
	if _, err := tx.ArtifactByPath(u.Repo.ID, u.Path); err == nil {
		if u.Overwrite == OverwriteNever {
			return false, Conflict("%s already exists and cannot be replaced", u.Path)
		}
		return false, Conflict("%s already exists; replacing it needs the delete permission", u.Path)
	} else if !errors.Is(err, meta.ErrNotFound) {
		return false, err
	}
	return false, nil
}

// PutBlob stores bytes (bounded by MaxUpload, verified against expect)
// without recording an artifact: for formats that look at the bytes before
// deciding what they are, or that keep blobs beside artifacts (OCI layers).
// Every upload goes through here, so here the free-space guard applies; a
// body that declares its length (Sized) is refused before it is read.
func (d *Writer) PutBlob(ctx context.Context, body io.Reader, expect blob.Checksums) (blob.Info, error) {
	var n int64
	if s, ok := body.(Sized); ok {
		n = s.Size()
	}
	body, err := d.GuardUpload(body, n)
	if err != nil {
		return blob.Info{}, err
	}
	info, err := d.Blobs.Put(ctx, body, blob.PutOptions{MaxSize: d.MaxUpload, Expect: expect})
	return info, d.WriteErr(err)
}

// GuardUpload admits an upload of n bytes (n <= 0: unknown) and returns
// body wrapped so that it stops with blob.ErrNoSpace if free space runs
// low while it streams. For bytes a format writes to disk itself (OCI
// upload sessions); PutBlob does it for the blob store.
func (d *Writer) GuardUpload(body io.Reader, n int64) (io.Reader, error) {
	if d.Space == nil {
		return body, nil
	}
	if err := d.Space.Admit(n); err != nil {
		return nil, err
	}
	return d.Space.Reader(body), nil
}

// WriteErr returns the error of a write to disk, a full disk marked as
// blob.ErrNoSpace (507 rather than 500), and tells the guard.
func (d *Writer) WriteErr(err error) error {
	if err == nil {
		return nil
	}
	if d.Space != nil {
		d.Space.Observe(err)
	}
	return blob.NoSpace(err)
}

// Record commits an artifact for a blob PutBlob stored (u.Body unused).
func (d *Writer) Record(ctx context.Context, r *Request, u Upload, info blob.Info) (*meta.Artifact, uint64, error) {
	if err := checkUpload(&u); err != nil {
		return nil, 0, err
	}
	return d.record(ctx, r, u, info)
}

func (d *Writer) record(ctx context.Context, r *Request, u Upload, info blob.Info) (*meta.Artifact, uint64, error) {
	var a meta.Artifact
	idx, err := d.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		replace, err := d.mayReplace(tx, r, u)
		if err != nil {
			return nil, err
		}
		var kv []meta.KVOp
		if u.Decide != nil {
			if kv, err = u.Decide(tx); err != nil {
				return nil, err
			}
		}
		a = d.NewArtifact(r, u, info)
		return &meta.ArtifactPut{Artifact: a, Replace: replace, KV: kv}, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return &a, idx, nil
}

// NewArtifact is the record of an upload whose blob is stored.
func (d *Writer) NewArtifact(r *Request, u Upload, info blob.Info) meta.Artifact {
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
		UploadedAt:   d.Time(),
		UploadedBy:   r.Principal.Name(),
		Attrs:        u.Attrs,
		Refs:         u.Refs,
		Companion:    u.Companion,
	}
	if !r.Principal.Anonymous() {
		a.UploaderID = r.Principal.UserID
	}
	if !r.uploadedAt.IsZero() {
		a.UploadedAt = r.uploadedAt.UTC()
	}
	if r.uploadedBy != "" {
		a.UploadedBy, a.UploaderID = r.uploadedBy, "" // someone of the source's, maybe no one here
	}
	if len(r.properties) > 0 {
		a.Properties = r.properties
	}
	return a
}

// Placed is an upload whose blob is already stored.
type Placed struct {
	Upload
	Info blob.Info
	// Quiet: the format's bookkeeping, not an upload of its own (no
	// artifact.uploaded event).
	Quiet bool
	// UploadedAt, when set, is the time of the upload it stands for (a
	// record of bytes uploaded earlier, as an OCI manifest that lost its
	// last tag); zero: now.
	UploadedAt time.Time
}

// Quiet marks p as bookkeeping beside the upload it comes with (a
// go.mod beside its module zip, a nuspec beside its package).
func Quiet(p Placed) Placed { p.Quiet = true; return p }

// ChangeCmd is the one command that drops artifacts (each an
// artifact.deleted event unless the caller adds it to Quiet), puts
// artifacts (each replacing whatever is at its path, and an
// artifact.uploaded event unless Quiet; Upload.Body, Overwrite and Decide
// are not used) and applies KV ops in repo.
func (d *Writer) ChangeCmd(r *Request, repo *meta.Repository, drop []*meta.Artifact, put []Placed, kv []meta.KVOp) (*meta.ArtifactsApply, error) {
	c := &meta.ArtifactsApply{RepoID: repo.ID, KV: kv}
	for _, a := range drop {
		c.Drop = append(c.Drop, a.ID)
	}
	for _, p := range put {
		if err := checkUpload(&p.Upload); err != nil {
			return nil, err
		}
		p.Repo = repo
		a := d.NewArtifact(r, p.Upload, p.Info)
		if !p.UploadedAt.IsZero() {
			a.UploadedAt = p.UploadedAt
		}
		if p.Quiet {
			a.Companion = true
			c.Quiet = append(c.Quiet, a.ID)
		}
		c.Put = append(c.Put, a)
	}
	return c, nil
}

// DeleteThrough deletes artifact a of r.Repo as its format f does:
// through the format's own ArtifactDeleter when it keeps state beside its
// artifacts (tags, dist-tags), else DeleteArtifact.
func (d *Writer) DeleteThrough(ctx context.Context, f Format, r *Request, a *meta.Artifact) (uint64, error) {
	if del, ok := f.(ArtifactDeleter); ok {
		return del.DeleteArtifact(ctx, r, d, a)
	}
	return d.DeleteArtifact(ctx, r, r.Repo, a.ID)
}

// DeleteArtifact deletes an artifact the REST API names, keeping its
// format consistent: a file of a version made of a main file and its
// companions goes with the whole version (DeleteVersion); any other file
// goes alone. Formats with other rules, or state beside their artifacts,
// delete through their own ArtifactDeleter instead.
func (d *Writer) DeleteArtifact(ctx context.Context, r *Request, repo *meta.Repository, id string) (uint64, error) {
	return d.DeleteWith(ctx, r, repo, id, func(a *meta.Artifact, files []meta.Artifact) []*meta.Artifact {
		if !slices.ContainsFunc(files, func(f meta.Artifact) bool { return f.Companion }) {
			return nil
		}
		return otherFiles(a, files)
	})
}

// DeleteVersion deletes the version of an artifact the REST API names,
// every file of it, for formats whose versions are installable only
// whole (a module zip and its go.mod, a .nupkg and its .nuspec), however
// old the files.
func (d *Writer) DeleteVersion(ctx context.Context, r *Request, a *meta.Artifact) (uint64, error) {
	return d.DeleteWith(ctx, r, r.Repo, a.ID, otherFiles)
}

// DeleteWith deletes artifact id and the files of its version that with
// names (given the artifact and every file of its version, itself
// included), in one command decided on a consistent view. The files
// deleted with the one asked for raise no events of their own (one client
// action, one event).
func (d *Writer) DeleteWith(ctx context.Context, r *Request, repo *meta.Repository, id string,
	with func(a *meta.Artifact, files []meta.Artifact) []*meta.Artifact) (uint64, error) {
	return d.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		a, err := tx.Artifact(id)
		if err != nil {
			return nil, err
		}
		files, err := tx.VersionFiles(a.RepositoryID, a.PackageName, a.Version)
		if err != nil {
			return nil, err
		}
		others := with(a, files)
		c, err := d.ChangeCmd(r, repo, append([]*meta.Artifact{a}, others...), nil, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			c.Quiet = append(c.Quiet, o.ID)
		}
		return c, nil
	})
}

// otherFiles is a DeleteWith choice: every other file of the version.
func otherFiles(a *meta.Artifact, files []meta.Artifact) []*meta.Artifact {
	var out []*meta.Artifact
	for i := range files {
		if files[i].ID != a.ID {
			out = append(out, &files[i])
		}
	}
	return out
}

// Decide reads, decides and commits one command that carries what it read
// as its preconditions (meta.Decide): fn runs on a consistent view and
// returns the command (nil: nothing to write). If another write changed
// what fn read before the command applied, fn runs again on a fresh view;
// after a bounded number of attempts the write is refused with a 503.
// Every format write goes through here, whichever node decides it.
func (d *Writer) Decide(ctx context.Context, fn func(tx *meta.Tx) (meta.Command, error)) (uint64, error) {
	var cmd meta.Command
	var screen func(meta.Command) error
	if d.Screen != nil {
		passed := map[string]bool{} // digests screened by an earlier attempt
		screen = func(c meta.Command) error {
			var arts []*meta.Artifact
			uploads(c, func(a *meta.Artifact) {
				if !passed[a.RepositoryID+" "+a.Digest+" "+a.Path] {
					arts = append(arts, a)
				}
			})
			if len(arts) == 0 {
				return nil
			}
			if err := d.Screen(ctx, arts); err != nil {
				return err
			}
			for _, a := range arts {
				passed[a.RepositoryID+" "+a.Digest+" "+a.Path] = true
			}
			return nil
		}
	}
	idx, err := meta.DecideScreened(ctx, d.Meta, d.Commit, func(tx *meta.Tx) (meta.Command, error) {
		c, err := fn(tx)
		cmd = c
		return c, err
	}, screen)
	if err == nil && d.OnUploaded != nil {
		uploaded(cmd, d.OnUploaded)
	}
	return idx, err
}

// uploaded tells fn of the artifacts cmd records, by format.
func uploaded(cmd meta.Command, fn func(format string, n int)) {
	n, f := 0, ""
	uploads(cmd, func(a *meta.Artifact) { n, f = n+1, a.Format })
	if n > 0 {
		fn(f, n)
	}
}

// uploads tells fn of the artifacts cmd records that its apply announces
// with an artifact.uploaded event (not the Quiet bookkeeping).
func uploads(cmd meta.Command, fn func(a *meta.Artifact)) {
	switch c := cmd.(type) {
	case *meta.ArtifactPut:
		fn(&c.Artifact)
	case *meta.ArtifactsApply:
		for i := range c.Put {
			if !slices.Contains(c.Quiet, c.Put[i].ID) {
				fn(&c.Put[i])
			}
		}
	}
}

// KVSet is a KV op that stores v as JSON.
func KVSet(key string, v any) meta.KVOp {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("format: KVSet %s: %v", key, err)) // only plain data is stored
	}
	return meta.KVOp{Key: key, Value: raw}
}

// KVDelete is a KV op that deletes key.
func KVDelete(key string) meta.KVOp { return meta.KVOp{Key: key} }

// DeleteAt deletes the artifact at path in repo and answers 204.
func (d *Writer) DeleteAt(ctx context.Context, repo *meta.Repository, path string) (*Response, error) {
	idx, err := d.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		a, err := tx.ArtifactByPath(repo.ID, path)
		if errors.Is(err, meta.ErrNotFound) {
			return nil, NotFound("%s not found in repository %s", path, repo.Name)
		}
		if err != nil {
			return nil, err
		}
		return &meta.ArtifactDelete{ID: a.ID, RepoID: repo.ID}, nil
	})
	if err != nil {
		return nil, err
	}
	resp := NewResponse(http.StatusNoContent)
	SetIndex(resp.Header, idx)
	return resp, nil
}
