package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// State kept per Depot repository. '@' never occurs in an image name, so
// it ends the image part of every key and prefixes never overlap.
//
//	KV b/<image>@<digest>            blobLink: a blob usable in the image
//	KV m/<image>@<digest>            manifestRec: a manifest of the image
//	KV r/<image>@<subject>@<digest>  Descriptor: a referrer of subject
//	artifact <image>:<tag>           a tag (package image, version tag)
//	artifact <image>@<digest>        a manifest with no tag (version = digest)
//
// Tags are artifacts, so the REST API (and its delete) sees exactly the
// tags clients see. A manifest is always visible in REST: through its tag
// artifacts, or, when it has none, through one digest artifact.

func blobKey(image, digest string) string     { return "b/" + image + "@" + digest }
func manifestKey(image, digest string) string { return "m/" + image + "@" + digest }
func referrerKey(image, subject, digest string) string {
	return "r/" + image + "@" + subject + "@" + digest
}
func tagPath(image, tag string) string         { return image + ":" + tag }
func untaggedPath(image, digest string) string { return image + "@" + digest }

// blobLink makes a stored blob part of an image. Addr is the blob store
// address (sha256 of the bytes), which differs from the client's digest
// for sha512 digests.
type blobLink struct {
	Addr string `json:"addr"`
	Size int64  `json:"size"`
}

// manifestRec is a manifest of an image; its bytes are the blob at Addr.
type manifestRec struct {
	Addr         string         `json:"addr"`
	MediaType    string         `json:"media_type"`
	Size         int64          `json:"size"`
	Checksums    blob.Checksums `json:"checksums"`
	Refs         []string       `json:"refs,omitempty"` // config, layers or child manifests
	RefsSize     int64          `json:"refs_size"`
	Subject      string         `json:"subject,omitempty"`
	ArtifactType string         `json:"artifact_type,omitempty"`
}

// artifactAttrs is the Attrs of a tag or digest artifact.
type artifactAttrs struct {
	Digest       string   `json:"digest"`
	MediaType    string   `json:"media_type"`
	ManifestSize int64    `json:"manifest_size"`
	Refs         []string `json:"refs,omitempty"`
	RefsSize     int64    `json:"refs_size"`
	Subject      string   `json:"subject,omitempty"`
	ArtifactType string   `json:"artifact_type,omitempty"`
}

func (m *manifestRec) attrs(digest string) json.RawMessage {
	b, _ := json.Marshal(artifactAttrs{Digest: digest, MediaType: m.MediaType, ManifestSize: m.Size,
		Refs: m.Refs, RefsSize: m.RefsSize, Subject: m.Subject, ArtifactType: m.ArtifactType})
	return b
}

// info is what an artifact of this manifest records: its bytes and
// checksums, and as size the manifest plus everything it references
// directly (an image's size as users think of it).
func (m *manifestRec) info() blob.Info {
	return blob.Info{Digest: m.Addr, Size: m.Size + m.RefsSize, Checksums: m.Checksums}
}

// view reads an image's state from one transaction: the same code serves
// reads, and decisions made in format.Writer.Decide, whose command then
// carries what the view read. A record that does not decode is an error,
// never "absent": treating it as absent would let the next push overwrite
// it silently.
type view struct {
	tx   *meta.Tx
	repo *meta.Repository
}

func (v view) kv(key string, out any) (bool, error) {
	raw, ok := v.tx.KV(v.repo.ID, key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("oci: corrupt record %s in repository %s: %w", key, v.repo.Name, err)
	}
	return true, nil
}

func (v view) blobLink(image, digest string) (blobLink, bool, error) {
	var l blobLink
	ok, err := v.kv(blobKey(image, digest), &l)
	return l, ok, err
}

func (v view) manifest(image, digest string) (manifestRec, bool, error) {
	var m manifestRec
	ok, err := v.kv(manifestKey(image, digest), &m)
	return m, ok, err
}

// artifact is the tag or digest artifact at path, or nil.
func (v view) artifact(path string) (*meta.Artifact, error) {
	a, err := v.tx.ArtifactByPath(v.repo.ID, path)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	return a, err
}

// tagArtifacts lists the tags of an image, in tag order.
func (v view) tagArtifacts(image string) ([]meta.Artifact, error) {
	return v.tx.ArtifactsUnder(v.repo.ID, image+":")
}

// tagsOf lists the tag artifacts pointing at digest.
func (v view) tagsOf(image, digest string) ([]meta.Artifact, error) {
	all, err := v.tagArtifacts(image)
	if err != nil {
		return nil, err
	}
	var out []meta.Artifact
	for _, a := range all {
		if digestOf(&a) == digest {
			out = append(out, a)
		}
	}
	return out, nil
}

// digestOf is the manifest digest a tag or digest artifact stands for.
func digestOf(a *meta.Artifact) string {
	var at artifactAttrs
	_ = json.Unmarshal(a.Attrs, &at)
	return at.Digest
}

// images lists the images of a repository that hold a manifest.
// Only the keys are read: the catalog asks for every image.
func (v view) images() []string {
	var out []string
	v.tx.KVKeys(v.repo.ID, "m/", func(k string) bool {
		img, _, ok := strings.Cut(strings.TrimPrefix(k, "m/"), "@")
		if ok && (len(out) == 0 || out[len(out)-1] != img) {
			out = append(out, img)
		}
		return true
	})
	return out
}

// read runs fn on a view of repo.
func (f *Format) read(repo *meta.Repository, fn func(v view) error) error {
	return f.Env.View(func(tx *meta.Tx) error { return fn(view{tx: tx, repo: repo}) })
}

// decide commits the command fn decides from a view of repo.
func (f *Format) decide(ctx context.Context, w *format.Writer, repo *meta.Repository, fn func(v view) (meta.Command, error)) (uint64, error) {
	return w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) { return fn(view{tx: tx, repo: repo}) })
}

// blobLink reads one blob link in a view of its own.
func (f *Format) blobLink(repo *meta.Repository, image, digest string) (l blobLink, ok bool, err error) {
	err = f.read(repo, func(v view) error {
		l, ok, err = v.blobLink(image, digest)
		return err
	})
	return l, ok, err
}

// Pinned names what retention rules keep of an image (format.Pinner):
// the tag latest and every tag of the manifest it points at, the
// manifests another manifest of the image refers to (an index's
// platform images), and referrers (signatures, SBOMs), which go with
// their subject's deletion, not by age.
func (f *Format) Pinned(tx *meta.Tx, repo *meta.Repository, image string) (map[string]bool, error) {
	v := view{tx: tx, repo: repo}
	out := map[string]bool{}
	tags, err := v.tagArtifacts(image)
	if err != nil {
		return nil, err
	}
	latest := ""
	for i := range tags {
		if tags[i].Path == tagPath(image, "latest") {
			latest = digestOf(&tags[i])
		}
	}
	for i := range tags {
		if latest != "" && digestOf(&tags[i]) == latest {
			out[tags[i].Version] = true
		}
	}
	for _, kv := range tx.KVList(repo.ID, manifestKey(image, "")) {
		var m manifestRec
		if json.Unmarshal(kv.Value, &m) != nil {
			continue
		}
		for _, ref := range m.Refs {
			out[ref] = true // a digest artifact's version is its digest
		}
		if m.Subject != "" {
			out[strings.TrimPrefix(kv.Key, manifestKey(image, ""))] = true
		}
	}
	return out, nil
}
