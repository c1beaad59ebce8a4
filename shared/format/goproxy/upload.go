package goproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// The go command's own limits on what it downloads.
const (
	maxZip = modzip.MaxZipFile
	maxMod = 512 << 10 // the go command takes 16 MiB (modzip.MaxGoMod); real ones are a few KiB
)

// upload stores a module version from its zip: every entry under
// "<module>@<version>/", as the go command makes and checks them. The
// zip's go.mod (or, for a module without one, "module <path>") is stored
// as the version's .mod. A version already stored is refused (409): its
// files are pinned by every go.sum that names it.
func (f *Format) upload(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	tmp, n, remove, err := w.SpillUpload(r, "go", maxZip)
	if err != nil {
		return nil, err
	}
	defer remove()
	mv, mod, err := check(ctx, tmp, n)
	if err != nil {
		return nil, err
	}
	zipInfo, err := w.PutBlob(ctx, io.NewSectionReader(tmp, 0, n), blob.Checksums{})
	if err != nil {
		return nil, err
	}
	modInfo, err := w.PutBlob(ctx, bytes.NewReader(mod), blob.Checksums{})
	if err != nil {
		return nil, err
	}
	zipPath, modPath := artifactPath(mv.Path, mv.Version, "zip"), artifactPath(mv.Path, mv.Version, "mod")
	idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		if _, err := tx.ArtifactByPath(r.Repo.ID, zipPath); err == nil {
			return nil, format.Conflict("%s@%s is already in repository %s; a module version never changes", mv.Path, mv.Version, r.Repo.Name)
		} else if !errors.Is(err, meta.ErrNotFound) {
			return nil, err
		}
		file := func(p, ct string, info blob.Info) format.Placed {
			return format.Placed{Upload: format.Upload{Path: p, Package: mv.Path, Version: mv.Version, ContentType: ct}, Info: info}
		}
		return w.ChangeCmd(r, r.Repo, nil, []format.Placed{file(zipPath, "application/zip", zipInfo), format.Quiet(file(modPath, "text/plain; charset=utf-8", modInfo))}, nil)
	})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusCreated)
	format.SetIndex(resp.Header, idx)
	esc, _ := module.EscapePath(mv.Path)
	escVer, _ := module.EscapeVersion(mv.Version)
	resp.Header.Set("Location", strings.TrimRight(r.BaseURL, "/")+r.Prefix+"/"+r.Repo.Name+"/"+esc+"/@v/"+escVer+".info")
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, _ = json.Marshal(map[string]string{"module": mv.Path, "version": mv.Version})
	return resp, nil
}

// check reads the module and version from a zip's first entry and checks
// the whole zip as the go command does (paths, case collisions, sizes,
// go.mod where it must be); it returns the go.mod to serve.
func check(ctx context.Context, f *os.File, size int64) (module.Version, []byte, error) {
	mv, mod, err := readModule(ctx, f, size, nil)
	if err != nil {
		return mv, nil, err
	}
	if _, err := modzip.CheckZip(mv, f.Name()); err != nil {
		return mv, nil, format.BadRequest("not a valid module zip for %s@%s: %v", mv.Path, mv.Version, err)
	}
	mod, _, err = parseGoMod(mv, mod)
	return mv, mod, err
}

// readModule reads a module zip: the module and version from its first
// entry (a module path holds slashes but no "@": the first "@" ends it,
// the next slash the version), and the root go.mod, nil when there is
// none. files, when given, gathers the zip's files.
func readModule(ctx context.Context, zip io.ReaderAt, size int64, files *format.FileList) (module.Version, []byte, error) {
	var mv module.Version
	var first, prefix string
	ms, err := format.ReadZip(ctx, zip, size, format.ArchiveRules{What: "a module zip", Limits: format.ArchiveLimits{Member: maxMod},
		Check: files.Check(func(e format.Entry) error {
			if first == "" {
				first = e.Name
				if at := strings.IndexByte(first, '@'); at > 0 {
					if end := strings.IndexByte(first[at:], '/'); end > 0 {
						prefix = first[:at+end]
					}
				}
			}
			return nil
		}),
		Want: func(name string) bool { return prefix != "" && name == prefix+"/go.mod" }})
	if err != nil {
		return mv, nil, err
	}
	if first == "" {
		return mv, nil, format.BadRequest("the zip is empty: a module zip holds <module>@<version>/...")
	}
	if prefix == "" {
		return mv, nil, format.BadRequest("the zip's entries must start with <module>@<version>/ (as the go command makes them); the first is %q", first)
	}
	at := strings.IndexByte(prefix, '@')
	mv = module.Version{Path: prefix[:at], Version: prefix[at+1:]}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return mv, nil, format.BadRequest("%v", err)
	}
	return mv, format.First(ms), nil
}

// parseGoMod is the one reading of a module's go.mod (nil: the zip has
// none), for uploads and inspections: only a +incompatible version (a v2+
// tag of a repository that predates modules) may lack one, and gets the
// go.mod the go command would make for it; one that is there must say the
// module's path. It returns the go.mod to serve, and the module's
// requirements as the inspector answers them.
func parseGoMod(mv module.Version, mod []byte) ([]byte, format.PackageInfo, error) {
	info := format.PackageInfo{Format: Name, Name: mv.Path, Version: mv.Version}
	if mod == nil && strings.HasSuffix(mv.Version, "+incompatible") {
		mod = []byte(fmt.Sprintf("module %s\n", modfile.AutoQuote(mv.Path)))
	} else if mod != nil {
		mf, err := modfile.ParseLax("go.mod", mod, nil)
		if err != nil {
			return nil, info, format.BadRequest("go.mod: %v", err)
		}
		if mf.Module == nil || mf.Module.Mod.Path != mv.Path {
			return nil, info, format.BadRequest("go.mod does not say module %s", mv.Path)
		}
		for _, r := range mf.Require {
			kind := "runtime"
			if r.Indirect {
				kind = "indirect"
			}
			info.Dependencies = append(info.Dependencies, format.Dependency{Name: r.Mod.Path, Constraint: r.Mod.Version, Kind: kind, Ecosystem: Name})
		}
	}
	if mod == nil {
		return nil, info, format.BadRequest("the zip has no %s@%s/go.mod", mv.Path, mv.Version)
	}
	return mod, info, nil
}
