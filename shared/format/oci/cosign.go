package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Signatures where cosign looks for them: the signature manifest of an
// image manifest sha256:<hex> is tagged sha256-<hex>.sig in the same
// image; each of its layers is a signed payload (cosign's "simple
// signing" JSON naming the manifest's digest) with the signature in the
// layer's annotation. A new signature is a layer appended to the ones
// there (cosign sign does the same), so earlier signatures stay. The
// signature manifest names the signed manifest as its subject, so the
// referrers API lists it too.

const (
	mediaSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	annotationCosign   = "dev.cosignproject.cosign/signature"
	mediaOCIConfig     = "application/vnd.oci.image.config.v1+json"
)

var _ format.SignatureAttacher = (*Format)(nil)

// SignatureArtifact reports whether a is a signature manifest's tag
// (sha256-<hex>.sig, and cosign's attestations and SBOMs, .att and
// .sbom): what checks an image, not the image.
func SignatureArtifact(a *meta.Artifact) bool {
	if a.Format != Name {
		return false
	}
	_, tag, ok := strings.Cut(a.Path, ":")
	hx, ok2 := strings.CutPrefix(tag, "sha256-")
	if !ok || !ok2 || len(hx) < 64 {
		return false
	}
	rest := hx[64:]
	return strings.Trim(hx[:64], "0123456789abcdef") == "" && (rest == ".sig" || rest == ".att" || rest == ".sbom")
}

// SignatureTag is the tag cosign finds the signatures of a manifest
// digest (sha256:<hex>) under.
func SignatureTag(digest string) string { return strings.Replace(digest, ":", "-", 1) + ".sig" }

// AttachSignature signs the manifest artifact a is (a tag or a digest of
// an image) the way cosign does: sign gets the payload and answers its
// signature (base64); the payload and the signature manifest are then
// pushed as r's principal, through this format's own write path.
func (f *Format) AttachSignature(ctx context.Context, w *format.Writer, r *format.Request, a *meta.Artifact, sign func(payload []byte) (string, error)) error {
	image, digest := a.PackageName, digestOf(a)
	if digest == "" || !strings.HasPrefix(digest, "sha256:") {
		return fmt.Errorf("%s is not an image manifest of a sha256 digest", a.Path)
	}
	ref := strings.TrimPrefix(service(r)+"/"+r.Repo.Name+"/"+image, "/") // no host: a job's, without an external URL
	payload, _ := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": ref},
			"image":    map[string]string{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	sig, err := sign(payload)
	if err != nil {
		return err
	}
	var subject manifestRec
	var layers []Descriptor
	err = f.read(r.Repo, func(v view) error {
		rec, ok, err := v.manifest(image, digest)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("manifest %s of %s is not here", digest, image)
		}
		subject = rec
		old, err := v.artifact(tagPath(image, SignatureTag(digest)))
		if err != nil || old == nil {
			return err
		}
		prev, ok, err := v.manifest(image, digestOf(old))
		if err != nil || !ok {
			return err
		}
		layers, err = f.signatureLayers(ctx, w, prev)
		return err
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	layer := Descriptor{MediaType: mediaSimpleSigning, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(payload)),
		Annotations: map[string]string{annotationCosign: sig}}
	layers = append(layers, layer)
	diffIDs := make([]string, len(layers))
	for i, l := range layers {
		diffIDs[i] = l.Digest
	}
	config, _ := json.Marshal(map[string]any{"architecture": "", "created": "0001-01-01T00:00:00Z", "os": "", "config": map[string]any{},
		"history": []map[string]string{{"created": "0001-01-01T00:00:00Z"}}, "rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	csum := sha256.Sum256(config)
	cfg := Descriptor{MediaType: mediaOCIConfig, Digest: "sha256:" + hex.EncodeToString(csum[:]), Size: int64(len(config))}
	n := ImageName{Repo: r.Repo.Name, Image: image}
	for _, b := range []struct {
		digest string
		body   []byte
	}{{layer.Digest, payload}, {cfg.Digest, config}} {
		if _, err := f.commit(ctx, f.internal(r, n, "", nil), w, n, r.Repo, b.digest, bytes.NewReader(b.body)); err != nil {
			return err
		}
	}
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaOCIManifest, "config": cfg, "layers": layers,
		"subject": Descriptor{MediaType: subject.MediaType, Digest: digest, Size: subject.Size}})
	_, err = f.putManifest(ctx, f.internal(r, n, SignatureTag(digest), manifest), w)
	return err
}

// signatureLayers are the layers of a signature manifest already there
// (its earlier signatures).
func (f *Format) signatureLayers(ctx context.Context, w *format.Writer, rec manifestRec) ([]Descriptor, error) {
	file, err := w.Blobs.Open(ctx, rec.Addr)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	raw, err := io.ReadAll(io.LimitReader(file, MaxManifestSize+1))
	if err != nil {
		return nil, err
	}
	var m struct {
		Layers []Descriptor `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the signature manifest there is not JSON: %w", err)
	}
	return m.Layers, nil
}

// internal is a request of r's principal to this format, for the image
// n at ref (an OCI manifest's push when body is set).
func (f *Format) internal(r *format.Request, n ImageName, ref string, body []byte) *format.Request {
	h := http.Header{}
	h.Set("Content-Type", MediaOCIManifest)
	req := &format.Request{Method: http.MethodPut, Params: map[string]string{"name": n.String(), "ref": ref}, Header: h,
		Query: map[string][]string{}, Repo: r.Repo, Principal: r.Principal, Action: meta.ActionWrite, BaseURL: r.BaseURL,
		RemoteAddr: r.RemoteAddr, RequestID: r.RequestID, ContentLength: int64(len(body))}
	if body != nil {
		req.Body = bytes.NewReader(body)
	}
	return req
}
