package webui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// Prefix is where the pages are served.
const Prefix = "/ui"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps are what the pages need.
type Deps struct {
	App *app.App
	// Key MACs the forms' tokens: the same on every origin (derived from
	// the JWT secret), so a form rendered by one is accepted by another.
	Key []byte
	Log *slog.Logger
	// SignIn opens a login session with a password, limited and audited
	// as the API's sign-in (api.Server.SignIn).
	SignIn func(r *http.Request, in app.Credentials) (*app.TokenPair, uint64, error)
	// BeginSSO sends the browser to the identity provider, to come back
	// to next (api.Server.BeginSSO).
	BeginSSO func(w http.ResponseWriter, r *http.Request, next string) error
	// OpenAPI is the API's document, rendered by the API page.
	OpenAPI []byte
	// Version is shown in the footer.
	Version string
	Now     func() time.Time
}

// UI serves the pages.
type UI struct {
	d Deps
	// draining ends when the server shuts down: the live event log's
	// long polls answer at once instead of holding the shutdown up.
	draining context.Context
	drain    context.CancelFunc
	mux      *http.ServeMux
	pages    map[string]*template.Template
	static   map[string]asset // by name
}

type asset struct {
	body        []byte
	contentType string
	version     string // a digest of body: URLs carry it, so caches keep it for long
}

// New parses the templates and reads the static files.
func New(d Deps) (*UI, error) {
	if d.App == nil || d.SignIn == nil || d.BeginSSO == nil || len(d.Key) < 16 {
		return nil, errors.New("webui: the application and a key are required")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	u := &UI{d: d, mux: http.NewServeMux(), pages: map[string]*template.Template{}, static: map[string]asset{}}
	err := fs.WalkDir(staticFS, "static", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		body, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		u.static[path.Base(p)] = asset{body: body, contentType: mime.TypeByExtension(path.Ext(p)), version: hex.EncodeToString(sum[:6])}
		return nil
	})
	if err != nil {
		return nil, err
	}
	entries, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(u.funcs()).ParseFS(templateFS, "templates/layout.html", "templates/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("webui: template %s: %w", name, err)
		}
		u.pages[name] = t
	}
	u.draining, u.drain = context.WithCancel(context.Background())
	u.routes()
	return u, nil
}

// Drain ends the long polls in progress and those to come: the process
// is shutting down.
func (u *UI) Drain() { u.drain() }

// ServeHTTP serves a page, with the headers every answer carries.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	u.mux.ServeHTTP(w, r)
}

// access is who may open a page.
type access int

const (
	public   access = iota // anyone (the sign-in pages)
	signedIn               // a signed-in user who changed the initial password
	pending                // signed in, also while the initial password must be changed
	admin                  // an administrator
)

// call is one request to a page: who asks, and what the layout shows.
type call struct {
	r    *http.Request
	p    *auth.Principal // nil: nobody signed in
	user *meta.User
	csrf string
	// parts is a posted file upload's multipart body past its token (an
	// upload page's; see checkUpload).
	parts *multipart.Reader
}

type handler func(w http.ResponseWriter, c *call) error

// page routes pattern ("GET /repositories", under Prefix) to h for
// those who may open it.
func (u *UI) page(pattern string, a access, h handler) {
	u.route(pattern, a, false, h)
}

// uploadPage routes a form posting a file (multipart/form-data, its
// token first; see checkUpload) to h.
func (u *UI) uploadPage(pattern string, a access, h handler) {
	u.route(pattern, a, true, h)
}

func (u *UI) route(pattern string, a access, upload bool, h handler) {
	method, p, ok := strings.Cut(pattern, " ")
	if !ok {
		method, p = "", pattern // any method
	}
	u.mux.HandleFunc(strings.TrimSpace(method+" "+Prefix+p), func(w http.ResponseWriter, r *http.Request) {
		c := &call{r: r}
		var err error
		if c.p, err = u.principal(w, r); err != nil {
			u.fail(w, c, err)
			return
		}
		if c.p != nil {
			if c.user, err = u.d.App.Me(r.Context(), c.p); err != nil {
				u.fail(w, c, err)
				return
			}
			c.csrf = u.csrfToken(c.p)
		}
		switch {
		case a == public:
		case c.p == nil:
			u.toSignIn(w, r)
			return
		case c.p.MustChangePassword && a != pending:
			http.Redirect(w, r, Prefix+"/password", http.StatusSeeOther)
			return
		case a == admin && !c.p.IsAdmin():
			u.fail(w, c, apierr.New(apierr.Forbidden, "this page is for administrators"))
			return
		}
		if r.Method == http.MethodPost && upload {
			if c.parts, err = u.checkUpload(r, c.p); err != nil {
				u.fail(w, c, err)
				return
			}
			r = r.WithContext(meta.WithActor(r.Context(), c.p.Actor(), u.d.Now()))
			c.r = r
		} else if r.Method == http.MethodPost {
			if err := u.checkPost(r, c.p); err != nil {
				u.fail(w, c, err)
				return
			}
			if c.p != nil {
				r = r.WithContext(meta.WithActor(r.Context(), c.p.Actor(), u.d.Now()))
				c.r = r
			}
		}
		if err := h(w, c); err != nil {
			u.fail(w, c, err)
		}
	})
}

// toSignIn sends the browser to the sign-in page, to come back here.
func (u *UI) toSignIn(w http.ResponseWriter, r *http.Request) {
	next := ""
	if r.Method == http.MethodGet && r.URL.Path != Prefix+"/" {
		next = "?next=" + template.URLQueryEscaper(r.URL.RequestURI())
	}
	http.Redirect(w, r, Prefix+"/login"+next, http.StatusSeeOther)
}

// view is what every template gets: the page's own data in Data.
type view struct {
	Title   string
	User    *meta.User
	Admin   bool
	CSRF    string
	Nav     []navItem
	Flash   string
	Error   string
	Base    string // scheme://host the browser uses
	Version string
	Path    string
	Data    any
}

// render writes page name with data, status 200 unless given.
func (u *UI) render(w http.ResponseWriter, c *call, status int, name, title string, data any) error {
	t := u.pages[name]
	if t == nil {
		return fmt.Errorf("webui: no template %s", name)
	}
	v := view{Title: title, User: c.user, CSRF: c.csrf, Base: httpx.SeenURL(c.r), Version: u.d.Version,
		Path: c.r.URL.Path, Data: data}
	if c.p != nil {
		v.Admin = c.p.IsAdmin()
		if !c.p.MustChangePassword {
			v.Nav = nav(c.p, c.r.URL.Path)
		}
	}
	v.Flash = takeFlash(w, c.r)
	if f, ok := data.(interface{ formError() string }); ok {
		v.Error = f.formError()
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("webui: rendering %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// fail answers an error as a page: its status and message (an internal
// error's detail is logged, not shown).
func (u *UI) fail(w http.ResponseWriter, c *call, err error) {
	e := apierr.As(err, format.Domain) // as the API classifies it
	if e == nil {
		id := httpx.RequestID(c.r.Context())
		u.d.Log.Error("web page failed", "path", c.r.URL.Path, "err", err, "request_id", id)
		e = apierr.InternalError(id)
	}
	if e.Code == apierr.Unauthorized {
		u.clearSession(w, c.r)
		u.toSignIn(w, c.r)
		return
	}
	status := e.Status()
	if err := u.render(w, c, status, "error", http.StatusText(status), errorPage{Status: status, Message: e.Message}); err != nil {
		u.d.Log.Error("rendering an error page", "error", err)
		http.Error(w, e.Message, status)
	}
}

type errorPage struct {
	Status  int
	Message string
}

// funcs are the templates' helpers.
func (u *UI) funcs() template.FuncMap {
	return template.FuncMap{
		"static": func(name string) string {
			a, ok := u.static[name]
			if !ok {
				panic("webui: no static file " + name)
			}
			return Prefix + "/static/" + a.version + "/" + name
		},
		"bytes":  config.FormatBytes,
		"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"prefix": func() string { return Prefix },
		"list":   func(s ...string) []string { return s },
		"has":    func(list []string, s string) bool { return slices.Contains(list, s) },
		"slug": func(s string) string {
			return strings.Trim(strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
					return r
				}
				if r >= 'A' && r <= 'Z' {
					return r + 'a' - 'A'
				}
				return '-'
			}, s), "-")
		},
	}
}

// serveStatic answers /ui/static/<version>/<name>; any version serves
// the current file, kept for a year when the version is its own.
func (u *UI) serveStatic(w http.ResponseWriter, r *http.Request) {
	a, ok := u.static[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	if r.PathValue("version") == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	_, _ = w.Write(a.body)
}
