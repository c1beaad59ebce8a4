package maven

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Attrs is the format's record of a stored file.
type Attrs struct {
	GroupID     string `json:"group_id"`
	ArtifactID  string `json:"artifact_id"`
	Version     string `json:"version"`
	FileVersion string `json:"file_version,omitempty"` // "1.0-20261121.235031-2" for a unique snapshot file
	Classifier  string `json:"classifier,omitempty"`
	Extension   string `json:"extension"`
}

func (f *Format) put(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	repo := r.Repo
	if err := checkPolicy(repo, c.Version); err != nil {
		return nil, err
	}
	switch {
	case c.Checksum != "":
		err = f.putSidecar(r, repo, c)
	case c.Metadata:
		err = putMetadata(r, c)
	default:
		return f.putFile(ctx, r, w, repo, c)
	}
	if err != nil {
		return nil, err
	}
	return created(r, c, 0), nil
}

// putFile stores an artifact file. Release files are immutable (a
// redeploy is refused with 409); SNAPSHOT files may be replaced.
func (f *Format) putFile(ctx context.Context, r *format.Request, w *format.Writer, repo *meta.Repository, c Coords) (*format.Response, error) {
	ow := format.OverwriteNever
	if c.Snapshot() {
		ow = format.OverwriteAlways
	}
	at := Attrs{GroupID: c.GroupID, ArtifactID: c.ArtifactID, Version: c.Version, Classifier: c.Classifier, Extension: c.Extension}
	if c.Timestamp != "" {
		at.FileVersion = c.FileVersion()
	}
	raw, _ := json.Marshal(at)
	_, idx, err := w.Store(ctx, r, format.Upload{
		Repo: repo, Path: c.Path(), Package: c.Package(), Version: c.Version, ContentType: contentType(c),
		Body: r.Body, Overwrite: ow, Attrs: raw, Companion: !c.main(),
		// Checksums some clients announce (Maven 3.9's resolver, Nexus
		// style): verified, so a corrupted transfer is never stored.
		Expect: format.ExpectedChecksums(r.Header),
	})
	if err != nil {
		if errors.Is(err, meta.ErrConflict) {
			// A concurrent deploy of the same release file won the race.
			return nil, format.Conflict("%s already exists and cannot be replaced", c.Path())
		}
		return nil, err
	}
	return created(r, c, idx), nil
}

// putSidecar verifies an uploaded checksum against the stored file; it
// stores nothing, since sidecars are served from the stored checksums.
// One that arrives before its file (or names generated metadata, whose
// bytes differ from the client's) is accepted once well-formed.
func (f *Format) putSidecar(r *format.Request, repo *meta.Repository, c Coords) error {
	body, err := format.ReadBody(r, MaxSidecar)
	if err != nil {
		return err
	}
	if c.Metadata {
		_, err = ParseSidecar(c.Checksum, body)
		return err
	}
	a, err := f.Env.Artifact(repo, c.Path())
	if errors.Is(err, meta.ErrNotFound) {
		_, err = ParseSidecar(c.Checksum, body)
		return err
	}
	if err != nil {
		return err
	}
	return VerifySidecar(c.Checksum, body, a.Checksums)
}

// putMetadata accepts a client's maven-metadata.xml after checking it is
// one and is about this artifact, and drops it: the document served is
// generated from the stored files, so it cannot disagree with them (a
// client's copy may miss versions another deploy added meanwhile).
func putMetadata(r *format.Request, c Coords) error {
	body, err := format.ReadBody(r, MaxMetadata)
	if err != nil {
		return err
	}
	m, err := ParseMetadata(body)
	if err != nil {
		return err
	}
	if (m.GroupID != "" && m.GroupID != c.GroupID) || (m.ArtifactID != "" && m.ArtifactID != c.ArtifactID) {
		return format.BadRequest("maven-metadata.xml is about %s:%s, not %s", m.GroupID, m.ArtifactID, c.Package())
	}
	if c.Version != "" && m.Version != "" && m.Version != c.Version {
		return format.BadRequest("maven-metadata.xml is about version %s, not %s", m.Version, c.Version)
	}
	return nil
}

func (f *Format) delete(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	if c.Metadata || c.Checksum != "" {
		return nil, format.Errorf(apierr.MethodNotAllowed, "%s is generated; delete the files it describes", path.Base(r.Param("path")))
	}
	return w.DeleteAt(ctx, r.Repo, c.Path())
}

func created(r *format.Request, c Coords, idx uint64) *format.Response {
	resp := format.NewResponse(http.StatusCreated)
	if idx != 0 {
		format.SetIndex(resp.Header, idx)
	}
	resp.Header.Set("Location", format.URL(r, r.Prefix, append([]string{r.Param("repo")}, strings.Split(r.Param("path"), "/")...)...))
	return resp
}

// contentType of a stored file, by its Maven extension.
func contentType(c Coords) string {
	switch path.Ext("." + c.Extension) {
	case ".jar", ".war", ".ear", ".aar":
		return "application/java-archive"
	case ".pom":
		return "application/xml"
	case ".module":
		return "application/json"
	case ".asc":
		return "application/pgp-signature"
	}
	if ct := mime.TypeByExtension(path.Ext(c.File)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// main reports whether a file is the main artifact of its build: the file
// its packaging makes (a jar, a war...), with no classifier, neither the
// POM, Gradle's module metadata nor a signature. The others are its
// companions; the REST API names the main file as the version's.
func (c Coords) main() bool {
	return c.Classifier == "" && c.Extension != "pom" && c.Extension != "module" && !strings.HasSuffix(c.Extension, ".asc")
}

// core reports whether a build cannot be installed without the file: its
// main file, its POM, its module metadata (every classifier-less file but
// a signature).
func (c Coords) core() bool {
	return c.Classifier == "" && !strings.HasSuffix(c.Extension, ".asc")
}

// DeleteArtifact is a REST delete that leaves the repository installable:
// a build is its POM, its main file and its module metadata together, so
// deleting any of them deletes the build whole (every file of a release
// version, or of one SNAPSHOT build); a classified file (sources,
// javadoc) or a signature goes alone, with its own signature. The
// generated maven-metadata.xml follows by itself. The files deleted with
// the one asked for raise no events of their own.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	repo := r.Repo
	return w.DeleteWith(ctx, r, repo, a.ID, func(a *meta.Artifact, files []meta.Artifact) []*meta.Artifact {
		c, err := ParsePath(repo.Name + "/" + a.Path)
		if err != nil {
			return nil // stored before a stricter parser: it goes alone
		}
		var with []*meta.Artifact
		for i := range files {
			o := &files[i]
			if o.ID == a.ID {
				continue
			}
			if oc, err := ParsePath(repo.Name + "/" + o.Path); err == nil && c.core() && oc.FileVersion() == c.FileVersion() ||
				o.Path == a.Path+".asc" {
				with = append(with, o)
			}
		}
		return with
	})
}
