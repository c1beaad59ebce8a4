package crates

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"slices"

	"github.com/depot-registry/depot/shared/format"
)

// ThisRegistry, as a dependency's registry in a publish, names the
// registry published to: what an importer sets for a dependency on a
// crate it moves here too.
const ThisRegistry = "depot:this-registry"

// PublishRequest is the body cargo publish would send for a .crate (u32
// LE length, the publish JSON, u32 LE length, the .crate), made from the
// .crate alone: the Cargo.toml cargo normalised into it when packaging
// gives the JSON (name, version, dependencies with their requirements,
// features, kinds, targets, renames and registries, the features, links,
// description, rust-version). An importer (a migration from another
// registry) publishes a crate it has only the file of through it. ours
// reports whether a dependency's registry index is the one being moved
// here: such dependencies are this registry's (ThisRegistry).
func PublishRequest(ctx context.Context, crate io.ReaderAt, size int64, ours func(index string) bool) (io.Reader, int64, error) {
	raw, dir, err := readCrate(ctx, io.NewSectionReader(crate, 0, size), size, "", nil)
	if err != nil {
		return nil, 0, err
	}
	manifest, err := format.DecodeTOML(raw, "Cargo.toml")
	if err != nil {
		return nil, 0, err
	}
	m := publishFrom(manifest, ours)
	if m.Name == "" || m.Vers == "" {
		name, version, ok := splitDir(dir)
		if !ok {
			return nil, 0, format.BadRequest("the .crate's directory %q is not <name>-<version>", dir)
		}
		m.Name, m.Vers = name, version
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, 0, err
	}
	var head bytes.Buffer
	_ = binary.Write(&head, binary.LittleEndian, uint32(len(js)))
	head.Write(js)
	_ = binary.Write(&head, binary.LittleEndian, uint32(size))
	n := int64(head.Len()) + size
	return io.MultiReader(&head, io.NewSectionReader(crate, 0, size)), n, nil
}

// publishFrom is the publish JSON a normalised Cargo.toml stands for.
func publishFrom(m map[string]any, ours func(string) bool) publishMeta {
	pkg, _ := m["package"].(map[string]any)
	out := publishMeta{Name: format.Str(pkg["name"]), Vers: format.Str(pkg["version"]), Features: map[string][]string{}}
	opt := func(v any) *string {
		if s := format.Str(v); s != "" {
			return &s
		}
		return nil
	}
	out.Description, out.Links, out.RustVersion = opt(pkg["description"]), opt(pkg["links"]), opt(pkg["rust-version"])
	features, _ := m["features"].(map[string]any)
	for k, v := range features {
		out.Features[k] = format.Strs(v)
	}
	out.Deps = depsFrom(m, nil, ours)
	targets, _ := m["target"].(map[string]any)
	for _, cfg := range slices.Sorted(maps.Keys(targets)) {
		t, _ := targets[cfg].(map[string]any)
		out.Deps = append(out.Deps, depsFrom(t, &cfg, ours)...)
	}
	return out
}

// depsFrom are the publish records of a manifest's (or a target's)
// dependency tables.
func depsFrom(m map[string]any, target *string, ours func(string) bool) []publishDep {
	var out []publishDep
	eachDep(m, func(kind, key string, spec any) {
		d := publishDep{Name: key, VersionReq: "*", DefaultFeatures: true, Target: target, Kind: kind, Features: []string{}}
		switch v := spec.(type) {
		case string:
			d.VersionReq = v
		case map[string]any:
			if req := format.Str(v["version"]); req != "" {
				d.VersionReq = req
			}
			if fs := format.Strs(v["features"]); fs != nil {
				d.Features = fs
			}
			d.Optional = v["optional"] == true
			if df, ok := v["default-features"].(bool); ok {
				d.DefaultFeatures = df
			} else if df, ok := v["default_features"].(bool); ok {
				d.DefaultFeatures = df
			}
			if real := format.Str(v["package"]); real != "" {
				explicit := key
				d.Name, d.ExplicitNameInToml = real, &explicit
			}
			if index := format.Str(v["registry-index"]); index != "" {
				if ours != nil && ours(index) {
					index = ThisRegistry
				}
				d.Registry = &index
			}
		default:
			return
		}
		out = append(out, d)
	})
	return out
}
