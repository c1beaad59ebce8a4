package format

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// What every format shares: finding the repository a request names and
// checking access, storing an upload as an artifact, and serving one.

// Repo returns repository name if it has one of formats and the caller may
// do action on it (see Access).
func (d *Env) Repo(r *Request, name, action string, formats ...string) (*meta.Repository, error) {
	var repo *meta.Repository
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		repo, err = tx.RepoByName(name)
		if errors.Is(err, meta.ErrNotFound) || err == nil && !slices.Contains(formats, repo.Format) {
			repo = nil
		} else if err != nil {
			return err // a store failure is not "no such repository"
		}
		return Access(tx, r.Principal, repo, name, action)
	})
	if err != nil {
		return nil, err
	}
	return repo, nil
}

// Access is the one access check of the REST API and every format: may
// p do action on repo (nil: there is none by that name or id)? An
// anonymous caller is asked to authenticate (401) rather than told whether
// a private repository exists; a caller who may not read it is told it
// does not exist (404); one who may read it but not do action is refused
// (403).
func Access(tx *meta.Tx, p *auth.Principal, repo *meta.Repository, name, action string) error {
	allowed, visible := false, false
	if repo != nil {
		var err error
		if allowed, err = auth.Can(tx, p, repo, action); err != nil {
			return err
		}
		if visible = allowed; !visible && action != meta.ActionRead {
			if visible, err = auth.Can(tx, p, repo, meta.ActionRead); err != nil {
				return err
			}
		}
	}
	switch {
	case allowed:
		return nil
	case p.Anonymous():
		return Unauthorized()
	case repo != nil && p.MustChangePassword:
		return Errorf(apierr.PasswordChangeRequired, "password change required before using this account")
	case !visible:
		// A private repository the caller cannot read is indistinguishable
		// from one that does not exist.
		return &RepoNotFoundError{Name: name}
	}
	return Forbidden("%s may not %s in repository %s", p.Name(), action, repo.Name)
}

// AccessByID is Access for a repository named by its id (the REST API):
// an id is not guessable, so a signed-in caller who may not read the
// repository is refused (403) rather than told it is not there.
func AccessByID(tx *meta.Tx, p *auth.Principal, repo *meta.Repository, id, action string) error {
	err := Access(tx, p, repo, id, action)
	if rnf := (*RepoNotFoundError)(nil); repo != nil && errors.As(err, &rnf) {
		return Forbidden("%s may not %s repository %s", p.Name(), action, repo.Name)
	}
	return err
}

// Can reports whether the caller may do action on repo.
func (d *Env) Can(r *Request, repo *meta.Repository, action string) (bool, error) {
	var ok bool
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		ok, err = auth.Can(tx, r.Principal, repo, action)
		return err
	})
	return ok, err
}

// Artifact returns the artifact stored at path in repo.
func (d *Env) Artifact(repo *meta.Repository, p string) (*meta.Artifact, error) {
	var a *meta.Artifact
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		a, err = tx.ArtifactByPath(repo.ID, p)
		return err
	})
	return a, err
}

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
	return a
}

// Placed is an upload whose blob is already stored.
type Placed struct {
	Upload
	Info blob.Info
	// Quiet: the format's bookkeeping, not an upload of its own (no
	// artifact.uploaded event).
	Quiet bool
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
		if p.Quiet {
			a.Companion = true
			c.Quiet = append(c.Quiet, a.ID)
		}
		c.Put = append(c.Put, a)
	}
	return c, nil
}

// DeleteArtifact deletes an artifact the REST API names, keeping its
// format consistent: a file of a version made of a main file and its
// companions goes with the whole version (DeleteVersion); any other file
// goes alone. Formats with other rules, or state beside their artifacts,
// delete through their own ArtifactDeleter instead.
func (d *Writer) DeleteArtifact(ctx context.Context, r *Request, repo *meta.Repository, id string) (uint64, error) {
	return d.deleteFiles(ctx, r, repo, id, false)
}

// DeleteVersion deletes the version of an artifact the REST API names,
// every file of it, for formats whose versions are installable only
// whole (a module zip and its go.mod, a .nupkg and its .nuspec), however
// old the files: the files named other than the one asked for raise no
// events of their own (one client action, one event).
func (d *Writer) DeleteVersion(ctx context.Context, r *Request, a *meta.Artifact) (uint64, error) {
	return d.deleteFiles(ctx, r, r.Repo, a.ID, true)
}

func (d *Writer) deleteFiles(ctx context.Context, r *Request, repo *meta.Repository, id string, whole bool) (uint64, error) {
	return d.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		a, err := tx.Artifact(id)
		if err != nil {
			return nil, err
		}
		files, err := tx.VersionFiles(a.RepositoryID, a.PackageName, a.Version)
		if err != nil {
			return nil, err
		}
		drop := []*meta.Artifact{a}
		var quiet []string
		if whole || slices.ContainsFunc(files, func(f meta.Artifact) bool { return f.Companion }) {
			for i := range files {
				if files[i].ID != a.ID {
					drop = append(drop, &files[i])
					quiet = append(quiet, files[i].ID) // one client action, one event
				}
			}
		}
		c, err := d.ChangeCmd(r, repo, drop, nil, nil)
		if err != nil {
			return nil, err
		}
		c.Quiet = quiet
		return c, nil
	})
}

// Decide reads, decides and commits one command that carries what it read
// as its preconditions (meta.Decide): fn runs on a consistent view and
// returns the command (nil: nothing to write). If another write changed
// what fn read before the command applied, fn runs again on a fresh view;
// after a bounded number of attempts the write is refused with a 503.
// Every format write goes through here, whichever node decides it.
func (d *Writer) Decide(ctx context.Context, fn func(tx *meta.Tx) (meta.Command, error)) (uint64, error) {
	return meta.Decide(ctx, d.Meta, d.Commit, fn)
}

// View runs fn on a consistent view of the metadata.
func (d *Env) View(fn func(*meta.Tx) error) error { return d.Meta.View(fn) }

// List returns the artifacts of repo whose path starts with prefix.
func (d *Env) List(repo *meta.Repository, prefix string) ([]meta.Artifact, error) {
	var out []meta.Artifact
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		out, err = tx.ArtifactsUnder(repo.ID, prefix)
		return err
	})
	return out, err
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

// URL builds an absolute URL under the format prefix from path segments,
// each escaped: the one place index documents get their links from.
func URL(r *Request, prefix string, segments ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(r.BaseURL, "/"))
	b.WriteString(prefix)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// ReadBody reads a small request body (a document, never a file: files
// stream into PutBlob), refusing more than max bytes with 413.
func ReadBody(r *Request, max int64) ([]byte, error) {
	body, err := BodyReader(r, max)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// BodyReader is the request body for a handler that streams it: reading
// past max bytes fails with 413 (at once when Content-Length says so) and
// a failed read with 400 (a body too slow stays ErrSlowBody, a 408).
func BodyReader(r *Request, max int64) (io.Reader, error) {
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	if r.Body == nil {
		return strings.NewReader(""), nil
	}
	return &bodyReader{LimitedReader: io.LimitedReader{R: r.Body, N: max + 1}, max: max}, nil
}

// bodyReader reads at most one byte past max: that byte is the 413.
type bodyReader struct {
	io.LimitedReader
	max int64
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.LimitedReader.Read(p)
	if b.N == 0 {
		return 0, tooLarge(b.max)
	}
	if err != nil && err != io.EOF && !errors.Is(err, ErrSlowBody) {
		err = BadRequest("reading the request body: %v", err)
	}
	return n, err
}

func tooLarge(max int64) error {
	return Errorf(apierr.PayloadTooLarge, "request body exceeds %d bytes", max)
}

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

// Serve answers with an artifact's bytes and its checksum headers; a GET
// counts as a download. attachment says whether a browser should save
// the file whatever its type (the REST download).
func (d *Env) Serve(r *Request, a *meta.Artifact, attachment bool) *Response {
	d.Downloaded(r, a)
	resp := NewResponse(http.StatusOK)
	resp.Blob = &BlobRef{Digest: a.Digest, Size: a.SizeBytes}
	resp.Name, resp.ModTime = path.Base(a.Path), a.UploadedAt
	SetFileHeaders(resp.Header, a, attachment)
	return resp
}

// Downloaded notes that r, when a GET, downloads a: the request says so
// (see Request.Downloaded) and OnDownload is told.
func (d *Env) Downloaded(r *Request, a *meta.Artifact) {
	if r.Method != http.MethodGet {
		return
	}
	r.Downloaded = a
	if d.OnDownload != nil {
		d.OnDownload(r, a)
	}
}

// SetContentSafety keeps uploaded content inert in a browser: whatever
// its type (an HTML or SVG file is a valid artifact), it is not sniffed
// and runs no script on the registry's origin, where credentials live.
func SetContentSafety(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
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

// ExpectedChecksums are the checksums a client announced for its upload
// in the X-Checksum-* headers Artifactory and Nexus clients send.
func ExpectedChecksums(h Header) blob.Checksums {
	get := func(k string) string { return strings.ToLower(strings.TrimSpace(h.Get(k))) }
	return blob.Checksums{MD5: get("X-Checksum-Md5"), SHA1: get("X-Checksum-Sha1"),
		SHA256: get("X-Checksum-Sha256"), SHA512: get("X-Checksum-Sha512")}
}

// SetIndex tells the client (and an edge in between) which log index holds
// its write, so it can wait to read it.
func SetIndex(h http.Header, idx uint64) {
	h.Set("X-Depot-Index", strconv.FormatUint(idx, 10))
}

// Time is the current time in UTC from d.Now, or the wall clock.
func (d *Env) Time() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

// Require checks that the caller may also do action in r.Repo, for a
// request that needs more than its route declares (an npm unpublish
// arrives as a PUT).
func (d *Env) Require(r *Request, action string) error {
	_, err := d.Repo(r, r.Repo.Name, action, r.Repo.Format)
	return err
}

// UploadBody is an upload's request body, refused with 413 past max bytes
// (0: no limit of the format's own) or past MaxUpload.
func (d *Writer) UploadBody(r *Request, max int64) (io.Reader, error) {
	limit := int64(1) << 62
	if max > 0 {
		limit = max
	}
	if d.MaxUpload > 0 && d.MaxUpload < limit {
		limit = d.MaxUpload
	}
	return BodyReader(r, limit)
}

// SpillUpload is Spill of the request body (UploadBody, max as there).
func (d *Writer) SpillUpload(r *Request, sub string, max int64) (f *os.File, size int64, remove func(), err error) {
	body, err := d.UploadBody(r, max)
	if err != nil {
		return nil, 0, nil, err
	}
	return d.Spill(body, sub)
}

// Spill copies body into a new file of this node's scratch space (under
// ScratchDir/sub), for a format that must read an upload at random before
// it decides what it is (a zip, a tar to look into). The caller closes
// the file and calls remove; garbage collection clears what a crash
// leaves. A full disk is ErrNoSpace.
func (d *Writer) Spill(body io.Reader, sub string) (f *os.File, size int64, remove func(), err error) {
	dir := filepath.Join(d.ScratchDir, sub)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, 0, nil, err
	}
	f, err = os.CreateTemp(dir, "upload-*")
	if err != nil {
		return nil, 0, nil, d.WriteErr(err)
	}
	remove = func() { f.Close(); os.Remove(f.Name()) }
	if size, err = io.Copy(f, body); err != nil {
		remove()
		return nil, 0, nil, d.WriteErr(err)
	}
	return f, size, remove, nil
}
