package composer

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
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
	zp, err := readPackage(ctx, tmp, size, r.Query.Get("version"))
	if err != nil {
		return nil, err
	}
	name, version := zp.name, zp.version
	attrs, _ := json.Marshal(zp.doc)
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

// zipPackage is a package zip as read: its composer.json, and the name and
// version it is stored under.
type zipPackage struct {
	doc           map[string]any
	name, version string
	info          format.PackageInfo
}

// readPackage reads a package zip: composer.json at its root names the
// package (lowercase vendor/name) and versions it, or else version does
// (an upload's ?version=, a stored zip's path). Uploads and inspections
// read a package through it alone.
func readPackage(ctx context.Context, zip io.ReaderAt, size int64, version string) (zipPackage, error) {
	files := &format.FileList{}
	ms, err := format.ReadZip(ctx, zip, size, format.ArchiveRules{What: "a package zip", Limits: format.ArchiveLimits{Member: maxComposerJSON},
		Check: files.Check(nil), Want: func(name string) bool { return name == "composer.json" }})
	if err != nil {
		return zipPackage{}, err
	}
	raw := format.First(ms)
	if raw == nil {
		return zipPackage{}, format.BadRequest("the zip has no composer.json at its root")
	}
	var c struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	var doc map[string]any
	if err := format.DecodeJSON(raw, &doc, "composer.json"); err != nil {
		return zipPackage{}, err
	}
	if json.Unmarshal(raw, &c) != nil {
		return zipPackage{}, format.BadRequest("composer.json is not a JSON object")
	}
	name := strings.ToLower(c.Name)
	if !packageName.MatchString(name) {
		return zipPackage{}, format.BadRequest("composer.json's name %q is not vendor/package in lowercase letters, digits and -_.", c.Name)
	}
	if c.Version != "" {
		version = c.Version
	}
	if !validVersion(version) {
		return zipPackage{}, format.BadRequest("version %q is not a version composer reads (composer.json's \"version\", or ?version=)", version)
	}
	p := zipPackage{doc: doc, name: name, version: version, info: packageInfo(doc)}
	p.info.Name, p.info.Version = name, version
	files.Fill(&p.info)
	return p, nil
}

// packageInfo is what a composer.json says of its package; requirements
// are sorted by name (a JSON object has no order to keep).
func packageInfo(doc map[string]any) format.PackageInfo {
	info := format.PackageInfo{Format: Name, Summary: format.Str(doc["description"]), Homepage: format.Str(doc["homepage"]),
		Licenses: format.Strs(doc["license"]), Keywords: format.Strs(doc["keywords"])}
	if support, ok := doc["support"].(map[string]any); ok {
		info.Repository = format.Str(support["source"])
	}
	for _, section := range [][2]string{{"require", "runtime"}, {"require-dev", "dev"}} {
		reqs, _ := doc[section[0]].(map[string]any)
		for _, n := range slices.Sorted(maps.Keys(reqs)) {
			eco := Name
			if platform(n) {
				eco = "platform"
			}
			info.Dependencies = append(info.Dependencies, format.Dependency{Name: n, Constraint: format.Str(reqs[n]), Kind: section[1], Ecosystem: eco})
		}
	}
	return info
}

// platform reports whether a requirement names what composer finds on
// the machine rather than in a repository: php, its extensions and
// libraries, composer itself.
func platform(name string) bool {
	n := strings.ToLower(name)
	return n == "php" || n == "hhvm" || strings.HasPrefix(n, "php-") || strings.HasPrefix(n, "ext-") || strings.HasPrefix(n, "lib-") ||
		n == "composer" || strings.HasPrefix(n, "composer-")
}
