package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/meta"
)

// Opener opens a blob wherever the node keeps them (an origin's blob
// store, an edge's cache, which fetches one it lacks); one that is an
// io.ReaderAt is read at an offset, any other is read through.
type Opener func(ctx context.Context, digest string) (io.ReadCloser, error)

// Format is an installed plugin as a format handler: its manifest's
// routes, each handled by a call of its module; reads see the request's
// repository through the host functions, writes store the request's body
// first and record what the plugin publishes through the format write
// path.
type Format struct {
	format.Base
	man  abi.Manifest
	mod  *Module
	open Opener
}

// NewFormat serves the module's manifest over env; open reads the
// repository's files for the host function read.
func NewFormat(env *format.Env, man abi.Manifest, mod *Module, open Opener) *Format {
	return &Format{Base: format.NewBase(env, man.Format, man.Prefix), man: man, mod: mod, open: open}
}

// PluginID implements format.Plugin.
func (f *Format) PluginID() string { return f.man.ID }

// Manifest is what the plugin serves.
func (f *Format) Manifest() abi.Manifest { return f.man }

// Routes implements format.Format: the manifest's routes, then its roots
// (served at their own paths, outside the prefix: see Server).
func (f *Format) Routes() []format.Route {
	var out []format.Route
	for i, rt := range f.man.Routes {
		r := format.Route{Method: rt.Method, Path: rt.Path, Action: actions[rt.Action]}
		if rt.Write {
			r.Write = f.write(i)
		} else {
			r.Read = f.read(i)
		}
		out = append(out, r)
	}
	for i, root := range f.man.Roots {
		out = append(out, format.Route{Method: http.MethodGet, Path: root, Read: f.read(-1 - i)})
	}
	return out
}

var actions = map[string]string{abi.ActionRead: meta.ActionRead, abi.ActionWrite: meta.ActionWrite, abi.ActionDelete: meta.ActionDelete}

// Credential implements format.CredentialReader: the Authorization
// header, or the token of a presigned URL.
func (f *Format) Credential(r *format.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		return a
	}
	if t := r.Query.Get(abi.PresignParam); t != "" {
		return "Bearer " + t
	}
	return ""
}

// presigned is the query of a presigned URL for r's caller on r's
// repository ("" when the caller's credential buys none).
func (f *Format) presigned(r *format.Request) string {
	if f.Env.Tokens == nil || r.Repo == nil {
		return ""
	}
	g := auth.RegistryGrant{Audience: f.Name(), Access: []auth.Access{{Type: "repository", Name: r.Repo.Name, Actions: []string{"pull"}}}}
	tok, _, err := f.Env.Tokens.IssueRegistryToken(r.Principal, g, abi.PresignTTL*time.Second)
	if err != nil {
		return ""
	}
	return url.Values{abi.PresignParam: {tok}}.Encode()
}

// granted refuses a presigned URL's token (a registry token) anything
// but reading the repository it was made for.
func granted(r *format.Request, write bool) error {
	p := r.Principal
	if p == nil || p.Via != auth.CredRegistry {
		return nil
	}
	if write || r.Repo == nil || !p.Granted("repository", r.Repo.Name, "pull") {
		return format.Forbidden("a presigned URL's token reads only the files of the repository it was made for")
	}
	return nil
}

// Error implements format.Format: {"errors": [message]}, the shape of
// the registry protocols plugins are written for (Terraform's).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, func(e *format.Error) (string, []byte) {
		b, _ := json.Marshal(map[string][]string{"errors": {e.Message}})
		return "application/json", b
	})
}

func (f *Format) read(route int) format.Handler {
	return func(ctx context.Context, r *format.Request) (*format.Response, error) {
		if err := granted(r, false); err != nil {
			return nil, err
		}
		resp, err := f.call(ctx, r, route, nil)
		if err != nil {
			return nil, err
		}
		if resp.Publish != nil || resp.Delete != "" {
			return nil, fmt.Errorf("plugin %s: a read route answered a write", f.man.ID)
		}
		return f.respond(r, resp)
	}
}

func (f *Format) write(route int) format.WriteHandler {
	return func(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
		if err := granted(r, true); err != nil {
			return nil, err
		}
		var up *abi.Upload
		var info blob.Info
		if r.Method != http.MethodDelete {
			var err error
			if info, err = w.PutBlob(ctx, r.Body, format.ExpectedChecksums(r.Header)); err != nil {
				return nil, err
			}
			up = &abi.Upload{Digest: info.Digest, SHA256: info.Checksums.SHA256, Size: info.Size, Type: r.Header.Get("Content-Type")}
		}
		resp, err := f.call(ctx, r, route, up)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.Error != "" || resp.Status >= 400:
			return f.respond(r, resp) // the stored body is nobody's: garbage collection takes it
		case resp.Delete != "":
			p, ok := cleanPath(resp.Delete, false)
			if !ok {
				return nil, fmt.Errorf("plugin %s deletes a path it may not name: %q", f.man.ID, resp.Delete)
			}
			return w.DeleteAt(ctx, r.Repo, p)
		case resp.Publish != nil && up != nil:
			return f.publish(ctx, r, w, resp, info)
		}
		return f.respond(r, resp)
	}
}

// maxAttrs bounds what a plugin records of a file.
const maxAttrs = 64 << 10

func (f *Format) publish(ctx context.Context, r *format.Request, w *format.Writer, resp *abi.Response, info blob.Info) (*format.Response, error) {
	pub := resp.Publish
	p, ok := cleanPath(pub.Path, false)
	switch {
	case !ok || p != pub.Path:
		return nil, fmt.Errorf("plugin %s publishes at a path it may not name: %q", f.man.ID, pub.Path)
	case pub.Package == "" || pub.Version == "" || len(pub.Package) > 512 || len(pub.Version) > 128:
		return nil, fmt.Errorf("plugin %s publishes without a package and a version", f.man.ID)
	case len(pub.Attrs) > maxAttrs || (len(pub.Attrs) > 0 && !json.Valid(pub.Attrs)):
		return nil, fmt.Errorf("plugin %s records more than %d bytes of JSON of a file", f.man.ID, maxAttrs)
	}
	over := format.OverwriteNever
	if pub.Overwrite {
		over = format.OverwriteIfDelete
	}
	u := format.Upload{Repo: r.Repo, Path: p, Package: pub.Package, Version: pub.Version, ContentType: pub.Type,
		Overwrite: over, Attrs: pub.Attrs}
	_, idx, err := w.Record(ctx, r, u, info)
	if err != nil {
		return nil, err
	}
	out, err := f.respond(r, resp)
	if err == nil {
		format.SetIndex(out.Header, idx)
	}
	return out, err
}

// call has the module handle r on route (-1 - i: root i).
func (f *Format) call(ctx context.Context, r *format.Request, route int, up *abi.Upload) (*abi.Response, error) {
	c := abi.Call{Call: abi.CallHandle, Route: route, Method: r.Method, Path: r.Path, Params: r.Params, Query: r.Query,
		BaseURL: r.BaseURL, Prefix: r.Prefix, Upload: up, Headers: map[string]string{}}
	for _, h := range []string{"Accept", "Content-Type", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			c.Headers[h] = v
		}
	}
	if r.Principal != nil {
		c.User = r.Principal.Name()
	}
	if route >= 0 && f.man.Routes[route].Presign {
		c.Presigned = f.presigned(r)
	}
	var h Host = noRepo{}
	if r.Repo != nil {
		c.Repo = &abi.Repository{Name: r.Repo.Name, Format: r.Repo.Format, Settings: r.Repo.Settings}
		h = &repoHost{f: f, repo: r.Repo, upload: up}
	}
	req, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out, err := f.mod.Call(ctx, h, req)
	if err != nil {
		if errors.Is(err, ErrTimeout) || errors.Is(err, ErrTrapped) || errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("plugin %s: %w", f.man.ID, err) // a 500, its cause logged
		}
		return nil, err
	}
	var resp abi.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("plugin %s answered no response of the host interface: %w", f.man.ID, err)
	}
	return &resp, nil
}

// respond turns the plugin's response into the transport's.
func (f *Format) respond(r *format.Request, resp *abi.Response) (*format.Response, error) {
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("plugin %s answered status %d", f.man.ID, status)
	}
	if resp.Error != "" || status >= 400 {
		e := apierr.New(codeOf(status), "%s", cmp.Or(resp.Error, http.StatusText(status))).WithStatus(status)
		return f.Error(r, e), nil
	}
	var out *format.Response
	if resp.File != "" {
		p, ok := cleanPath(resp.File, false)
		if !ok || r.Repo == nil {
			return nil, fmt.Errorf("plugin %s serves a file it may not name: %q", f.man.ID, resp.File)
		}
		a, err := f.Env.Artifact(r.Repo, p)
		if errors.Is(err, meta.ErrNotFound) {
			return nil, format.NotFound("%s not found in repository %s", p, r.Repo.Name)
		}
		if err != nil {
			return nil, err
		}
		if out, err = f.Env.Serve(r, a, false); err != nil {
			return nil, err
		}
	} else {
		out = format.NewResponse(status)
		out.Body = []byte(resp.Body)
	}
	for k, v := range resp.Headers {
		if headerAllowed(k) && len(v) <= 4096 && !strings.ContainsAny(v, "\r\n") {
			out.Header.Set(k, v)
		}
	}
	return out, nil
}

// headerAllowed are the response headers a plugin may set: its
// documents' and its protocol's (X-...), never the registry's own
// (cookies, security policies, lengths, X-Depot-...).
func headerAllowed(k string) bool {
	k = http.CanonicalHeaderKey(k)
	if slices.Contains([]string{"Content-Type", "Content-Disposition", "Location", "Cache-Control", "Etag", "Last-Modified", "Link"}, k) {
		return true
	}
	return strings.HasPrefix(k, "X-") && !strings.HasPrefix(k, "X-Depot-") && len(k) <= 64
}

func codeOf(status int) apierr.Code {
	for _, c := range apierr.Codes() {
		if c.Status() == status {
			return c
		}
	}
	if status >= 500 {
		return apierr.Unavailable
	}
	return apierr.BadRequest
}

// repoHost is what a call on a route that names a repository reads: that
// repository's files.
type repoHost struct {
	f      *Format
	repo   *meta.Repository
	upload *abi.Upload // the write call's (abi.UploadPath)
}

func view(a *meta.Artifact) abi.Artifact {
	return abi.Artifact{Path: a.Path, Package: a.PackageName, Version: a.Version, Size: a.SizeBytes, SHA256: a.Checksums.SHA256,
		Type: a.ContentType, Uploaded: a.UploadedAt.UTC().Format("2006-01-02T15:04:05Z"), Attrs: a.Attrs, Companion: a.Companion}
}

func (h *repoHost) Artifact(_ context.Context, p string) ([]byte, error) {
	a, err := h.f.Env.Artifact(h.repo, p)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(view(a))
}

func (h *repoHost) List(_ context.Context, prefix string, limit int) ([]byte, error) {
	var as []meta.Artifact
	err := h.f.Env.View(func(tx *meta.Tx) error {
		var err error
		as, err = tx.FirstArtifactsUnder(h.repo.ID, prefix, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]abi.Artifact, 0, len(as))
	for i := range as {
		out = append(out, view(&as[i]))
	}
	return json.Marshal(out)
}

func (h *repoHost) Read(ctx context.Context, p string, off int64, buf []byte) (int, error) {
	if h.f.open == nil {
		return 0, errors.New("files are not read here")
	}
	digest, size := "", int64(0)
	if p == abi.UploadPath && h.upload != nil {
		digest, size = h.upload.Digest, h.upload.Size
	} else {
		a, err := h.f.Env.Artifact(h.repo, p)
		if err != nil {
			return 0, err
		}
		digest, size = a.Digest, a.SizeBytes
	}
	if off >= size {
		return 0, nil
	}
	file, err := h.f.open(ctx, digest)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	var n int
	if ra, ok := file.(io.ReaderAt); ok {
		n, err = ra.ReadAt(buf, off)
	} else if _, err = io.CopyN(io.Discard, file, off); err == nil {
		n, err = io.ReadFull(file, buf)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// noRepo is the host of a call on a route that names no repository: it
// reads nothing.
type noRepo struct{}

var errNoRepo = errors.New("this route names no repository")

func (noRepo) Artifact(context.Context, string) ([]byte, error)         { return nil, errNoRepo }
func (noRepo) List(context.Context, string, int) ([]byte, error)        { return nil, errNoRepo }
func (noRepo) Read(context.Context, string, int64, []byte) (int, error) { return 0, errNoRepo }

var (
	idRE     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
	prefixRE = regexp.MustCompile(`^/[a-z][a-z0-9-]{0,39}$`)
	segRE    = regexp.MustCompile(`^([A-Za-z0-9._~-]+|\{[a-z_][a-z0-9_]*(\.\.\.)?\})$`)
)

// CheckManifest checks what a module declares: an id, a format and a
// prefix of their own shape, at most 64 routes of well-formed paths, each
// naming its repository as {repo} exactly when it declares an action,
// and at most 8 roots under /.well-known/.
func CheckManifest(m abi.Manifest) error {
	switch {
	case !idRE.MatchString(m.ID):
		return fmt.Errorf("the plugin's id %q is not 1 to 40 lowercase letters, digits and dashes", m.ID)
	case !idRE.MatchString(m.Format):
		return fmt.Errorf("the plugin's format %q is not 1 to 40 lowercase letters, digits and dashes", m.Format)
	case !prefixRE.MatchString(m.Prefix):
		return fmt.Errorf("the plugin's prefix %q is not one path segment of lowercase letters, digits and dashes", m.Prefix)
	case m.Name == "" || len(m.Name) > 100 || m.Version == "" || len(m.Version) > 50:
		return errors.New("the plugin has a name (at most 100 bytes) and a version (at most 50)")
	case len(m.Routes) == 0 || len(m.Routes) > 64:
		return fmt.Errorf("the plugin declares %d routes; 1 to 64", len(m.Routes))
	case len(m.Roots) > 8:
		return fmt.Errorf("the plugin declares %d roots; at most 8", len(m.Roots))
	case len(m.Setup) > 8:
		return fmt.Errorf("the plugin declares %d setup snippets; at most 8", len(m.Setup))
	}
	for _, sn := range m.Setup {
		if sn.Title == "" || len(sn.Title) > 100 || len(sn.Text) > 4096 {
			return errors.New("a setup snippet has a title of at most 100 bytes and a text of at most 4 KiB")
		}
	}
	for i, rt := range m.Routes {
		if err := checkRoute(rt); err != nil {
			return fmt.Errorf("route %d (%s %s): %w", i, rt.Method, rt.Path, err)
		}
	}
	for _, root := range m.Roots {
		if !strings.HasPrefix(root, "/.well-known/") || path.Clean(root) != root || len(root) > 200 || strings.ContainsAny(root, "{}") {
			return fmt.Errorf("root %q is not a path under /.well-known/", root)
		}
	}
	return nil
}

func checkRoute(rt abi.Route) error {
	switch rt.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete:
	default:
		return errors.New("the method is one of GET, PUT, POST, PATCH and DELETE")
	}
	if rt.Write == (rt.Method == http.MethodGet) {
		return errors.New("GET routes read, the others write")
	}
	if _, ok := actions[rt.Action]; !ok && rt.Action != "" {
		return errors.New("the action is read, write or delete")
	}
	if rt.Write && rt.Action != abi.ActionWrite && rt.Action != abi.ActionDelete {
		return errors.New("a write route declares the action write or delete")
	}
	if !strings.HasPrefix(rt.Path, "/") || len(rt.Path) > 256 {
		return errors.New("the path starts with / and is at most 256 bytes")
	}
	segs := strings.Split(strings.Trim(rt.Path, "/"), "/")
	repo := false
	for i, s := range segs {
		if !segRE.MatchString(s) || s == "." || s == ".." || (strings.HasSuffix(s, "...}") && i != len(segs)-1) {
			return fmt.Errorf("segment %q is a literal, {name} or, last, {name...}", s)
		}
		repo = repo || s == "{repo}"
	}
	if repo != (rt.Action != "") {
		return errors.New("a route names its repository {repo} exactly when it declares an action")
	}
	if rt.Presign && (rt.Write || !repo) {
		return errors.New("only a read route that names its repository presigns URLs")
	}
	return nil
}
