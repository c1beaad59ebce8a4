package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

func manifestUnknown(ref string) error {
	return withDetail(errf(http.StatusNotFound, codeManifestUnknown, "manifest %s is unknown to this repository", ref), map[string]string{"reference": ref})
}

// getManifest answers the stored bytes with the media type they were
// pushed with, whatever Accept says (clients verify the digest of what
// they get, so nothing may be converted).
func (f *Format) getManifest(ctx context.Context, r *format.Request) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	ref, err := ParseReference(r.Param("ref"))
	if err != nil {
		if !strings.Contains(r.Param("ref"), ":") {
			return nil, manifestUnknown(r.Param("ref")) // no such tag can exist
		}
		return nil, err
	}
	digest := ref.Digest
	var arts []*meta.Artifact // what the manifest is served as: its tag, its digest, or (by digest) its tags
	var m manifestRec
	var ok bool
	err = f.read(repo, func(v view) error {
		if ref.Tag != "" {
			art, err := v.artifact(tagPath(n.Image, ref.Tag))
			if art == nil || err != nil {
				return err
			}
			arts, digest = []*meta.Artifact{art}, digestOf(art)
		} else if art, err := v.artifact(untaggedPath(n.Image, digest)); err != nil {
			return err
		} else if art != nil {
			arts = []*meta.Artifact{art}
		} else {
			tagged, err := v.tagsOf(n.Image, digest)
			if err != nil {
				return err
			}
			for i := range tagged {
				arts = append(arts, &tagged[i])
			}
		}
		var err error
		m, ok, err = v.manifest(n.Image, digest)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, manifestUnknown(r.Param("ref"))
	}
	for _, art := range arts { // a policy that blocks any of them blocks the bytes
		if err := f.Env.Admitted(r, art); err != nil {
			return nil, err
		}
	}
	if len(arts) > 0 {
		f.Env.Downloaded(r, arts[0])
	}
	resp := newResp(http.StatusOK)
	resp.Blob = &format.BlobRef{Digest: m.Addr, Size: m.Size, Missing: manifestUnknown(r.Param("ref"))}
	resp.Name = "manifest"
	resp.Header.Set("Content-Type", m.MediaType)
	resp.Header.Set("Docker-Content-Digest", digest)
	resp.Header.Set("ETag", `"`+digest+`"`)
	resp.Header.Set("Content-Length", strconv.FormatInt(m.Size, 10))
	format.SetContentSafety(resp.Header)
	return resp, nil
}

// putManifest stores a manifest by tag or by digest (with optional
// ?tag=), after checking that everything it references is in the image.
func (f *Format) putManifest(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	defer f.lockImage(repo, n.Image)()
	ref, err := ParseReference(r.Param("ref"))
	if err != nil {
		return nil, err
	}
	tags := r.Query["tag"]
	if ref.Tag != "" {
		tags = append([]string{ref.Tag}, tags...)
	}
	for _, t := range tags {
		if !ValidTag(t) {
			return nil, errf(http.StatusBadRequest, codeManifestInvalid, "invalid tag %q", t)
		}
	}
	if r.ContentLength > MaxManifestSize {
		return nil, errf(http.StatusRequestEntityTooLarge, codeManifestInvalid, "manifest is larger than %d bytes", MaxManifestSize)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxManifestSize+1))
	if err != nil {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "reading the manifest: %v", err)
	}
	mf, err := ParseManifest(r.Header.Get("Content-Type"), body)
	if err != nil {
		return nil, err
	}
	digest := manifestDigest(body, ref.Digest)
	if ref.Digest != "" && digest != ref.Digest {
		return nil, withDetail(errf(http.StatusBadRequest, codeDigestInvalid, "the manifest's digest is %s, not %s", digest, ref.Digest), map[string]string{"digest": ref.Digest})
	}
	// Refuse before storing anything; the decision checks again.
	if err := f.read(repo, func(v view) error { _, err := checkRefs(v, n, mf); return err }); err != nil {
		return nil, err
	}
	info, err := w.PutBlob(ctx, bytes.NewReader(body), blob.Checksums{})
	if err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, func(v view) (meta.Command, error) {
		rec, err := checkRefs(v, n, mf)
		if err != nil {
			return nil, err
		}
		rec.Addr, rec.Size, rec.Checksums = info.Digest, info.Size, info.Checksums
		return f.record(v, r, w, n, digest, rec, mf, tags)
	})
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusCreated)
	setIndex(resp, idx)
	resp.Header.Set("Location", nameURL(r, n, "manifests", digest))
	resp.Header.Set("Docker-Content-Digest", digest)
	if mf.Subject != nil {
		resp.Header.Set("OCI-Subject", mf.Subject.Digest)
	}
	if ref.Digest != "" {
		for _, t := range tags {
			resp.Header.Add("OCI-Tag", t)
		}
	}
	resp.Header.Set("Content-Length", "0")
	return resp, nil
}

// manifestDigest is the digest of body in the algorithm of want (sha256
// unless the client pushed by a sha512 digest).
func manifestDigest(body []byte, want string) string {
	if algo, _, err := ParseDigest(want); err == nil && algo == "sha512" {
		s := sha512.Sum512(body)
		return "sha512:" + hex.EncodeToString(s[:])
	}
	s := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(s[:])
}

// checkRefs requires every blob an image manifest names, and every
// manifest an index names, to be in the image with the size the
// descriptor gives. The subject need not exist (referrers may come
// first).
func checkRefs(v view, n ImageName, mf *Manifest) (manifestRec, error) {
	rec := manifestRec{MediaType: mf.MediaType, ArtifactType: mf.RefArtifactType()}
	if mf.Subject != nil {
		rec.Subject = mf.Subject.Digest
	}
	missing := func(d Descriptor) error {
		return withDetail(errf(http.StatusBadRequest, codeManifestBlobUnknown, "%s %s is not in %s", kindOf(mf), d.Digest, n.String()),
			map[string]string{"digest": d.Digest})
	}
	wrongSize := func(d Descriptor, size int64) error {
		return withDetail(errf(http.StatusBadRequest, codeManifestInvalid, "descriptor %s says %d bytes, the stored content has %d", d.Digest, d.Size, size),
			map[string]string{"digest": d.Digest})
	}
	for _, d := range mf.Manifests {
		m, ok, err := v.manifest(n.Image, d.Digest)
		if err != nil {
			return rec, err
		}
		if !ok {
			return rec, missing(d)
		}
		if m.Size != d.Size {
			return rec, wrongSize(d, m.Size)
		}
		rec.Refs, rec.RefsSize = append(rec.Refs, d.Digest), rec.RefsSize+d.Size
	}
	for _, d := range mf.Blobs() {
		l, ok, err := v.blobLink(n.Image, d.Digest)
		if err != nil {
			return rec, err
		}
		if !ok {
			return rec, missing(d)
		}
		if l.Size != d.Size {
			return rec, wrongSize(d, l.Size)
		}
		rec.Refs, rec.RefsSize = append(rec.Refs, d.Digest), rec.RefsSize+d.Size
	}
	return rec, nil
}

func kindOf(mf *Manifest) string {
	if IsIndex(mf.MediaType) {
		return "manifest"
	}
	return "blob"
}

// record is the one command that commits a pushed manifest, its tags and
// its KV state (nil when the same bytes and tags are there already). It
// keeps the invariant that a manifest with no tag has exactly one digest
// artifact and a tagged one has none, also for manifests a moved tag
// leaves behind.
func (f *Format) record(v view, r *format.Request, w *format.Writer, n ImageName, digest string, rec manifestRec, mf *Manifest, tags []string) (meta.Command, error) {
	kv := []meta.KVOp{manifestOp(n.Image, digest, rec)}
	if mf.Subject != nil {
		kv = append(kv, format.KVSet(referrerKey(n.Image, mf.Subject.Digest, digest), Descriptor{
			MediaType: mf.MediaType, Digest: digest, Size: rec.Size, ArtifactType: rec.ArtifactType, Annotations: mf.Annotations,
		}))
	}
	_, existed, err := v.manifest(n.Image, digest)
	if err != nil {
		return nil, err
	}
	var drop []*meta.Artifact
	var put []format.Placed
	leaving := map[string][]string{} // manifest digest -> tags moving away from it
	seen := map[string]bool{}
	for _, t := range tags {
		if seen[t] {
			continue
		}
		seen[t] = true
		old, err := v.artifact(tagPath(n.Image, t))
		if err != nil {
			return nil, err
		}
		if old != nil && digestOf(old) == digest {
			continue // the tag is already there
		}
		if old != nil {
			leaving[digestOf(old)] = append(leaving[digestOf(old)], t)
		}
		put = append(put, placed(v.repo, n.Image, tagPath(n.Image, t), t, digest, rec))
	}
	if existed && len(put) == 0 {
		return nil, nil // the same bytes and tags again change nothing
	}
	tagged, err := v.tagsOf(n.Image, digest)
	if err != nil {
		return nil, err
	}
	untagged, err := v.artifact(untaggedPath(n.Image, digest))
	if err != nil {
		return nil, err
	}
	switch hasTags := len(tagged) > 0 || len(put) > 0; {
	case hasTags && untagged != nil:
		drop = append(drop, untagged)
	case !hasTags && untagged == nil:
		put = append(put, placed(v.repo, n.Image, untaggedPath(n.Image, digest), digest, digest, rec))
	}
	for _, old := range sortedKeys(leaving) {
		p, ok, err := orphan(v, n.Image, old, leaving[old])
		if err != nil {
			return nil, err
		}
		if ok {
			put = append(put, p)
		}
	}
	c, err := w.ChangeCmd(r, v.repo, drop, put, kv)
	if err == nil && untagged != nil && len(drop) > 0 {
		c.Quiet = append(c.Quiet, untagged.ID) // tagged now: its digest entry is bookkeeping
	}
	return c, err
}

// manifestOp records a manifest; the key keeps the manifest's bytes from
// garbage collection.
func manifestOp(image, digest string, rec manifestRec) meta.KVOp {
	op := format.KVSet(manifestKey(image, digest), rec)
	op.Blobs = []string{rec.Addr}
	return op
}

// placed is the artifact of a manifest at path (a tag or its digest).
func placed(repo *meta.Repository, image, path, version, digest string, rec manifestRec) format.Placed {
	return format.Placed{Upload: format.Upload{Repo: repo, Path: path, Package: image, Version: version,
		ContentType: rec.MediaType, Attrs: rec.attrs(digest)}, Info: rec.info()}
}

// orphan returns the digest artifact a manifest needs once the tags in
// losing leave it, if that leaves it with no tag and it has none yet.
func orphan(v view, image, digest string, losing []string) (format.Placed, bool, error) {
	rec, ok, err := v.manifest(image, digest)
	if err != nil || !ok {
		return format.Placed{}, false, err
	}
	tagged, err := v.tagsOf(image, digest)
	if err != nil {
		return format.Placed{}, false, err
	}
	for _, a := range tagged {
		if !slices.Contains(losing, a.Version) {
			return format.Placed{}, false, nil // still tagged
		}
	}
	if a, err := v.artifact(untaggedPath(image, digest)); err != nil || a != nil {
		return format.Placed{}, false, err
	}
	p := placed(v.repo, image, untaggedPath(image, digest), digest, digest, rec)
	p.Quiet = true // the manifest was not uploaded again: it lost its last tag
	for _, a := range tagged {
		// It was pushed when its first tag was: retention rules see its
		// age, not the untagging's.
		if p.UploadedAt.IsZero() || a.UploadedAt.Before(p.UploadedAt) {
			p.UploadedAt = a.UploadedAt
		}
	}
	return p, true, nil
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// deleteManifest removes a tag (the manifest stays, reachable by digest)
// or a manifest with every tag pointing at it, in one command.
func (f *Format) deleteManifest(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	n, repo, err := f.resolve(r)
	if err != nil {
		return nil, err
	}
	defer f.lockImage(repo, n.Image)()
	ref, err := ParseReference(r.Param("ref"))
	if err != nil {
		return nil, err
	}
	idx, err := f.decide(ctx, w, repo, func(v view) (meta.Command, error) {
		if ref.Tag == "" {
			return deleteDigest(v, n.Image, ref.Digest)
		}
		a, err := v.artifact(tagPath(n.Image, ref.Tag))
		if err != nil {
			return nil, err
		}
		if a == nil {
			return nil, manifestUnknown(ref.Tag)
		}
		return f.untag(v, r, w, n.Image, a)
	})
	if err != nil {
		return nil, err
	}
	resp := newResp(http.StatusAccepted)
	setIndex(resp, idx)
	return resp, nil
}

// untag drops a tag artifact; the manifest stays, reachable by digest, so
// when that was its last tag the same command adds its digest artifact.
func (f *Format) untag(v view, r *format.Request, w *format.Writer, image string, a *meta.Artifact) (meta.Command, error) {
	var put []format.Placed
	p, ok, err := orphan(v, image, digestOf(a), []string{a.Version})
	if err != nil {
		return nil, err
	}
	if ok {
		put = append(put, p)
	}
	return w.ChangeCmd(r, v.repo, []*meta.Artifact{a}, put, nil)
}

// deleteDigest removes a manifest with every tag pointing at it, in one
// command.
func deleteDigest(v view, image, digest string) (meta.Command, error) {
	rec, ok, err := v.manifest(image, digest)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, manifestUnknown(digest)
	}
	tagged, err := v.tagsOf(image, digest)
	if err != nil {
		return nil, err
	}
	cmd := &meta.ArtifactDelete{RepoID: v.repo.ID, KV: []meta.KVOp{format.KVDelete(manifestKey(image, digest))}}
	for _, a := range tagged {
		cmd.IDs = append(cmd.IDs, a.ID)
	}
	a, err := v.artifact(untaggedPath(image, digest))
	if err != nil {
		return nil, err
	}
	if a != nil {
		cmd.IDs = append(cmd.IDs, a.ID)
	}
	if rec.Subject != "" {
		cmd.KV = append(cmd.KV, format.KVDelete(referrerKey(image, rec.Subject, digest)))
	}
	return cmd, nil
}

// DeleteArtifact is a REST delete of an image version: a tag is untagged,
// a digest artifact deletes its manifest.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	repo := r.Repo
	defer f.lockImage(repo, a.PackageName)()
	return f.decide(ctx, w, repo, func(v view) (meta.Command, error) {
		cur, err := v.artifact(a.Path)
		if err != nil {
			return nil, err
		}
		if cur == nil || cur.ID != a.ID {
			return nil, meta.NotFoundf("artifact %s", a.ID)
		}
		if a.Path == tagPath(a.PackageName, a.Version) {
			return f.untag(v, r, w, a.PackageName, a)
		}
		return deleteDigest(v, a.PackageName, digestOf(a))
	})
}

// lockImage serialises the writes of one image on this node. It only
// saves wasted work: each write is decided with format.Writer.Decide, whose
// preconditions refuse it if another node changed the image meanwhile.
func (f *Format) lockImage(repo *meta.Repository, image string) (unlock func()) {
	return f.imageWrites.Lock(repo.ID + "\x00" + image)
}

// setIndex reports the log index of a write, when it made one.
func setIndex(resp *format.Response, idx uint64) {
	if idx > 0 {
		format.SetIndex(resp.Header, idx)
	}
}
