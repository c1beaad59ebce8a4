package migrate

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/mod/module"

	"github.com/depot-registry/depot/origin/service/migrate/artifactory"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/crates"
	"github.com/depot-registry/depot/shared/format/npm"
	"github.com/depot-registry/depot/shared/format/nuget"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/format/pypi"
	"github.com/depot-registry/depot/shared/meta"
)

// adapter moves one format's files: what it leaves to the registry,
// where a file is kept here (to find it already moved), and how it is
// written, through the format's own write path.
type adapter struct {
	// skip says why a file is not moved ("": it is).
	skip func(p string) string
	// target is the artifact path here of the source's file at p ("":
	// only the file's content says, and it is found by its checksum).
	target func(p string) (string, error)
	// write writes the file (n bytes in f, at p in the source) into repo.
	write func(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error
}

// adapters move each format, by its name here.
var adapters = map[string]adapter{
	"generic":  {skip: func(string) string { return "" }, target: samePath, write: putFile},
	"maven":    {skip: mavenFile, target: samePath, write: putFile},
	"gradle":   {skip: mavenFile, target: samePath, write: putFile},
	"npm":      {skip: npmFile, target: npmTarget, write: publishNPM},
	"pypi":     {skip: pypiFile, target: pypiTarget, write: uploadPyPI},
	"docker":   {skip: dockerFile, target: dockerTarget, write: pushImage},
	"go":       {skip: goFile, target: goTarget, write: uploadModule},
	"helm":     {skip: helmFile, target: helmTarget, write: putChart},
	"rubygems": {skip: gemFile, target: func(p string) (string, error) { return "gems/" + path.Base(p), nil }, write: pushGem},
	"nuget":    {skip: nugetFile, target: nugetTarget, write: pushNuGet},
	"composer": {skip: composerFile, target: byContent, write: uploadComposer},
	"conda":    {skip: condaFile, target: condaTarget, write: putConda},
	"crates":   {skip: crateFile, target: byContent, write: publishCrate},
}

// byContent: where a file is kept here only its content says (the
// package's name inside it).
func byContent(string) (string, error) { return "", nil }

// composerFile: a Composer repository's package zips move; Artifactory's
// indexes are the registry's to build.
func composerFile(p string) string {
	switch {
	case strings.HasSuffix(p, ".zip"):
		return ""
	case strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") || strings.HasSuffix(p, ".tar"):
		return "a Composer archive other than a zip: not kept here (Depot keeps package zips)"
	}
	return "Composer indexes: built here from the packages"
}

// uploadComposer uploads a package zip as the registry's Composer upload
// takes it: its composer.json names it; its version is composer.json's,
// else the source's composer.version property, as Artifactory reads them.
func uploadComposer(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	q := url.Values{}
	if props, err := j.src.Properties(ctx, srcRepo, p); err == nil && len(props["composer.version"]) > 0 {
		q.Set("version", props["composer.version"][0])
	}
	_, err := j.serveQuery(ctx, repo, http.MethodPut, "/"+repo.Name, q, f, n, map[string]string{"Content-Type": "application/zip"})
	return err
}

// condaFile: a conda channel's packages move (<subdir>/<file>.tar.bz2 or
// .conda); its repodata and channeldata are the registry's to build.
func condaFile(p string) string {
	if strings.HasSuffix(p, ".tar.bz2") || strings.HasSuffix(p, ".conda") {
		return ""
	}
	return "conda channel metadata: built here from the packages"
}

// condaTarget is where a package is kept here: <subdir>/<file>, its
// subdir the folder it is in (at the channel's top: the package's own,
// found by its checksum).
func condaTarget(p string) (string, error) {
	dir := path.Dir(p)
	if dir == "." {
		return "", nil
	}
	return path.Base(dir) + "/" + path.Base(p), nil
}

// putConda uploads a package as the registry's conda upload takes it.
func putConda(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	to := "/" + repo.Name + "/" + path.Base(p)
	if here, _ := condaTarget(p); here != "" {
		to = "/" + repo.Name + "/" + here
	}
	return j.serve(ctx, repo, http.MethodPut, to, f, n, map[string]string{"Content-Type": "application/octet-stream"})
}

// crateFile: a Cargo repository's crates move; its index (.index/,
// config.json) is the registry's to build.
func crateFile(p string) string {
	if strings.HasSuffix(p, ".crate") && !strings.HasPrefix(p, ".") {
		return ""
	}
	return "the Cargo index: built here from the crates"
}

// publishCrate publishes a crate as cargo publish does, the publish JSON
// made from the crate's Cargo.toml; a dependency on the source
// repository's own index becomes one on this registry's.
func publishCrate(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	ours := func(index string) bool {
		return strings.Contains(index, "/api/cargo/"+srcRepo+"/index") || strings.Contains(index, "/git/"+srcRepo+".git")
	}
	body, size, err := crates.PublishRequest(ctx, f, n, ours)
	if err != nil {
		return &finalError{err}
	}
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/api/v1/crates/new", body, size, map[string]string{"Content-Type": "application/octet-stream"})
}

// nugetFile: a NuGet repository's packages move; symbol packages are
// not kept here.
func nugetFile(p string) string {
	switch {
	case strings.HasSuffix(p, ".snupkg") || strings.HasSuffix(p, ".symbols.nupkg"):
		return "a symbol package: not kept here"
	case strings.HasSuffix(p, ".nupkg"):
		return ""
	}
	return "not a package"
}

// nugetTarget is where a package is kept here, from its file name
// <id>.<version>.nupkg: the version starts at the first segment that
// starts with a digit.
func nugetTarget(p string) (string, error) {
	parts := strings.Split(strings.TrimSuffix(path.Base(p), ".nupkg"), ".")
	for i := 1; i < len(parts); i++ {
		if c := parts[i]; c != "" && c[0] >= '0' && c[0] <= '9' {
			return nuget.PackagePath(strings.Join(parts[:i], "."), strings.Join(parts[i:], ".")), nil
		}
	}
	return "", fmt.Errorf("%s does not name a package and a version", path.Base(p))
}

// pushNuGet pushes a package as nuget push does (the raw .nupkg).
func pushNuGet(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name, f, n, map[string]string{"Content-Type": "application/octet-stream"})
}

// gemFile: a RubyGems repository's gems move (gems/<name>-<version>.gem);
// its indexes (specs, quick/, info/) are the registry's to build.
func gemFile(p string) string {
	if strings.HasPrefix(p, "gems/") && strings.HasSuffix(p, ".gem") {
		return ""
	}
	return "RubyGems indexes: built here from the gems"
}

// pushGem pushes a gem as gem push does.
func pushGem(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	return j.serve(ctx, repo, http.MethodPost, "/"+repo.Name+"/api/v1/gems", f, n, map[string]string{"Content-Type": "application/octet-stream"})
}

// goFile: a Go repository's module zips move (<module>/@v/<version>.zip);
// the .mod, .info and list files are the registry's to serve from them.
func goFile(p string) string {
	if strings.HasSuffix(p, ".zip") && strings.Contains(p, "/@v/") {
		return ""
	}
	return "Go module metadata: served here from the module's zip"
}

// goTarget is where a module zip is kept here: its module path unescaped
// (the proxy protocol's "!x" for capitals).
func goTarget(p string) (string, error) {
	esc, file, _ := strings.Cut(p, "/@v/")
	mod, err := module.UnescapePath(esc)
	if err != nil {
		return "", err
	}
	return mod + "/@v/" + file, nil
}

// uploadModule uploads a module zip as the registry's Go upload takes it.
func uploadModule(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/upload", f, n, map[string]string{"Content-Type": "application/zip"})
}

// helmFile: a Helm repository's chart archives move; its index.yaml is
// the registry's to build.
func helmFile(p string) string {
	if strings.HasSuffix(p, ".tgz") {
		return ""
	}
	return "the chart index: built here from the charts"
}

func helmTarget(p string) (string, error) { return "charts/" + path.Base(p), nil }

// putChart uploads a chart archive as helm's push plugins do.
func putChart(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/charts/"+path.Base(p), f, n, map[string]string{"Content-Type": "application/gzip"})
}

func samePath(p string) (string, error) { return p, nil }

// mavenFile says why a Maven repository's file is not moved: what the
// registry writes itself (metadata, checksum files).
func mavenFile(p string) string {
	base := path.Base(p)
	for _, ext := range []string{".md5", ".sha1", ".sha256", ".sha512"} {
		if strings.HasSuffix(base, ext) {
			return "a checksum file: served here from the file itself"
		}
	}
	if strings.HasPrefix(base, "maven-metadata.xml") {
		return "Maven metadata: written here from the versions stored"
	}
	return ""
}

// putFile writes a file as its client uploads it: PUT at its path.
func putFile(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/"+p, f, n, nil)
}

// npmFile: an npm repository's tarballs move; Artifactory's own metadata
// (.npm/) is rebuilt here from them.
func npmFile(p string) string {
	if !strings.HasSuffix(p, ".tgz") || !strings.Contains(p, "/-/") {
		return "npm metadata: the registry builds it from the tarballs"
	}
	return ""
}

// npmTarball reads a tarball's package name and version from its path,
// <name>/-/[<@scope>/]<base>-<version>.tgz.
func npmTarball(p string) (npm.Name, string, error) {
	name, file, ok := strings.Cut(p, "/-/")
	if !ok {
		return npm.Name{}, "", fmt.Errorf("%s is not an npm tarball's path", p)
	}
	n, err := npm.ParseName(name)
	if err != nil {
		return npm.Name{}, "", err
	}
	file = strings.TrimSuffix(path.Base(file), ".tgz")
	version, ok := strings.CutPrefix(file, n.Base+"-")
	if !ok || version == "" {
		return npm.Name{}, "", fmt.Errorf("%s does not name a version of %s", p, n)
	}
	return n, version, nil
}

func npmTarget(p string) (string, error) {
	n, v, err := npmTarball(p)
	if err != nil {
		return "", err
	}
	return n.Path(v), nil
}

// publishNPM publishes a tarball as npm publish does: the document with
// the tarball's package.json as the version's manifest and the tarball
// attached (streamed, base64, never whole in memory). The package's
// dist-tags are set from the source's once its repository is moved.
func publishNPM(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	name, version, err := npmTarball(p)
	if err != nil {
		return err
	}
	raw, err := npm.TarballManifest(ctx, f, n)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("the tarball's package.json: %w", err)
	}
	var inside struct{ Name, Version string }
	_ = json.Unmarshal(raw, &inside)
	if inside.Name != name.String() || inside.Version != version {
		return fmt.Errorf("the tarball's package.json says %s@%s, its path %s@%s", inside.Name, inside.Version, name, version)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s1, s512 := sha1.New(), sha512.New()
	if _, err := io.Copy(io.MultiWriter(s1, s512), f); err != nil {
		return err
	}
	id, _ := json.Marshal(name.String() + "@" + version)
	m["_id"] = id
	m["dist"], _ = json.Marshal(map[string]string{"shasum": hex.EncodeToString(s1.Sum(nil)),
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512.Sum(nil)), "tarball": name.File(version)})
	manifest, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	qname, _ := json.Marshal(name.String())
	qver, _ := json.Marshal(version)
	qfile, _ := json.Marshal(name.File(version))
	head := fmt.Sprintf(`{"_id":%s,"name":%s,"dist-tags":{"latest":%s},"versions":{%s:%s},"_attachments":{%s:{"content_type":"application/octet-stream","length":%d,"data":"`,
		qname, qname, qver, qver, manifest, qfile, n)
	pr, pw := io.Pipe()
	go func() {
		enc := base64.NewEncoder(base64.StdEncoding, pw)
		_, err := io.Copy(enc, f)
		if err == nil {
			err = enc.Close()
		}
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	body := io.MultiReader(strings.NewReader(head), pr, strings.NewReader(`"}}}`))
	size := int64(len(head)) + int64(base64.StdEncoding.EncodedLen(int(n))) + 4
	j.touched(repo.Name, name.String())
	return j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/"+strings.Replace(name.String(), "/", "%2f", 1), body, size,
		map[string]string{"Content-Type": "application/json"})
}

// npmTags sets the dist-tags of the packages moved into repo as the
// source has them (the last version published holds latest until then).
func (j *job) npmTags(ctx context.Context, srcRepo string, repo *meta.Repository) {
	for _, pkg := range j.packages[repo.Name] {
		tags, err := j.src.NpmDistTags(ctx, srcRepo, pkg)
		if err != nil {
			j.logf("warn", "%s: the dist-tags of %s could not be read (%v): latest is the last version moved", srcRepo, pkg, err)
			continue
		}
		for tag, v := range tags {
			q, _ := json.Marshal(v)
			err := j.serve(ctx, repo, http.MethodPut, "/"+repo.Name+"/-/package/"+strings.Replace(pkg, "/", "%2f", 1)+"/dist-tags/"+tag,
				strings.NewReader(string(q)), int64(len(q)), map[string]string{"Content-Type": "application/json"})
			if err != nil {
				j.logf("warn", "%s: dist-tag %s of %s (%s): %v", srcRepo, tag, pkg, v, err)
			}
		}
	}
}

// serve writes through the format's server, as the migration's writer.
func (j *job) serve(ctx context.Context, repo *meta.Repository, method, p string, body io.Reader, n int64, header map[string]string) error {
	_, err := j.serveQuery(ctx, repo, method, p, nil, body, n, header)
	return err
}

// serveQuery is serve with a query, answering the response too.
func (j *job) serveQuery(ctx context.Context, repo *meta.Repository, method, p string, query url.Values, body io.Reader, n int64, header map[string]string) (*format.Response, error) {
	srv := j.s.cfg.Servers[repo.Format]
	if srv == nil {
		return nil, &finalError{fmt.Errorf("no %s format here", repo.Format)}
	}
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	rawPath := p
	decoded := strings.ReplaceAll(p, "%2f", "/")
	if query == nil {
		query = url.Values{}
	}
	req := &format.Request{Method: method, Path: decoded, RawPath: rawPath, Query: query, Header: h, Body: body, ContentLength: n,
		RemoteAddr: "migration", RequestID: "migration-" + j.m.ID}
	if src, ok := ctx.Value(itemKey{}).(source); ok && j.m.Options.IncludeMetadata {
		req.Imported(src.item.Created, src.item.CreatedBy, src.properties) // when, by whom, with what the source says
	}
	resp := srv.ServeAs(ctx, j.p, req)
	if resp.Status >= 300 {
		msg := strings.TrimSpace(string(resp.Body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		err := fmt.Errorf("refused here (%d): %s", resp.Status, msg)
		switch {
		case resp.Status == http.StatusInsufficientStorage:
			return resp, fmt.Errorf("%w: %s", errNoSpace, msg)
		case resp.Status < 500:
			return resp, &finalError{err}
		}
		return resp, err
	}
	return resp, nil
}

// pypiFile: a PyPI repository's distributions (wheels, sdists) move;
// Artifactory's own indexes (.pypi/) are the registry's to build.
func pypiFile(p string) string {
	if strings.HasPrefix(p, ".pypi/") {
		return "PyPI index pages: the registry builds them"
	}
	if _, err := pypi.ParseFilename(path.Base(p)); err != nil {
		return "not a distribution file"
	}
	return ""
}

// pypiDist is a distribution's project name and version, from its file
// name, with the version of the folder it is in (<name>/<version>/<file>)
// where there is one.
func pypiDist(p string) (name, version string, err error) {
	d, err := pypi.ParseFilename(path.Base(p))
	if err != nil {
		return "", "", err
	}
	name, version = d.Name, d.Version
	if segs := strings.Split(p, "/"); len(segs) >= 3 && d.Kind == pypi.KindSdist {
		version = segs[len(segs)-2] // an sdist's name may hold "-": the folder says where the version starts
		name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(path.Base(p), ".tar.gz"), ".zip"), "-"+version)
	}
	return name, version, nil
}

func pypiTarget(p string) (string, error) {
	name, version, err := pypiDist(p)
	if err != nil {
		return "", err
	}
	return pypi.Normalize(name) + "/" + version + "/" + path.Base(p), nil
}

// uploadPyPI uploads a distribution as twine does: the upload form with
// its name, version and digest, the file streamed as its content part.
func uploadPyPI(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	name, version, err := pypiDist(p)
	if err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for k, v := range map[string]string{":action": "file_upload", "protocol_version": "1", "name": name, "version": version,
				"sha256_digest": hex.EncodeToString(h.Sum(nil))} {
				if err := mw.WriteField(k, v); err != nil {
					return err
				}
			}
			part, err := mw.CreateFormFile("content", path.Base(p))
			if err != nil {
				return err
			}
			if _, err := io.Copy(part, f); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	return j.serve(ctx, repo, http.MethodPost, "/"+repo.Name, pr, -1, map[string]string{"Content-Type": mw.FormDataContentType()})
}

// An image in Artifactory's layout: <image>/<tag>/manifest.json beside
// its blobs (config and layers), each stored as sha256__<hex>. An image
// moves at its manifest: each blob it names is pushed (unless the image
// has it already), then the manifest under its tag, as a client pushes.
// An image index (several platforms) is <image>/<tag>/list.manifest.json,
// each platform's manifest in <image>/sha256:<hex>/manifest.json beside
// its blobs: it moves at the index, each platform's image pushed by
// digest first (unless here), then the index under its tag. A platform's
// folder is also listed on its own: pushed by digest, it changes nothing
// when its index has moved it.

const (
	dockerManifest = "manifest.json"
	dockerIndex    = "list.manifest.json"
	maxManifest    = 4 << 20
)

func dockerFile(p string) string {
	switch base := path.Base(p); {
	case base == dockerManifest, base == dockerIndex:
		return ""
	case strings.HasPrefix(base, "sha256__"):
		return "an image's blob: pushed with the manifest that names it"
	}
	return "not part of an image"
}

// dockerImage is the image and tag (or digest, for a platform's folder)
// of a manifest's path.
func dockerImage(p string) (image, tag string, err error) {
	dir := path.Dir(p)
	image, tag = path.Dir(dir), path.Base(dir)
	if image == "." || image == "" || tag == "" {
		return "", "", fmt.Errorf("%s is not <image>/<tag>/%s", p, path.Base(p))
	}
	return image, tag, nil
}

// dockerTarget is the artifact here of a manifest: its tag's, or, in a
// platform's folder, its digest's.
func dockerTarget(p string) (string, error) {
	image, tag, err := dockerImage(p)
	if strings.HasPrefix(tag, "sha256:") {
		return image + "@" + tag, err
	}
	return image + ":" + tag, err
}

// readManifest reads a manifest's bytes (at most maxManifest).
func readManifest(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxManifest {
		return nil, &finalError{fmt.Errorf("the manifest is larger than 4 MiB")}
	}
	return raw, nil
}

// pushImage pushes the image a manifest (n bytes in f) describes, or the
// image index a list.manifest.json is.
func pushImage(ctx context.Context, j *job, srcRepo string, repo *meta.Repository, p string, f *os.File, n int64) error {
	image, tag, err := dockerImage(p)
	if err != nil {
		return &finalError{err}
	}
	raw, err := readManifest(f)
	if err != nil {
		return err
	}
	if path.Base(p) == dockerIndex {
		return j.pushIndex(ctx, srcRepo, repo, image, tag, raw)
	}
	return j.pushManifest(ctx, srcRepo, repo, image, tag, path.Dir(p), raw)
}

// pushManifest pushes an image's blobs from the source's folder, then its
// manifest (raw) as ref (a tag or its digest).
func (j *job) pushManifest(ctx context.Context, srcRepo string, repo *meta.Repository, image, ref, folder string, raw []byte) error {
	var m struct {
		MediaType string `json:"mediaType"`
		Config    *struct {
			Digest string `json:"digest"`
		} `json:"config"`
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return &finalError{fmt.Errorf("the manifest is not JSON: %w", err)}
	}
	if m.Config == nil {
		return &finalError{fmt.Errorf("a manifest of media type %q (not an image's) is not migrated yet", m.MediaType)}
	}
	digests := []string{m.Config.Digest}
	for _, l := range m.Layers {
		digests = append(digests, l.Digest)
	}
	base := "/" + repo.Name + "/" + image
	for _, d := range digests {
		hexd, ok := strings.CutPrefix(d, "sha256:")
		if !ok || len(hexd) != 64 {
			return &finalError{fmt.Errorf("the manifest names a blob %q that is not sha256", d)}
		}
		unlock := j.lock(repo.Name + " " + image + " " + d) // one push of a blob that tags moved at once share
		if resp, err := j.serveQuery(ctx, repo, http.MethodGet, base+"/blobs/"+d, nil, nil, 0, nil); err == nil && resp.Status == http.StatusOK {
			unlock()
			continue // the image has it (another tag's)
		}
		err := j.pushBlob(ctx, srcRepo, repo, base, folder+"/sha256__"+hexd, d)
		unlock()
		if err != nil {
			return err
		}
	}
	mt := cmp.Or(m.MediaType, "application/vnd.docker.distribution.manifest.v2+json")
	return j.serve(ctx, repo, http.MethodPut, base+"/manifests/"+ref, bytes.NewReader(raw), int64(len(raw)),
		map[string]string{"Content-Type": mt})
}

// pushIndex pushes each platform's image an index names (from its
// folder, unless the image has it), then the index under its tag.
func (j *job) pushIndex(ctx context.Context, srcRepo string, repo *meta.Repository, image, tag string, raw []byte) error {
	var idx struct {
		MediaType string `json:"mediaType"`
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return &finalError{fmt.Errorf("the image index is not JSON: %w", err)}
	}
	if len(idx.Manifests) == 0 {
		return &finalError{fmt.Errorf("the image index names no manifest")}
	}
	base := "/" + repo.Name + "/" + image
	for _, c := range idx.Manifests {
		hexd, ok := strings.CutPrefix(c.Digest, "sha256:")
		if !ok || len(hexd) != 64 || strings.Trim(hexd, "0123456789abcdef") != "" {
			return &finalError{fmt.Errorf("the image index names a manifest %q that is not sha256", c.Digest)}
		}
		unlock := j.lock(repo.Name + " " + image + " " + c.Digest)
		err := j.pushPlatform(ctx, srcRepo, repo, image, c.Digest)
		unlock()
		if err != nil {
			return fmt.Errorf("its manifest %s: %w", c.Digest, err)
		}
	}
	mt := cmp.Or(idx.MediaType, oci.MediaDockerList)
	return j.serve(ctx, repo, http.MethodPut, base+"/manifests/"+tag, bytes.NewReader(raw), int64(len(raw)),
		map[string]string{"Content-Type": mt})
}

// pushPlatform pushes the image of digest from its folder
// (<image>/sha256:<hex>/), unless the image has that manifest already;
// the manifest downloaded must have the digest the index names.
func (j *job) pushPlatform(ctx context.Context, srcRepo string, repo *meta.Repository, image, digest string) error {
	base := "/" + repo.Name + "/" + image
	if resp, err := j.serveQuery(ctx, repo, http.MethodHead, base+"/manifests/"+digest, nil, nil, 0, nil); err == nil && resp.Status == http.StatusOK {
		return nil
	}
	folder := image + "/" + digest
	tctx, cancel := context.WithTimeout(ctx, time.Duration(j.m.Options.TimeoutSeconds)*time.Second)
	defer cancel()
	body, err := j.src.Open(tctx, srcRepo, folder+"/"+dockerManifest)
	if err != nil {
		return err
	}
	raw, err := readManifest(body)
	body.Close()
	if err != nil {
		return err
	}
	if got := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(got[:]) != digest {
		return fmt.Errorf("checksum mismatch: %s/%s does not have the digest the index names; not stored", folder, dockerManifest)
	}
	return j.pushManifest(ctx, srcRepo, repo, image, digest, folder, raw)
}

// pushBlob downloads a blob from the source's folder and pushes it in
// one request (the OCI monolithic upload, which checks its digest).
func (j *job) pushBlob(ctx context.Context, srcRepo string, repo *meta.Repository, base, srcPath, digest string) error {
	tctx, cancel := context.WithTimeout(ctx, time.Duration(j.m.Options.TimeoutSeconds)*time.Second)
	defer cancel()
	body, err := j.src.Open(tctx, srcRepo, srcPath)
	if err != nil {
		return fmt.Errorf("the blob %s: %w", digest, err)
	}
	defer body.Close()
	_, err = j.serveQuery(ctx, repo, http.MethodPost, base+"/blobs/uploads/", url.Values{"digest": {digest}}, body, -1,
		map[string]string{"Content-Type": "application/octet-stream"})
	return err
}

// itemKey carries the source file being written (its upload time,
// uploader and properties) to the requests that write it.
type itemKey struct{}

// source is the source file being written and its properties (those
// kept here).
type source struct {
	item       artifactory.Item
	properties map[string][]string
}
