package oci

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// maxConfig bounds an image config read for inspection: configs carry a
// history line per layer and the environment, a few KiB to some hundreds.
const maxConfig = 8 << 20

// Image configs, the two kinds whose platform and labels are read.
const (
	MediaOCIConfig    = "application/vnd.oci.image.config.v1+json"
	MediaDockerConfig = "application/vnd.docker.container.image.v1+json"
)

// Inspect reads a stored manifest (an artifact's blob) with the parser a
// push uses (ParseManifest): its media type, config, layers, an index's
// manifests with their platforms, its subject. s.Path, the artifact's
// "<image>:<tag>" or "<image>@<digest>", gives name and version. With
// s.Blobs, an image's config is read too, opened by the digest the
// manifest names (a caller that stores content by another address maps
// it): the platform, and from the labels and the manifest's annotations
// (org.opencontainers.image.*) description, licences, links, version and
// base image (a dependency of kind "base", its digest the constraint).
// A layer's files are read with ReadLayer.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	if s.Size > MaxManifestSize {
		return format.PackageInfo{}, format.BadRequest("a manifest is at most %d bytes", MaxManifestSize)
	}
	body := make([]byte, s.Size)
	if _, err := s.File.ReadAt(body, 0); err != nil && !errors.Is(err, io.EOF) {
		return format.PackageInfo{}, err
	}
	mf, err := ParseManifest("", body)
	if err != nil {
		return format.PackageInfo{}, err
	}
	info := format.PackageInfo{Format: Name, Size: s.Size}
	if image, digest, ok := strings.Cut(s.Path, "@"); ok {
		info.Name, info.Version = image, digest
	} else if i := strings.LastIndexByte(s.Path, ':'); i > 0 {
		info.Name, info.Version = s.Path[:i], s.Path[i+1:]
	} else {
		info.Name = s.Path
	}
	im := &format.Image{MediaType: mf.MediaType, ArtifactType: mf.ArtifactType}
	if mf.Config != nil {
		im.Config = descriptor(*mf.Config)
	}
	for _, l := range mf.Layers {
		im.Layers = append(im.Layers, *descriptor(l))
	}
	for _, m := range mf.Manifests {
		im.Manifests = append(im.Manifests, *descriptor(m))
	}
	if mf.Subject != nil {
		im.Subject = mf.Subject.Digest
	}
	info.Image = im
	labels := map[string]string{}
	if cfg := mf.Config; cfg != nil && s.Blobs != nil && (cfg.MediaType == MediaOCIConfig || cfg.MediaType == MediaDockerConfig) {
		c, err := readConfig(ctx, s.Blobs, *cfg)
		if err != nil {
			return format.PackageInfo{}, err
		}
		if c.OS != "" || c.Architecture != "" {
			im.Platform = &format.Platform{OS: c.OS, Architecture: c.Architecture, Variant: c.Variant, OSVersion: c.OSVersion}
		}
		for k, v := range c.Config.Labels {
			labels[k] = v
		}
	}
	for k, v := range mf.Annotations { // the manifest's word over the image's
		labels[k] = v
	}
	annotate(&info, labels)
	return info.Bounded(), nil
}

// imageConfig is what is read of an image config.
type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant"`
	OSVersion    string `json:"os.version"`
	Config       struct {
		Labels map[string]string `json:"Labels"`
	} `json:"config"`
}

// readConfig reads an image config (bounded) from blobs.
func readConfig(ctx context.Context, blobs blob.Opener, d Descriptor) (imageConfig, error) {
	var c imageConfig
	if d.Size > maxConfig {
		return c, format.BadRequest("the image config is larger than %d bytes", maxConfig)
	}
	f, err := blobs.Open(ctx, d.Digest)
	if err != nil {
		return c, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return c, err
	}
	if len(raw) > maxConfig {
		return c, format.BadRequest("the image config is larger than %d bytes", maxConfig)
	}
	err = format.DecodeJSON(raw, &c, "the image config")
	return c, err
}

// annotate reads the OCI annotations (or labels) an image describes
// itself with.
func annotate(info *format.PackageInfo, a map[string]string) {
	const p = "org.opencontainers.image."
	info.Summary = a[p+"description"]
	if info.Summary == "" {
		info.Summary = a[p+"title"]
	}
	if l := a[p+"licenses"]; l != "" {
		info.Licenses = []string{l}
	}
	info.Homepage, info.Repository = a[p+"url"], a[p+"source"]
	if base := a[p+"base.name"]; base != "" {
		info.Dependencies = []format.Dependency{{Name: base, Constraint: a[p+"base.digest"], Kind: "base", Ecosystem: Name}}
	}
}

// descriptor is d as PackageInfo shows it, with its platform when it
// names one (an index's manifests).
func descriptor(d Descriptor) *format.Descriptor {
	out := &format.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
	var p struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
		OSVersion    string `json:"os.version"`
	}
	if len(d.Platform) > 0 && json.Unmarshal(d.Platform, &p) == nil && (p.OS != "" || p.Architecture != "") {
		out.Platform = &format.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion}
	}
	return out
}

// ReadLayer reads the files rules want out of an image layer, opened from
// blobs by its digest: a tar, gzip'd or zstd'd as its media type says,
// within rules' limits (a layer can unpack to more than the default
// bound: a caller that reads whole layers raises it).
func ReadLayer(ctx context.Context, blobs blob.Opener, layer format.Descriptor, rules format.ArchiveRules) ([]format.Member, error) {
	c, err := LayerCompression(layer.MediaType)
	if err != nil {
		return nil, err
	}
	f, err := blobs.Open(ctx, layer.Digest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if rules.What == "" {
		rules.What = "an image layer"
	}
	return format.ReadTar(ctx, f, f.Size(), c, rules)
}

// LayerCompression is how a layer of media type mt is compressed; an
// error when it is not a layer of files (an artifact's blob, a
// signature).
func LayerCompression(mt string) (format.Compression, error) {
	switch {
	case strings.HasSuffix(mt, "+gzip") || strings.HasSuffix(mt, ".tar.gzip"):
		return format.Gzip, nil
	case strings.HasSuffix(mt, "+zstd"):
		return format.Zstd, nil
	case strings.HasSuffix(mt, ".tar"):
		return format.Uncompressed, nil
	}
	return 0, format.BadRequest("%s is not a layer of files", mt)
}
