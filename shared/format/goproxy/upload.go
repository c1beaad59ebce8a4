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
	var mv module.Version
	// A module path holds slashes but no "@": in the first entry, the
	// first "@" ends it, the next slash the version.
	var first, prefix string
	ms, err := format.ReadZip(ctx, f, size, format.ArchiveRules{What: "a module zip", Limits: format.ArchiveLimits{Member: maxMod},
		Check: func(e format.Entry) error {
			if first == "" {
				first = e.Name
				if at := strings.IndexByte(first, '@'); at > 0 {
					if end := strings.IndexByte(first[at:], '/'); end > 0 {
						prefix = first[:at+end]
					}
				}
			}
			return nil
		},
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
	if _, err := modzip.CheckZip(mv, f.Name()); err != nil {
		return mv, nil, format.BadRequest("not a valid module zip for %s@%s: %v", mv.Path, mv.Version, err)
	}
	// A module has its go.mod; only a +incompatible version (a v2+ tag of
	// a repository that predates modules) may lack one, and gets the
	// go.mod the go command would make for it.
	var mod []byte
	if strings.HasSuffix(mv.Version, "+incompatible") {
		mod = []byte(fmt.Sprintf("module %s\n", modfile.AutoQuote(mv.Path)))
	}
	if len(ms) > 0 {
		mod = ms[0].Data
		mf, err := modfile.ParseLax("go.mod", mod, nil)
		if err != nil {
			return mv, nil, format.BadRequest("go.mod: %v", err)
		}
		if mf.Module == nil || mf.Module.Mod.Path != mv.Path {
			return mv, nil, format.BadRequest("go.mod does not say module %s", mv.Path)
		}
	}
	if mod == nil {
		return mv, nil, format.BadRequest("the zip has no %s/go.mod", prefix)
	}
	return mv, mod, nil
}
