package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/origin/fsm"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/fs"
	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/format/maven"
	"github.com/depot-registry/depot/shared/format/npm"
	"github.com/depot-registry/depot/shared/format/pypi"
	"github.com/depot-registry/depot/shared/meta"
)

// The generator fills the data directory of a stopped origin through the
// same path every write takes: commands committed to a one-node raft log
// (built as the origin builds it, from the directory's node id and
// cluster key) and applied by the origin's state machine. Each command
// carries many records (an ArtifactsApply of a thousand artifacts), so a
// million artifacts take a few thousand log entries. At the end a raft
// snapshot is taken, as a running origin does every few thousand entries,
// so that a restart does not replay the whole log.

// genConfig sizes the data set.
type genConfig struct {
	dataDir, raftAddr string
	artifacts, repos  int
	batch             int // artifacts per command
	password          string
	log               *slog.Logger
}

// formats are the repository formats generated, in rotation.
var formats = []string{"generic", "npm", "pypi", "maven", "docker"}

// words make package names and descriptions: searches for one word match
// a few percent of the packages.
var words = []string{"core", "util", "http", "json", "parser", "client", "server", "cache", "auth", "log",
	"config", "test", "stream", "crypto", "image", "queue", "metrics", "cli", "sql", "grpc",
	"yaml", "xml", "csv", "math", "time", "date", "net", "dns", "mail", "file",
	"path", "zip", "tar", "diff", "lint", "build", "deploy", "proxy", "retry", "pool"}

// repoPlan is one generated repository.
type repoPlan struct {
	Index     int    `json:"index"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Format    string `json:"format"`
	Public    bool   `json:"public"`
	Artifacts int    `json:"artifacts"`
	// Granted says how the bench user reads a private repository:
	// "user" (a direct grant), "group" (through a group) or "".
	Granted string `json:"granted,omitempty"`
}

// fixture is what the load generator needs to know of the data.
type fixture struct {
	Repos        []repoPlan `json:"repos"`
	Artifacts    int        `json:"artifacts"`
	User         string     `json:"user"`
	UserPassword string     `json:"user_password"`
	// Per format: the largest repository and a typical one.
	Large   map[string]string `json:"large"`
	Typical map[string]string `json:"typical"`
	// A package of the large generic repository, a file of it and that
	// file's artifact id (all with real blobs).
	Package    string `json:"package"`
	GenericGet string `json:"generic_get"`
	ArtifactID string `json:"artifact_id"`
	// UniqueSHA256 is the SHA-256 of a file stored once.
	UniqueSHA256 string `json:"unique_sha256"`
	Generated    string `json:"generated"`
}

// plan lays out repositories: one large repository per format holds a
// fifth of all artifacts between them (the rest are spread evenly), a
// quarter of the repositories are private, and the bench user is granted
// half of the private ones (directly or through a group).
func plan(artifacts, repos int) []repoPlan {
	out := make([]repoPlan, repos)
	large := min(len(formats), repos)
	perLarge := artifacts / 5 / large
	if repos == large {
		perLarge = artifacts / repos
	}
	rest := artifacts - perLarge*large
	for i := range out {
		p := &out[i]
		p.Index, p.Format = i, formats[i%len(formats)]
		p.ID = auth.NewID()
		p.Name = fmt.Sprintf("%s-%04d", p.Format, i)
		p.Public = i%4 != 2
		switch {
		case i < large:
			p.Artifacts = perLarge
			// npm, maven and docker's large repositories are private, so
			// the user's view of them goes through grants.
			p.Public = p.Format == "generic" || p.Format == "pypi"
		default:
			n := repos - large
			p.Artifacts = rest / n
			if i-large < rest%n {
				p.Artifacts++
			}
		}
		if !p.Public {
			switch (i / 4) % 4 {
			case 0:
				p.Granted = "user"
			case 1:
				p.Granted = "group"
			}
			if i < large {
				p.Granted = map[string]string{"npm": "group", "maven": "user", "docker": "user"}[p.Format]
			}
		}
	}
	return out
}

// blobs are the few real files many artifacts share.
type blobs struct {
	generic                   []blob.Info
	npmTgz                    map[string]blob.Info // by the package's first word: its description says it
	unique                    blob.Info            // one file's bytes, stored once (checksum search)
	sdist, wheel, wheelMeta   blob.Info
	jar, pom                  blob.Info
	config, layer, manifest   blob.Info
	manifestMedia, configType string
}

func putBlob(ctx context.Context, store *fs.FS, data []byte) (blob.Info, error) {
	return store.Put(ctx, bytes.NewReader(data), blob.PutOptions{})
}

func makeBlobs(ctx context.Context, dir string) (*blobs, error) {
	store, err := fs.New(filepath.Join(dir, "blobs"))
	if err != nil {
		return nil, err
	}
	b := &blobs{manifestMedia: "application/vnd.oci.image.manifest.v1+json", configType: "application/vnd.oci.image.config.v1+json"}
	for i := range 16 {
		data := bytes.Repeat([]byte(fmt.Sprintf("generic file %02d\n", i)), 64*(i+1))
		info, err := putBlob(ctx, store, data)
		if err != nil {
			return nil, err
		}
		b.generic = append(b.generic, info)
	}
	// The npm tarballs say what the package is about, as real ones do:
	// the search indexer reads their package.json.
	b.npmTgz = map[string]blob.Info{}
	for _, w := range words {
		manifest, _ := json.Marshal(map[string]any{"name": "bench-" + w, "version": "1.0.0", "description": npmDescription(w),
			"license": "MIT", "keywords": []string{w, "bench"}})
		tgz, err := tarGz(map[string]string{"package/package.json": string(manifest), "package/index.js": "module.exports = 1\n"})
		if err != nil {
			return nil, err
		}
		if b.npmTgz[w], err = putBlob(ctx, store, tgz); err != nil {
			return nil, err
		}
	}
	if b.unique, err = putBlob(ctx, store, []byte("the one file with these bytes\n")); err != nil {
		return nil, err
	}
	sdist, err := tarGz(map[string]string{"bench-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: bench\nVersion: 1.0\n"})
	if err != nil {
		return nil, err
	}
	if b.sdist, err = putBlob(ctx, store, sdist); err != nil {
		return nil, err
	}
	metadata := "Metadata-Version: 2.1\nName: bench\nVersion: 1.0\nSummary: a bench project\n"
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range map[string]string{"bench/__init__.py": "", "bench-1.0.dist-info/METADATA": metadata} {
		w, err := zw.Create(name)
		if err != nil {
			return nil, err
		}
		io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.wheel, err = putBlob(ctx, store, zb.Bytes()); err != nil {
		return nil, err
	}
	if b.wheelMeta, err = putBlob(ctx, store, []byte(metadata)); err != nil {
		return nil, err
	}
	if b.jar, err = putBlob(ctx, store, zb.Bytes()[:len(zb.Bytes())/2]); err != nil {
		return nil, err
	}
	if b.pom, err = putBlob(ctx, store, []byte("<project><modelVersion>4.0.0</modelVersion></project>\n")); err != nil {
		return nil, err
	}
	if b.config, err = putBlob(ctx, store, []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)); err != nil {
		return nil, err
	}
	layer, err := tarGz(map[string]string{"etc/bench": "bench\n"})
	if err != nil {
		return nil, err
	}
	if b.layer, err = putBlob(ctx, store, layer); err != nil {
		return nil, err
	}
	mf, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": b.manifestMedia,
		"config": map[string]any{"mediaType": b.configType, "digest": b.config.Digest, "size": b.config.Size},
		"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": b.layer.Digest, "size": b.layer.Size}}})
	if b.manifest, err = putBlob(ctx, store, mf); err != nil {
		return nil, err
	}
	return b, nil
}

func tarGz(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// committer commits commands through the raft node, several in flight.
type committer struct {
	node    *raftnode.Node
	pending []pendingApply
	applied int
}

type pendingApply interface {
	Error() error
	Response() any
}

func (c *committer) apply(cmd meta.Command) error {
	data, err := meta.Encode(cmd)
	if err != nil {
		return err
	}
	c.pending = append(c.pending, c.node.Raft.Apply(data, 5*time.Minute))
	if len(c.pending) >= 16 {
		return c.flush()
	}
	return nil
}

func (c *committer) flush() error {
	for _, f := range c.pending {
		if err := f.Error(); err != nil {
			return err
		}
		if err, ok := f.Response().(error); ok && err != nil {
			return fmt.Errorf("command refused: %w", err)
		}
		c.applied++
	}
	c.pending = c.pending[:0]
	return nil
}

// generate fills cfg.dataDir and returns the fixture.
func generate(ctx context.Context, cfg genConfig) (*fixture, error) {
	start := time.Now()
	nodeID, err := os.ReadFile(filepath.Join(cfg.dataDir, "node-id"))
	if err != nil {
		return nil, fmt.Errorf("the data directory must have been started once by depot origin: %w", err)
	}
	rawKey, err := os.ReadFile(filepath.Join(cfg.dataDir, "cluster-key"))
	if err != nil {
		return nil, err
	}
	key, err := peerauth.ParseKey(strings.TrimSpace(string(rawKey)))
	if err != nil {
		return nil, err
	}
	b, err := makeBlobs(ctx, cfg.dataDir)
	if err != nil {
		return nil, err
	}
	store, err := meta.Open(filepath.Join(cfg.dataDir, "meta.db"))
	if err != nil {
		return nil, err
	}
	defer store.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	node, err := raftnode.New(raftnode.Config{NodeID: strings.TrimSpace(string(nodeID)), BindAddr: cfg.raftAddr,
		Dir: filepath.Join(cfg.dataDir, "raft"), Bootstrap: true, Key: key, Logger: quiet}, fsm.New(store))
	if err != nil {
		return nil, err
	}
	defer node.Shutdown()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := node.WaitLeader(wctx); err != nil {
		return nil, err
	}
	c := &committer{node: node}
	g := &gen{cfg: cfg, b: b, c: c, now: time.Now().UTC().Add(-24 * time.Hour)}
	fx, err := g.run()
	if err != nil {
		return nil, err
	}
	if err := c.flush(); err != nil {
		return nil, err
	}
	cfg.log.Info("generated", "artifacts", fx.Artifacts, "repos", len(fx.Repos), "commands", c.applied,
		"seconds", time.Since(start).Seconds())
	snap := time.Now()
	if err := node.Raft.Snapshot().Error(); err != nil {
		return nil, fmt.Errorf("raft snapshot: %w", err)
	}
	cfg.log.Info("raft snapshot taken", "seconds", time.Since(snap).Seconds())
	return fx, nil
}

type gen struct {
	cfg     genConfig
	b       *blobs
	c       *committer
	now     time.Time
	seq     int // artifacts so far: timestamps and progress
	userID  string
	groupID string
	users   []string // ids; users[0] is the bench user
	groups  []string // ids; groups[0] holds the bench user
	firstID string   // the first artifact of the large generic repository
	// uniqueSHA256 is the checksum of the one file stored once.
	uniqueSHA256 string
	adminName    string
}

func (g *gen) at() time.Time { return g.now.Add(time.Duration(g.seq) * time.Millisecond) }

func (g *gen) run() (*fixture, error) {
	fx := &fixture{User: "bench-user", UserPassword: g.cfg.password, Large: map[string]string{}, Typical: map[string]string{},
		Generated: time.Now().UTC().Format(time.RFC3339)}
	if err := g.people(fx); err != nil {
		return nil, err
	}
	fx.Repos = plan(g.cfg.artifacts, g.cfg.repos)
	for i, p := range fx.Repos {
		if _, ok := fx.Large[p.Format]; !ok {
			fx.Large[p.Format] = p.Name
		} else if _, ok := fx.Typical[p.Format]; !ok && !p.Public && p.Granted != "" {
			fx.Typical[p.Format] = p.Name
		}
		if err := g.repo(p); err != nil {
			return nil, fmt.Errorf("repository %s: %w", p.Name, err)
		}
		if i%50 == 49 || i == len(fx.Repos)-1 {
			g.cfg.log.Info("progress", "repos", i+1, "of", len(fx.Repos), "artifacts", g.seq, "of", g.cfg.artifacts)
		}
	}
	fx.Artifacts = g.seq
	for _, f := range formats { // a repository list smaller than the rotation
		if _, ok := fx.Typical[f]; !ok {
			fx.Typical[f] = fx.Large[f]
		}
	}
	large := fx.Repos[0] // generic
	fx.Package = genericPkg(large.Index, 0)
	c, _ := generic.ParsePath(large.Name + "/" + genericPkg(large.Index, 0) + "/1.0.0/" + genericPkg(large.Index, 0) + "-1.0.0.bin")
	fx.GenericGet = "/generic/" + large.Name + "/" + c.Path()
	fx.ArtifactID = g.firstID
	fx.UniqueSHA256 = g.uniqueSHA256
	return fx, nil
}

// people creates the bench user, other users and groups. Grants come with
// each repository.
func (g *gen) people(fx *fixture) error {
	hash, err := auth.HashPasswordWith(auth.DefaultPasswordParams, g.cfg.password)
	if err != nil {
		return err
	}
	at := g.now
	var ids []string
	for i := range 200 {
		name := fmt.Sprintf("user-%03d", i)
		if i == 0 {
			name = fx.User
		}
		u := meta.User{ID: auth.NewID(), Username: name, Email: name + "@bench.invalid", Role: meta.RoleUser,
			PasswordHash: hash, Source: "local", CreatedAt: at, UpdatedAt: at}
		if i%10 == 9 {
			u.Role = meta.RoleViewer
		}
		if err := g.c.apply(&meta.UserCreate{User: u}); err != nil {
			return err
		}
		ids = append(ids, u.ID)
	}
	g.userID, g.users = ids[0], ids
	for i := range 20 {
		grp := meta.Group{ID: auth.NewID(), Name: fmt.Sprintf("group-%02d", i), Description: "bench", CreatedAt: at}
		if err := g.c.apply(&meta.GroupCreate{Group: grp}); err != nil {
			return err
		}
		members := []string{}
		for j := i; j < len(ids); j += 20 {
			members = append(members, ids[j])
		}
		if i == 0 {
			g.groupID = grp.ID // holds the bench user (ids[0])
		}
		g.groups = append(g.groups, grp.ID)
		if err := g.c.apply(&meta.GroupAddMembers{GroupID: grp.ID, UserIDs: members}); err != nil {
			return err
		}
	}
	g.adminName = "admin"
	return g.c.flush() // users and groups exist before grants name them
}

func (g *gen) repo(p repoPlan) error {
	r := meta.Repository{ID: p.ID, Name: p.Name, Format: p.Format, Description: "bench " + p.Format + " repository",
		Public: p.Public, CreatedBy: g.adminName, CreatedAt: g.now, UpdatedAt: g.now}
	if err := g.c.apply(&meta.RepoCreate{Repo: r}); err != nil {
		return err
	}
	grant := func(user, group string, perms ...string) error {
		return g.c.apply(&meta.PermissionCreate{Permission: meta.Permission{ID: auth.NewID(), RepositoryID: p.ID,
			UserID: user, GroupID: group, Permissions: perms, CreatedAt: g.now}})
	}
	switch p.Granted {
	case "user":
		if err := grant(g.userID, "", meta.ActionRead); err != nil {
			return err
		}
	case "group":
		if err := grant("", g.groupID, meta.ActionWrite); err != nil {
			return err
		}
	}
	if !p.Public {
		// Grants to other users and groups: the bench user's checks find
		// theirs among these.
		for k := range 3 {
			if err := grant(g.users[1+(p.Index*7+k*31)%(len(g.users)-1)], "", meta.ActionRead); err != nil {
				return err
			}
		}
		if err := grant("", g.groups[1+p.Index%(len(g.groups)-1)], meta.ActionWrite); err != nil {
			return err
		}
	}
	var fill func(p repoPlan) error
	switch p.Format {
	case "generic":
		fill = g.generic
	case "npm":
		fill = g.npm
	case "pypi":
		fill = g.pypi
	case "maven":
		fill = g.maven
	case "docker":
		fill = g.docker
	}
	return fill(p)
}

// batcher collects the artifacts and keys of one repository into commands
// of at most cfg.batch artifacts.
type batcher struct {
	g    *gen
	repo string
	cmd  *meta.ArtifactsApply
}

func (g *gen) batcher(repo string) *batcher { return &batcher{g: g, repo: repo} }

func (bt *batcher) add(a meta.Artifact, kv ...meta.KVOp) error {
	if bt.cmd == nil {
		bt.cmd = &meta.ArtifactsApply{RepoID: bt.repo}
	}
	a.ID, a.RepositoryID = auth.NewID(), bt.repo
	a.UploadedAt, a.UploadedBy = bt.g.at(), bt.g.adminName
	bt.g.seq++
	if bt.g.firstID == "" {
		bt.g.firstID = a.ID
	}
	bt.cmd.Put = append(bt.cmd.Put, a)
	bt.cmd.KV = append(bt.cmd.KV, kv...)
	if len(bt.cmd.Put) >= bt.g.cfg.batch {
		return bt.flush()
	}
	return nil
}

func (bt *batcher) flush() error {
	if bt.cmd == nil {
		return nil
	}
	cmd := bt.cmd
	bt.cmd = nil
	return bt.g.c.apply(cmd)
}

func fromBlob(info blob.Info) meta.Artifact {
	return meta.Artifact{Digest: info.Digest, SizeBytes: info.Size, Checksums: info.Checksums}
}

func kvSet(k string, v any) meta.KVOp {
	raw, _ := json.Marshal(v)
	return meta.KVOp{Key: k, Value: raw}
}

// name is a package name from two words and a number, unique in a
// repository.
func name(repo, i int) string {
	a := words[(i*7+repo)%len(words)]
	b := words[(i*13+repo*3+1)%len(words)]
	return fmt.Sprintf("%s-%s-%05d", a, b, i)
}

func genericPkg(repo, i int) string { return name(repo, i) }

// generic: 10 versions a package, one file each.
func (g *gen) generic(p repoPlan) error {
	bt := g.batcher(p.ID)
	for i := 0; i < p.Artifacts; i++ {
		pkg, v := genericPkg(p.Index, i/10), fmt.Sprintf("1.0.%d", i%10)
		c, err := generic.ParsePath(p.Name + "/" + pkg + "/" + v + "/" + pkg + "-" + v + ".bin")
		if err != nil {
			return err
		}
		a := fromBlob(g.b.generic[i%len(g.b.generic)])
		a.Path, a.PackageName, a.Version, a.ContentType = c.Path(), c.Package, c.Version, "application/octet-stream"
		if err := bt.add(a); err != nil {
			return err
		}
	}
	if p.Index == 0 {
		// One file whose bytes are stored nowhere else.
		a := fromBlob(g.b.unique)
		a.Path, a.PackageName, a.Version, a.ContentType = "unique/1.0/unique.bin", "unique", "1.0", "application/octet-stream"
		if err := bt.add(a); err != nil {
			return err
		}
		g.uniqueSHA256 = g.b.unique.Checksums.SHA256
	}
	return bt.flush()
}

// npm: 10 versions a package (every fifth package scoped), with the
// package document, latest tag and version manifests npm publish writes.
func (g *gen) npm(p repoPlan) error {
	bt := g.batcher(p.ID)
	const perPkg = 10
	for i := 0; i < p.Artifacts; i++ {
		j := i / perPkg
		raw := name(p.Index, j)
		if j%5 == 4 {
			raw = "@bench/" + raw
		}
		n, err := npm.ParseName(raw)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("1.%d.0", i%perPkg)
		w1, _, _ := strings.Cut(n.Base, "-")
		desc := npmDescription(w1)
		manifest, _ := json.Marshal(map[string]any{"name": n.String(), "version": v, "description": desc,
			"main": "index.js", "license": "MIT", "keywords": []string{w1, "bench"},
			"dependencies": map[string]string{"left-pad": "^1.3.0"},
			"dist":         map[string]any{"shasum": g.b.npmTgz[w1].Checksums.SHA1, "fileCount": 2, "unpackedSize": 60}})
		a := fromBlob(g.b.npmTgz[w1])
		a.Path, a.PackageName, a.Version, a.ContentType, a.Attrs = n.Path(v), n.String(), v, "application/octet-stream", manifest
		var kv []meta.KVOp
		if i%perPkg == perPkg-1 || i == p.Artifacts-1 {
			// The package's last version: its document and dist-tag, as
			// the last publish left them.
			kv = append(kv,
				kvSet("pkg/"+n.String(), map[string]any{"description": desc, "readme": "# " + n.String() + "\n\n" + strings.Repeat(desc+". ", 20),
					"keywords": []string{w1, "bench"}, "created": g.now, "modified": g.at()}),
				kvSet("find/"+n.String(), strings.ToLower(desc+" "+w1+" bench")),
				kvSet("tag/"+n.String()+"/latest", v))
		}
		if err := bt.add(a, kv...); err != nil {
			return err
		}
	}
	return bt.flush()
}

// npmDescription is the description of the npm packages named after
// word w.
func npmDescription(w string) string { return fmt.Sprintf("The %s library for bench work", w) }

// pypi: projects of 5 versions, each an sdist and a wheel (with its
// METADATA blob, as an upload extracts it).
func (g *gen) pypi(p repoPlan) error {
	bt := g.batcher(p.ID)
	for i := 0; i < p.Artifacts; i++ {
		j := i / 10
		display := strings.ReplaceAll(name(p.Index, j), "-", "_")
		norm := pypi.Normalize(display)
		v := fmt.Sprintf("2.%d", (i%10)/2)
		stem := strings.ReplaceAll(norm, "-", "_") + "-" + v
		file, info, kind := stem+".tar.gz", g.b.sdist, pypi.KindSdist
		ct := "application/gzip"
		if i%2 == 1 {
			file, info, kind, ct = stem+"-py3-none-any.whl", g.b.wheel, pypi.KindWheel, "application/zip"
		}
		if _, err := pypi.CheckFilename(display, v, file); err != nil {
			return err
		}
		attrs := map[string]any{"name": display, "filename": file, "filetype": kind, "pyversion": "source",
			"requires_python": ">=3.8", "summary": "bench project " + display, "metadata_version": "2.1"}
		a := fromBlob(info)
		if kind == pypi.KindWheel {
			attrs["pyversion"] = "py3"
			attrs["metadata"] = map[string]any{"digest": g.b.wheelMeta.Digest, "sha256": g.b.wheelMeta.Checksums.SHA256, "size": g.b.wheelMeta.Size}
			a.Refs = []string{g.b.wheelMeta.Digest}
		}
		a.Attrs, _ = json.Marshal(attrs)
		m := pypi.UploadMeta{Project: norm, Version: v, Filename: file}
		a.Path, a.PackageName, a.Version, a.ContentType = m.Path(), norm, v, ct
		var kv []meta.KVOp
		if i%10 == 0 {
			kv = append(kv, kvSet("name/"+norm+"/"+display, true)) // the project's spelling
		}
		if err := bt.add(a, kv...); err != nil {
			return err
		}
	}
	return bt.flush()
}

// maven: artifacts of 5 release versions, each a jar and a pom.
func (g *gen) maven(p repoPlan) error {
	bt := g.batcher(p.ID)
	for i := 0; i < p.Artifacts; i++ {
		j := i / 10
		group := fmt.Sprintf("org.bench.%s", words[j%len(words)])
		id := name(p.Index, j)
		v := fmt.Sprintf("3.%d.0", (i%10)/2)
		ext, info := "jar", g.b.jar
		if i%2 == 1 {
			ext, info = "pom", g.b.pom
		}
		c, err := maven.ParsePath(p.Name + "/" + strings.ReplaceAll(group, ".", "/") + "/" + id + "/" + v + "/" + id + "-" + v + "." + ext)
		if err != nil {
			return err
		}
		attrs, _ := json.Marshal(maven.Attrs{GroupID: c.GroupID, ArtifactID: c.ArtifactID, Version: c.Version, Extension: c.Extension})
		a := fromBlob(info)
		a.Path, a.PackageName, a.Version, a.Attrs = c.Path(), c.Package(), c.Version, attrs
		a.ContentType = "application/java-archive"
		if ext == "pom" {
			a.ContentType = "application/xml"
		}
		if err := bt.add(a); err != nil {
			return err
		}
	}
	return bt.flush()
}

// docker: images of 10 tags; every image links the same config and layer
// and holds one manifest, which its tags point at.
func (g *gen) docker(p repoPlan) error {
	bt := g.batcher(p.ID)
	b := g.b
	mfDigest := b.manifest.Digest
	refs := []string{b.config.Digest, b.layer.Digest}
	refsSize := b.config.Size + b.layer.Size
	attrs, _ := json.Marshal(map[string]any{"digest": mfDigest, "media_type": b.manifestMedia, "manifest_size": b.manifest.Size,
		"refs": refs, "refs_size": refsSize})
	for i := 0; i < p.Artifacts; i++ {
		image := strings.ReplaceAll(name(p.Index, i/10), "-", "/")
		tag := fmt.Sprintf("v%d", i%10)
		var kv []meta.KVOp
		if i%10 == 0 {
			link := func(info blob.Info) meta.KVOp {
				op := kvSet("b/"+image+"@"+info.Digest, map[string]any{"addr": info.Digest, "size": info.Size})
				op.Blobs = []string{info.Digest}
				return op
			}
			mop := kvSet("m/"+image+"@"+mfDigest, map[string]any{"addr": b.manifest.Digest, "media_type": b.manifestMedia,
				"size": b.manifest.Size, "checksums": b.manifest.Checksums, "refs": refs, "refs_size": refsSize})
			mop.Blobs = []string{b.manifest.Digest}
			kv = append(kv, link(b.config), link(b.layer), mop)
		}
		a := meta.Artifact{Digest: b.manifest.Digest, SizeBytes: b.manifest.Size + refsSize, Checksums: b.manifest.Checksums,
			Path: image + ":" + tag, PackageName: image, Version: tag, ContentType: b.manifestMedia, Attrs: attrs}
		if err := bt.add(a, kv...); err != nil {
			return err
		}
	}
	return bt.flush()
}
