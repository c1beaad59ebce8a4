package npm

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// CheckTarball reads a package tarball of size bytes through without unpacking it or
// holding it (format.ReadTar): it must be a gzip'd tar, with nothing
// after it, whose entries are files and directories that stay inside the
// package directory, within lim, with a package.json at the top of the
// package directory (npm strips the first path component on install). A
// failure to read r itself is returned as it is (not the client's fault).
func CheckTarball(r io.Reader, size int64, lim Limits) error {
	_, err := readTarball(context.Background(), r, size, lim, nil)
	return err
}

// readTarball is the one reading of a package tarball, for publishes
// (CheckTarball) and inspections: it returns the package.json, and
// gathers the files when files is given.
func readTarball(ctx context.Context, r io.Reader, size int64, lim Limits, files *format.FileList) ([]byte, error) {
	src := &errReader{r: r}
	ms, err := format.ReadTar(ctx, src, size, format.Gzip, format.ArchiveRules{What: "an npm package tarball",
		All: true, Exact: true, Limits: format.ArchiveLimits{Entries: lim.MaxEntries, Unpacked: lim.MaxUnpacked},
		Check: files.Check(func(e format.Entry) error {
			if !e.Regular && !e.Dir {
				return format.BadRequest("tarball entry %q is not a file or directory", e.Name)
			}
			return nil
		}),
		Want: func(name string) bool { return strings.Count(name, "/") == 1 && path.Base(name) == "package.json" }})
	if src.err != nil {
		return nil, src.err
	}
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, format.BadRequest("tarball has no package.json in its package directory")
	}
	return ms[0].Data, nil
}

// manifest is what is read of a package.json or a version manifest
// (the package.json npm publishes): each field on its own, so that one of
// an unexpected type is only missing, never an error.
type manifest struct {
	name, version, description, homepage string
	keywords                             []string // only when a list of strings
	licenses                             []string
	repository                           string
	deps                                 []format.Dependency
}

// readManifest reads a version manifest a publish has decoded and
// bounded already (ReadDocument).
func readManifest(raw []byte) manifest {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	return manifestFields(fields)
}

// manifestFields is the one reader of a package's manifest, for publishes
// (keywords) and inspections.
func manifestFields(fields map[string]json.RawMessage) manifest {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(fields[k], &s)
		return s
	}
	m := manifest{name: str("name"), version: str("version"), description: str("description"), homepage: str("homepage")}
	_ = json.Unmarshal(fields["keywords"], &m.keywords)
	// license is an SPDX expression; old packages wrote {"type": ...} or a
	// licenses list of those.
	var license struct{ Type string }
	if l := str("license"); l != "" {
		m.licenses = []string{l}
	} else if json.Unmarshal(fields["license"], &license) == nil && license.Type != "" {
		m.licenses = []string{license.Type}
	} else {
		var list []struct{ Type string }
		_ = json.Unmarshal(fields["licenses"], &list)
		for _, l := range list {
			if l.Type != "" {
				m.licenses = append(m.licenses, l.Type)
			}
		}
	}
	var repo struct{ URL string }
	if m.repository = str("repository"); m.repository == "" && json.Unmarshal(fields["repository"], &repo) == nil {
		m.repository = repo.URL
	}
	var optional map[string]string
	_ = json.Unmarshal(fields["optionalDependencies"], &optional)
	var peerMeta map[string]struct{ Optional bool }
	_ = json.Unmarshal(fields["peerDependenciesMeta"], &peerMeta)
	for _, kind := range [][2]string{{"dependencies", "runtime"}, {"devDependencies", "dev"}, {"peerDependencies", "peer"},
		{"optionalDependencies", "optional"}} {
		var deps map[string]string
		_ = json.Unmarshal(fields[kind[0]], &deps)
		for _, n := range slices.Sorted(maps.Keys(deps)) {
			d := format.Dependency{Name: n, Constraint: deps[n], Kind: kind[1], Ecosystem: FormatName}
			switch _, opt := optional[n]; {
			case kind[0] == "dependencies" && opt:
				continue // npm repeats optional dependencies here: they are listed once, as optional
			case kind[0] == "peerDependencies":
				d.Optional = peerMeta[n].Optional
			case kind[0] == "optionalDependencies":
				d.Optional = true
			}
			m.deps = append(m.deps, d)
		}
	}
	return m
}

// info is the manifest as the inspector answers it.
func (m manifest) info() format.PackageInfo {
	return format.PackageInfo{Format: FormatName, Name: m.name, Version: m.version, Summary: m.description, Licenses: m.licenses,
		Homepage: m.homepage, Repository: m.repository, Keywords: m.keywords, Dependencies: m.deps}
}
