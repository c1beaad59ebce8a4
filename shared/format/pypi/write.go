package pypi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// upload is the legacy upload API (twine). The file streams into the blob
// store as it arrives; only once the form, the digests and (for a wheel)
// the archive have been checked is the artifact recorded, with one
// command, so a rejected upload leaves no metadata behind.
func (f *Format) upload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	repo := r.Repo
	var info *blob.Info
	form, err := ParseUpload(r.Body, r.Header.Get("Content-Type"), DefaultLimits, func(form *Form, filename string, body io.Reader) error {
		// twine sends the fields first: refuse a bad or duplicate file
		// before storing its bytes when they are already known.
		if name, version := form.Get("name"), form.Get("version"); name != "" && version != "" {
			m := &UploadMeta{Name: name, Project: Normalize(name), Version: version, Filename: filename}
			if err := CheckName(name); err != nil {
				return err
			}
			if err := CheckVersion(version); err != nil {
				return err
			}
			if _, err := CheckFilename(name, version, filename); err != nil {
				return err
			}
			if err := w.View(func(tx *meta.Tx) error { return checkNew(tx, repo, m) }); err != nil {
				return err // before the file is stored; Record checks again
			}
		}
		// Digests sent before the file let the blob store refuse a
		// mismatch before anything is committed; later ones are checked
		// after.
		expect := blob.Checksums{SHA256: strings.ToLower(strings.TrimSpace(form.Get("sha256_digest"))),
			MD5: strings.ToLower(strings.TrimSpace(form.Get("md5_digest")))}
		if (expect.SHA256 != "" && !isHex(expect.SHA256, 64)) || (expect.MD5 != "" && !isHex(expect.MD5, 32)) {
			return format.BadRequest("sha256_digest must be 64 and md5_digest 32 hex digits")
		}
		in, err := w.PutBlob(ctx, body, expect)
		if errors.Is(err, blob.ErrDigestMismatch) {
			return format.BadRequest("the digests sent do not match the uploaded file %q", filename)
		}
		if err != nil {
			return err
		}
		info = &in
		return nil
	})
	if err != nil {
		return nil, err
	}
	m, err := CheckUpload(form)
	if err != nil {
		return nil, err
	}
	if info == nil {
		return nil, format.BadRequest("the upload has no file: send it as the form part \"content\"")
	}
	// Digests that came after the file are checked here.
	if (m.SHA256 != "" && m.SHA256 != info.Checksums.SHA256) || (m.MD5 != "" && m.MD5 != info.Checksums.MD5) {
		return nil, format.BadRequest("the digests sent do not match the uploaded file %q", m.Filename)
	}
	at := fileAttrs{Name: m.Name, Filename: m.Filename, Filetype: m.Dist.Kind, PyVersion: m.PyVersion,
		RequiresPython: m.RequiresPython, Summary: m.Summary, MetadataVersion: m.MetadataVersion}
	if m.Dist.Kind == KindWheel {
		if err := wheelMetadata(ctx, w, m, *info, &at); err != nil {
			return nil, err
		}
	}
	attrs, err := json.Marshal(at)
	if err != nil {
		return nil, err
	}
	ct := "application/gzip"
	if !strings.HasSuffix(m.Filename, ".tar.gz") {
		ct = "application/zip"
	}
	var refs []string
	if at.Metadata != nil {
		refs = []string{at.Metadata.Digest}
	}
	_, idx, err := w.Record(ctx, r, format.Upload{Repo: repo, Path: m.Path(), Package: m.Project, Version: m.Version,
		ContentType: ct, Overwrite: format.OverwriteNever, Attrs: attrs, Refs: refs,
		Decide: func(tx *meta.Tx) ([]meta.KVOp, error) {
			if err := checkNew(tx, repo, m); err != nil {
				return nil, err
			}
			return nameOps(tx, repo, m), nil
		},
	}, *info)
	if format.Classify(err).Code == apierr.Conflict {
		return nil, fileExists(m) // lost a race with the same upload
	}
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	format.SetIndex(resp.Header, idx)
	resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp.Body = []byte("OK\n")
	return resp, nil
}

// checkNew refuses a file name the project already has, under any
// version spelling (PyPI's rule: a file name is never reused), with the
// 400 "File already exists" that twine --skip-existing recognises.
func checkNew(tx *meta.Tx, repo *meta.Repository, m *UploadMeta) error {
	files, err := tx.ArtifactsUnder(repo.ID, m.Project+"/")
	if err != nil {
		return err
	}
	for _, a := range files {
		if strings.EqualFold(path.Base(a.Path), m.Filename) {
			return fileExists(m)
		}
	}
	return nil
}

// keyName prefixes the keys that remember how each project is spelled:
// name/<normalized>/<as uploaded last>, the value unused. A key per
// spelling lets the project list read keys only.
const keyName = "name/"

// nameOps make m's spelling the project's: its key is set and any other
// spelling's key removed.
func nameOps(tx *meta.Tx, repo *meta.Repository, m *UploadMeta) []meta.KVOp {
	want := keyName + m.Project + "/" + m.Name
	var ops []meta.KVOp
	have := false
	tx.KVKeys(repo.ID, keyName+m.Project+"/", func(k string) bool {
		if k == want {
			have = true
		} else {
			ops = append(ops, format.KVDelete(k))
		}
		return true
	})
	if !have {
		ops = append(ops, format.KVSet(want, true))
	}
	return ops
}

func fileExists(m *UploadMeta) error {
	return format.BadRequest("File already exists: %s of %s %s cannot be replaced", m.Filename, m.Name, m.Version)
}

// wheelMetadata reads METADATA out of the stored wheel, checks it names
// the same project and version as the form, and stores it as its own blob
// for the PEP 658 ".metadata" URL.
func wheelMetadata(ctx context.Context, w *format.Writer, m *UploadMeta, info blob.Info, at *fileAttrs) error {
	wf, err := w.Blobs.Open(ctx, info.Digest)
	if err != nil {
		return err
	}
	defer wf.Close()
	data, cm, err := WheelMetadata(ctx, wf, wf.Size(), m.Dist, DefaultWheelLimits)
	if err != nil {
		return err
	}
	if Normalize(cm.Name) != m.Project || !sameVersion(cm.Version, m.Version) {
		return format.BadRequest("invalid wheel: METADATA says %s %s, the upload says %s %s", cm.Name, cm.Version, m.Name, m.Version)
	}
	if at.RequiresPython == "" {
		at.RequiresPython = cm.RequiresPython
	}
	mi, err := w.PutBlob(ctx, bytes.NewReader(data), blob.Checksums{})
	if err != nil {
		return err
	}
	at.Metadata = &metadataRef{Digest: mi.Digest, SHA256: mi.Checksums.SHA256, Size: mi.Size}
	return nil
}
