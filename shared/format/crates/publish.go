package crates

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

const (
	maxMeta    = 1 << 20 // the publish JSON
	crateIOURL = "https://github.com/rust-lang/crates.io-index"
)

// publishMeta is the JSON cargo sends with a publish.
type publishMeta struct {
	Name        string              `json:"name"`
	Vers        string              `json:"vers"`
	Deps        []publishDep        `json:"deps"`
	Features    map[string][]string `json:"features"`
	Description *string             `json:"description"`
	Links       *string             `json:"links"`
	RustVersion *string             `json:"rust_version"`
}

// publishDep is a dependency in cargo's publish JSON.
type publishDep struct {
	Name               string   `json:"name"`
	VersionReq         string   `json:"version_req"`
	Features           []string `json:"features"`
	Optional           bool     `json:"optional"`
	DefaultFeatures    bool     `json:"default_features"`
	Target             *string  `json:"target"`
	Kind               string   `json:"kind"`
	Registry           *string  `json:"registry"`
	ExplicitNameInToml *string  `json:"explicit_name_in_toml"`
}

// readPublish splits cargo's publish body: u32 LE length, the JSON, u32
// LE length, the .crate (returned unread, exactly that long).
func readPublish(body io.Reader, maxCrate int64) (publishMeta, io.Reader, int64, error) {
	var m publishMeta
	n, err := readLen(body)
	if err != nil || n > maxMeta {
		return m, nil, 0, format.BadRequest("a publish body starts with the length of its JSON (at most %d bytes)", maxMeta)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(body, raw); err != nil {
		return m, nil, 0, format.BadRequest("the publish body ends inside its JSON")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, nil, 0, format.BadRequest("the publish JSON: %v", err)
	}
	size, err := readLen(body)
	if err != nil {
		return m, nil, 0, format.BadRequest("the publish body lacks the .crate's length")
	}
	if maxCrate > 0 && int64(size) > maxCrate {
		return m, nil, 0, format.Errorf(apierr.PayloadTooLarge, "the .crate is %d bytes; the limit is %d", size, maxCrate)
	}
	return m, io.LimitReader(body, int64(size)), int64(size), nil
}

func readLen(r io.Reader) (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// validName: ASCII letters, digits, - and _, a letter first, at most 64.
func validName(n string) bool {
	if n == "" || len(n) > 64 || !(n[0] >= 'a' && n[0] <= 'z' || n[0] >= 'A' && n[0] <= 'Z') {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validVersion: semver with all three numbers.
func validVersion(v string) bool {
	core, _, _ := strings.Cut(strings.SplitN(v, "+", 2)[0], "-")
	return semver.IsValid("v"+v) && strings.Count(core, ".") == 2
}

func (f *Format) publish(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	body, err := format.BodyReader(r, 1<<62)
	if err != nil {
		return nil, err
	}
	m, crate, size, err := readPublish(body, w.MaxUpload)
	if err != nil {
		return nil, err
	}
	if !validName(m.Name) {
		return nil, format.BadRequest("%q is not a crate name: ASCII letters, digits, - and _, starting with a letter, at most 64", m.Name)
	}
	if !validVersion(m.Vers) {
		return nil, format.BadRequest("%q is not a semver version (MAJOR.MINOR.PATCH)", m.Vers)
	}
	info, err := w.PutBlob(ctx, &sized{crate, size}, blob.Checksums{})
	if err != nil {
		return nil, err
	}
	if info.Size != size {
		return nil, format.BadRequest("the .crate is %d bytes, the body said %d", info.Size, size)
	}
	if err := checkCrate(ctx, w.Blobs, info.Digest, m.Name+"-"+m.Vers, info.Size); err != nil {
		return nil, err
	}
	line := indexLine(m, info.Checksums.SHA256, base(r))
	attrs, _ := json.Marshal(line)
	u := format.Upload{Repo: r.Repo, Path: artifactPath(m.Name, m.Vers), Package: m.Name, Version: m.Vers,
		ContentType: "application/x-tar", Overwrite: format.OverwriteNever, Attrs: attrs,
		Decide: func(tx *meta.Tx) ([]meta.KVOp, error) {
			var ops []meta.KVOp
			if raw, ok := tx.KV(r.Repo.ID, nameKey(m.Name)); ok {
				var have string
				if json.Unmarshal(raw, &have) == nil && have != m.Name {
					return nil, format.BadRequest("crate %s exists as %s: names differing only in case or in - and _ are one crate", m.Name, have)
				}
			} else {
				ops = append(ops, format.KVSet(nameKey(m.Name), m.Name), format.KVSet(ownersKey(m.Name), []string{r.Principal.Name()}))
			}
			vs, err := f.versions(tx, r.Repo, m.Name)
			for _, v := range vs {
				if semver.Compare("v"+v.art.Version, "v"+m.Vers) == 0 {
					return nil, format.Conflict("%s %s is already published (as %s): a version cannot be published twice", m.Name, m.Vers, v.art.Version)
				}
			}
			return ops, err
		}}
	_, idx, err := w.Record(ctx, r, u, info)
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	format.SetIndex(resp.Header, idx)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body = []byte(`{"warnings":{"invalid_categories":[],"invalid_badges":[],"other":[]}}`)
	return resp, nil
}

// sized tells PutBlob the body's length before it is read.
type sized struct {
	io.Reader
	n int64
}

func (s *sized) Size() int64 { return s.n }

// checkCrate reads the stored .crate: a gzip'd tar whose every entry is
// under dir/ (no way out of it), with dir/Cargo.toml.
func checkCrate(ctx context.Context, store blob.Store, digest, dir string, size int64) error {
	file, err := store.Open(ctx, digest)
	if err != nil {
		return err
	}
	defer file.Close()
	_, _, err = readCrate(ctx, file, size, dir, nil)
	return err
}

// readCrate is the one reading of a .crate, for publishes (checkCrate)
// and inspections: it returns dir/Cargo.toml and the directory (dir, or
// when dir is "" the first entry's), and gathers the files when files
// is given.
func readCrate(ctx context.Context, crate io.Reader, size int64, dir string, files *format.FileList) ([]byte, string, error) {
	ms, err := format.ReadTar(ctx, crate, size, format.Gzip, format.ArchiveRules{What: "a .crate", All: true,
		Check: files.Check(func(e format.Entry) error {
			if dir == "" {
				dir, _, _ = strings.Cut(e.Name, "/")
			}
			if clean := path.Clean(e.Name); clean != e.Name || !strings.HasPrefix(e.Name, dir+"/") && !(e.Dir && e.Name == dir) {
				return format.BadRequest("the .crate holds %s, outside %s/", e.Name, dir)
			}
			return nil
		}),
		Want: func(name string) bool { return name == dir+"/Cargo.toml" }})
	if err != nil {
		return nil, dir, err
	}
	if len(ms) == 0 {
		return nil, dir, format.BadRequest("the .crate lacks %s/Cargo.toml", dir)
	}
	return ms[0].Data, dir, nil
}

// indexLine is the index's record of a publish; api is this registry's
// URL, whose own crates the index names with a null registry.
func indexLine(m publishMeta, cksum, api string) map[string]any {
	deps := []map[string]any{}
	for _, d := range m.Deps {
		dep := map[string]any{"name": d.Name, "req": d.VersionReq, "features": d.Features, "optional": d.Optional,
			"default_features": d.DefaultFeatures, "target": d.Target, "kind": d.Kind, "registry": d.Registry}
		if d.Features == nil {
			dep["features"] = []string{}
		}
		if d.Kind == "" {
			dep["kind"] = "normal"
		}
		switch {
		case d.Registry == nil:
			dep["registry"] = crateIOURL // null in a publish is crates.io
		case *d.Registry == ThisRegistry:
			dep["registry"] = nil
		case strings.Contains(*d.Registry, strings.TrimPrefix(strings.TrimPrefix(api, "https://"), "http://")+"/index"):
			dep["registry"] = nil // this registry
		}
		if d.ExplicitNameInToml != nil {
			dep["name"], dep["package"] = *d.ExplicitNameInToml, d.Name
		}
		deps = append(deps, dep)
	}
	features, features2 := map[string][]string{}, map[string][]string{}
	for k, v := range m.Features {
		newSyntax := false
		for _, x := range v {
			newSyntax = newSyntax || strings.HasPrefix(x, "dep:") || strings.Contains(x, "?/")
		}
		if newSyntax {
			features2[k] = v
		} else {
			features[k] = v
		}
	}
	line := map[string]any{"name": m.Name, "vers": m.Vers, "deps": deps, "cksum": cksum, "features": features,
		"yanked": false, "links": m.Links, "v": 1}
	if len(features2) > 0 {
		line["features2"], line["v"] = features2, 2
	}
	if m.RustVersion != nil {
		line["rust_version"] = *m.RustVersion
	}
	if m.Description != nil {
		line["description"] = *m.Description // not cargo's: for search; cargo ignores unknown keys
	}
	return line
}
