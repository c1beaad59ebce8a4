package scan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/service/scan/inventory"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
)

// imageTimeout bounds the reading of one image's layers.
const imageTimeout = 30 * time.Minute

// scannable reports whether a format's artifacts are scanned: the
// formats advisory data covers, and images (their layers' packages).
func scannable(formatName string) bool {
	return vuln.Ecosystem(formatName) != "" || formatName == oci.Name
}

// image matches the packages installed in an image's layers (what
// inventory finds: language packages, Go binaries, jars, and the OS's
// packages, which are matched only where advisories of that release are
// loaded).
func (s *Service) image(ctx context.Context, db *vuln.DB, rep *Report, a *meta.Artifact) error {
	ctx, cancel := context.WithTimeout(ctx, imageTimeout)
	defer cancel()
	in, ok := s.cfg.Formats[a.Format].(format.Inspector)
	if !ok {
		return nil
	}
	f, err := s.cfg.Blobs.Open(ctx, a.Digest)
	if err != nil {
		rep.notScanned(a.Path, "the manifest could not be read: "+err.Error())
		return nil
	}
	info, err := in.Inspect(ctx, format.Stored{Path: a.Path, File: f, Size: f.Size(), Blobs: s.cfg.Blobs})
	f.Close()
	if err != nil {
		rep.notScanned(a.Path, "the manifest could not be read: "+err.Error())
		return nil
	}
	im := info.Image
	switch {
	case im == nil:
		return nil
	case len(im.Manifests) > 0:
		rep.notScanned(a.Path, fmt.Sprintf("an image index: each of its %d manifests is scanned as an artifact of its own", len(im.Manifests)))
		return nil
	case im.Config == nil || im.Config.MediaType != oci.MediaOCIConfig && im.Config.MediaType != oci.MediaDockerConfig:
		rep.notScanned(a.Path, "not a container image (an artifact of another kind): no packages to find")
		return nil
	}
	inv := inventory.New()
	for i, l := range im.Layers {
		what := fmt.Sprintf("layer %d (%s)", i+1, l.Digest)
		c, err := oci.LayerCompression(l.MediaType)
		if err != nil {
			inv.Problem(what, err.Error())
			continue
		}
		lf, err := s.cfg.Blobs.Open(ctx, l.Digest)
		if err != nil {
			inv.Problem(what, "the layer could not be read: "+err.Error())
			continue
		}
		err = inv.Layer(ctx, lf, lf.Size(), c)
		lf.Close()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("reading the image's layers: %w", ctx.Err())
			}
			inv.Problem(what, err.Error())
		}
	}
	uncovered := map[string]int{} // ecosystem and kind -> packages
	for _, p := range inv.Packages() {
		if !db.Covers(p.Ecosystem) {
			uncovered[p.Ecosystem+" ("+p.Kind+")"]++
			continue
		}
		s.match(db, rep, p.Ecosystem, Scanned{Ecosystem: p.Ecosystem, Name: p.Name, Version: p.Version, Source: "image", Kind: p.Kind, Location: p.Location})
	}
	for _, k := range slices.Sorted(maps.Keys(uncovered)) {
		eco, _, _ := strings.Cut(k, " (")
		rep.notScanned(fmt.Sprintf("%d %s packages", uncovered[k], k), "no advisory data loaded for "+eco)
	}
	for _, p := range inv.Problems() {
		rep.notScanned(p.What, p.Reason)
	}
	return nil
}
