package composer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

const maxComposerJSON = 256 << 10

// A version: numbers (a leading v allowed) with an optional stability
// suffix, or a branch: dev-<name> or <numbers>.x-dev.
var (
	tagVersion    = regexp.MustCompile(`^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?(?:[-.]?((?:alpha|beta|RC|rc|a|b|p|pl|patch|stable)\.?\d*))?$`)
	branchVersion = regexp.MustCompile(`^(dev-[A-Za-z0-9._-]+|\d+(\.\d+)*\.x-dev)$`)
)

func validVersion(v string) bool {
	return len(v) <= 100 && (tagVersion.MatchString(v) || branchVersion.MatchString(v))
}

// normalize is composer's version_normalized: four numbers and the
// stability ("1.2" -> "1.2.0.0", "v1.0.0-beta1" -> "1.0.0.0-beta1");
// branches as composer writes them.
func normalize(v string) string {
	if strings.HasPrefix(v, "dev-") {
		return v
	}
	if n, ok := strings.CutSuffix(v, ".x-dev"); ok {
		parts := strings.Split(n, ".")
		for len(parts) < 4 {
			parts = append(parts, "9999999")
		}
		return strings.Join(parts, ".") + "-dev"
	}
	m := tagVersion.FindStringSubmatch(v)
	if m == nil {
		return v
	}
	nums := []string{m[1], m[2], m[3], m[4]}
	for i := range nums {
		if nums[i] == "" {
			nums[i] = "0"
		}
	}
	out := strings.Join(nums, ".")
	if m[5] != "" {
		out += "-" + m[5]
	}
	return out
}

// upload stores a package version from its zip: composer.json at the
// root names it (and versions it, or ?version= does); no entry may lead
// out of the package.
func (f *Format) upload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	tmp, size, remove, err := w.SpillUpload(r, "composer", 0)
	if err != nil {
		return nil, err
	}
	defer remove()
	ms, err := format.ReadZip(ctx, tmp, size, format.ArchiveRules{What: "a package zip", Limits: format.ArchiveLimits{Member: maxComposerJSON},
		Want: func(name string) bool { return name == "composer.json" }})
	if err != nil {
		return nil, err
	}
	raw := format.First(ms)
	if raw == nil {
		return nil, format.BadRequest("the zip has no composer.json at its root")
	}
	var c struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	var doc map[string]any
	if err := format.DecodeJSON(raw, &doc, "composer.json"); err != nil {
		return nil, err
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil, format.BadRequest("composer.json is not a JSON object")
	}
	name := strings.ToLower(c.Name)
	if !packageName.MatchString(name) {
		return nil, format.BadRequest("composer.json's name %q is not vendor/package in lowercase letters, digits and -_.", c.Name)
	}
	version := c.Version
	if version == "" {
		version = r.Query.Get("version")
	}
	if !validVersion(version) {
		return nil, format.BadRequest("version %q is not a version composer reads (composer.json's \"version\", or ?version=)", version)
	}
	attrs, _ := json.Marshal(doc)
	vendor, pkg, _ := strings.Cut(name, "/")
	a, idx, err := w.Store(ctx, r, format.Upload{Repo: r.Repo, Path: name + "/" + version + "/" + vendor + "-" + pkg + "-" + version + ".zip",
		Package: name, Version: version, ContentType: "application/zip", Body: io.NewSectionReader(tmp, 0, size),
		Overwrite: format.OverwriteNever, Attrs: attrs, Decide: f.uploadModified(r.Repo.ID, name)})
	if err != nil {
		return nil, err
	}
	resp := format.JSON(http.StatusCreated, format.ViewArtifact(a, r.Repo.Name))
	format.SetIndex(resp.Header, idx)
	return resp, nil
}
