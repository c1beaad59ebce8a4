package crates

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// Inspect reads a stored .crate with the reader a publish uses
// (readCrate) and its Cargo.toml (DecodeTOML): the package's name,
// version, description, licence, homepage, repository and keywords, its
// dependencies, dev-dependencies and build-dependencies (requirements
// verbatim, optional ones marked, a renamed one under its real name, a
// target's under its cfg as the condition), and the files. Name and
// version missing from Cargo.toml are the crate directory's.
//
// A publish keeps to what cargo's publish JSON says (the index is built
// from it) and only checks the .crate through readCrate: Cargo.toml is
// read here, for what the index does not carry.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	files := &format.FileList{}
	raw, dir, err := readCrate(ctx, io.NewSectionReader(s.File, 0, s.Size), s.Size, "", files)
	if err != nil {
		return format.PackageInfo{}, err
	}
	manifest, err := format.DecodeTOML(raw, "Cargo.toml")
	if err != nil {
		return format.PackageInfo{}, err
	}
	info := cargoInfo(manifest)
	if info.Name == "" || info.Version == "" {
		name, version, ok := splitDir(dir)
		if !ok {
			return format.PackageInfo{}, format.BadRequest("the .crate's directory %q is not <name>-<version>", dir)
		}
		info.Name, info.Version = name, version
	}
	info.Size = s.Size
	files.Fill(&info)
	return info.Bounded(), nil
}

// splitDir splits a .crate's directory, <name>-<version>, at the first
// dash after which a version follows (names hold dashes, versions too).
func splitDir(dir string) (name, version string, ok bool) {
	for i := 0; i < len(dir); i++ {
		if dir[i] == '-' && validName(dir[:i]) && validVersion(dir[i+1:]) {
			return dir[:i], dir[i+1:], true
		}
	}
	return "", "", false
}

// cargoInfo is what a Cargo.toml says of its crate.
func cargoInfo(m map[string]any) format.PackageInfo {
	pkg, _ := m["package"].(map[string]any)
	info := format.PackageInfo{Format: Name, Name: format.Str(pkg["name"]), Version: format.Str(pkg["version"]),
		Summary: strings.TrimSpace(format.Str(pkg["description"])), Homepage: format.Str(pkg["homepage"]),
		Repository: format.Str(pkg["repository"]), Keywords: format.Strs(pkg["keywords"])}
	if l := format.Str(pkg["license"]); l != "" {
		info.Licenses = []string{l}
	}
	info.Dependencies = cargoDeps(m, "")
	targets, _ := m["target"].(map[string]any)
	for _, cfg := range slices.Sorted(maps.Keys(targets)) {
		t, _ := targets[cfg].(map[string]any)
		info.Dependencies = append(info.Dependencies, cargoDeps(t, cfg)...)
	}
	return info
}

// cargoDeps are the dependency tables of a manifest or of a target,
// each sorted by name (a TOML table has no order to keep).
func cargoDeps(m map[string]any, cfg string) []format.Dependency {
	var out []format.Dependency
	eachDep(m, func(kind, key string, spec any) {
		if kind == "normal" {
			kind = "runtime" // the package information's word
		}
		d := format.Dependency{Name: key, Kind: kind, Condition: cfg, Ecosystem: Name}
		switch v := spec.(type) {
		case string:
			d.Constraint = v
		case map[string]any:
			d.Constraint = format.Str(v["version"])
			d.Optional = v["optional"] == true
			if real := format.Str(v["package"]); real != "" {
				d.Name = real
			}
		default:
			return
		}
		out = append(out, d)
	})
	return out
}

// eachDep calls fn with each dependency of a manifest's (or a target's)
// tables (dependencies, dev-dependencies, build-dependencies, also
// spelled with _), table by table, each sorted by name; kind is cargo's
// (normal, dev, build).
func eachDep(m map[string]any, fn func(kind, key string, spec any)) {
	for _, table := range [][3]string{{"dependencies", "", "normal"}, {"dev-dependencies", "dev_dependencies", "dev"},
		{"build-dependencies", "build_dependencies", "build"}} {
		deps, _ := m[table[0]].(map[string]any)
		if deps == nil {
			deps, _ = m[table[1]].(map[string]any)
		}
		for _, key := range slices.Sorted(maps.Keys(deps)) {
			fn(table[2], key, deps[key])
		}
	}
}
