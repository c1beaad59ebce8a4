package oci

import (
	"encoding/json"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
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

func (f *Format) blobLink(repo *meta.Repository, image, digest string) (blobLink, bool) {
	var l blobLink
	ok, err := f.d.KV(repo, blobKey(image, digest), &l)
	return l, ok && err == nil
}

func (f *Format) manifest(repo *meta.Repository, image, digest string) (manifestRec, bool) {
	var m manifestRec
	ok, err := f.d.KV(repo, manifestKey(image, digest), &m)
	return m, ok && err == nil
}

// tagArtifacts lists the tags of an image, in tag order.
func (f *Format) tagArtifacts(repo *meta.Repository, image string) ([]meta.Artifact, error) {
	return f.d.List(repo, image+":")
}

// digestOf is the manifest digest a tag or digest artifact stands for.
func digestOf(a *meta.Artifact) string {
	var at artifactAttrs
	_ = json.Unmarshal(a.Attrs, &at)
	return at.Digest
}

// tagsOf lists the tag artifacts pointing at digest.
func (f *Format) tagsOf(repo *meta.Repository, image, digest string) ([]meta.Artifact, error) {
	all, err := f.tagArtifacts(repo, image)
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

// images lists the images of a repository that hold a manifest.
func (f *Format) images(repo *meta.Repository) []string {
	var out []string
	for _, kv := range f.d.KVList(repo, "m/") {
		img, _, ok := strings.Cut(strings.TrimPrefix(kv.Key, "m/"), "@")
		if ok && (len(out) == 0 || out[len(out)-1] != img) {
			out = append(out, img)
		}
	}
	return out
}
