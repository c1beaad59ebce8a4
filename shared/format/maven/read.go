package maven

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/signing"
)

func (f *Format) get(ctx context.Context, r *format.Request) (*format.Response, error) {
	c, err := coords(r)
	if err != nil {
		return nil, err
	}
	repo := r.Repo
	if c.Metadata {
		return f.getMetadata(r, repo, c)
	}
	a, err := f.Env.Artifact(repo, c.Path())
	if errors.Is(err, meta.ErrNotFound) && c.Snapshot() && c.Timestamp == "" {
		// "demo-1.0-SNAPSHOT.jar" names the newest build, as in Nexus.
		a, err = f.newestBuild(repo, c)
	}
	if errors.Is(err, meta.ErrNotFound) && strings.HasSuffix(c.File, ascSuffix) {
		if asc, ok, err := f.signatureOf(repo, strings.TrimSuffix(c.Path(), ascSuffix)); err != nil || ok {
			return ascResponse(asc, c.Checksum), err
		}
	}
	if errors.Is(err, meta.ErrNotFound) {
		return nil, format.NotFound("%s not found in repository %s", c.Path(), repo.Name)
	}
	if err != nil {
		return nil, err
	}
	if c.Checksum != "" {
		sum := Stored(c.Checksum, a.Checksums)
		if sum == "" {
			return nil, format.NotFound("%s.%s not found in repository %s", c.Path(), c.Checksum, repo.Name)
		}
		return textResponse(sum), nil
	}
	return f.Env.Serve(r, a, false)
}

// getMetadata generates maven-metadata.xml (or hashes it for a sidecar)
// from the stored files, so it always lists what is really there.
func (f *Format) getMetadata(r *format.Request, repo *meta.Repository, c Coords) (*format.Response, error) {
	files, _, err := f.files(repo, c)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, format.NotFound("%s not found in repository %s", c.Path(), repo.Name)
	}
	var m Metadata
	if c.Version != "" {
		m = SnapshotMetadata(c.GroupID, c.ArtifactID, c.Version, files)
	} else {
		m = ArtifactMetadata(c.GroupID, c.ArtifactID, files)
	}
	doc := Encode(m)
	sums := Checksums(doc)
	if c.Checksum != "" {
		return textResponse(Stored(c.Checksum, sums)), nil
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Body = doc
	resp.Header.Set("Content-Type", "application/xml")
	resp.Header.Set("Content-Length", strconv.Itoa(len(doc)))
	resp.Header.Set("ETag", `"`+sums.SHA256+`"`)
	format.SetChecksumHeaders(resp.Header, sums)
	return resp, nil
}

// files lists the stored files metadata c is generated from: every file
// of the artifact (artifact level) or of the SNAPSHOT version, with their
// artifacts in the same order.
func (f *Format) files(repo *meta.Repository, c Coords) ([]File, []meta.Artifact, error) {
	dir := c.Dir() + "/"
	all, err := f.Env.List(repo, dir)
	if err != nil {
		return nil, nil, err
	}
	depth := 2 // <version>/<file>
	if c.Version != "" {
		depth = 1
	}
	var files []File
	var arts []meta.Artifact
	for _, a := range all {
		rel := strings.TrimPrefix(a.Path, dir)
		if a.PackageName != c.Package() || strings.Count(rel, "/") != depth-1 {
			continue // another artifact whose group is below this one
		}
		fc, err := ParsePath(repo.Name + "/" + a.Path)
		if err != nil {
			continue // stored before a stricter parser; never listed
		}
		files = append(files, FileOf(fc, a.UploadedAt))
		arts = append(arts, a)
	}
	return files, arts, nil
}

// newestBuild finds the newest unique build of a SNAPSHOT file named by
// its non-unique name.
func (f *Format) newestBuild(repo *meta.Repository, c Coords) (*meta.Artifact, error) {
	vc := c
	vc.Metadata, vc.File = true, MetadataFile
	files, arts, err := f.files(repo, vc)
	if err != nil {
		return nil, err
	}
	best := -1
	for i, fl := range files {
		if fl.Timestamp == "" || fl.Classifier != c.Classifier || fl.Extension != c.Extension {
			continue
		}
		if best < 0 || newerFile(fl, files[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil, meta.NotFoundf("%s", c.Path())
	}
	return &arts[best], nil
}

// textResponse is a checksum sidecar body: the bare lowercase hex.
func textResponse(s string) *format.Response {
	resp := format.NewResponse(http.StatusOK)
	resp.Body = []byte(s)
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Header.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	return resp
}

// ascSuffix names a file's detached OpenPGP signature.
const ascSuffix = ".asc"

// signatureOf is the newest OpenPGP signature made here of the file at
// p, as an .asc file (ok false: none). An .asc uploaded with the file
// is served as stored instead.
func (f *Format) signatureOf(repo *meta.Repository, p string) (asc []byte, ok bool, err error) {
	err = f.Env.Meta.View(func(tx *meta.Tx) error {
		a, err := tx.ArtifactByPath(repo.ID, p)
		if errors.Is(err, meta.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sigs, err := tx.Signatures(a.ID)
		var newest *meta.Signature
		for i, s := range sigs {
			if s.Algorithm == signing.OpenPGP && strings.EqualFold(s.Digest, a.Checksums.SHA256) && (newest == nil || s.SignedAt.After(newest.SignedAt)) {
				newest = &sigs[i]
			}
		}
		if newest != nil {
			asc, ok = newest.Value, true
		}
		return err
	})
	return asc, ok, err
}

// ascResponse answers a signature made here (or its checksum sidecar).
func ascResponse(asc []byte, checksum string) *format.Response {
	if asc == nil {
		return nil
	}
	if checksum != "" {
		return textResponse(Stored(checksum, Checksums(asc)))
	}
	resp := textResponse(string(asc))
	resp.Header.Set("Content-Type", "application/pgp-signature")
	return resp
}
