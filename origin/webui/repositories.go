package webui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// pageSize is how many rows a table shows; ?page= walks them, with the
// API's paging.
const pageSize = 25

// pager is a table's place in its listing.
type pager struct {
	Number, Pages, Total int
	Prev, Next           string // links, "" at an end
}

// pageOf reads ?page= (1 when absent or not a number).
func pageOf(r *http.Request) app.Page {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	return app.Page{Number: n, Limit: pageSize}
}

// pagerOf links the pages of a listing of total items, keeping the
// page's other query parameters.
func pagerOf(r *http.Request, pg app.Page, total int) pager {
	pages := max(1, (total+pg.Limit-1)/pg.Limit)
	p := pager{Number: pg.Number, Pages: pages, Total: total}
	link := func(n int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		return r.URL.Path + "?" + q.Encode()
	}
	if pg.Number > 1 {
		p.Prev = link(min(pg.Number-1, pages))
	}
	if pg.Number < pages {
		p.Next = link(pg.Number + 1)
	}
	return p
}

type repoList struct {
	Repos   []meta.Repository
	Pager   pager
	Format  string
	Formats []string
	CanAdd  bool
}

func (u *UI) repositories(w http.ResponseWriter, c *call) error {
	format := c.r.URL.Query().Get("format")
	pg := pageOf(c.r)
	list, err := u.d.App.ListRepositories(c.r.Context(), c.p, app.RepoFilter{Format: format, Page: pg})
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "repositories", "Repositories", repoList{Repos: list.Items, Pager: pagerOf(c.r, list.Page, list.Total),
		Format: format, Formats: u.d.App.ServedFormats(), CanAdd: c.p.Role != meta.RoleViewer})
}

// repoForm creates or edits a repository.
type repoForm struct {
	Repo                      *meta.Repository // editing it; nil: a new one
	Name, Format, Description string
	Public                    bool
	Formats                   []string
	Err, Field                string
	// Own is the repository's own retention rule as the form shows it
	// (OwnRule: it has one), Default the installation's.
	OwnRule bool
	Own     meta.Retention
	Default meta.Retention
}

func (f repoForm) formError() string { return f.Err }

// refused renders a form again with the error, when it is the user's
// to mend (a 4xx, as the API classifies it: a name taken too); anything
// else is the page's error.
func refused(err error, field *string) (*apierr.Error, bool) {
	e := apierr.As(err, format.Domain)
	if e == nil || e.Status() >= 500 || e.Code == apierr.Unauthorized {
		return nil, false
	}
	if f, ok := e.Details["field"].(string); ok {
		*field = f
	}
	return e, true
}

func (u *UI) newRepository(w http.ResponseWriter, c *call) error {
	return u.render(w, c, 0, "repository-form", "New repository", repoForm{Formats: u.d.App.ServedFormats(), Format: "generic",
		Public: u.d.App.Settings().DefaultPublic})
}

func (u *UI) createRepository(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	form := repoForm{Name: strings.TrimSpace(f.Get("name")), Format: f.Get("format"), Description: f.Get("description"),
		Public: f.Get("public") == "on", Formats: u.d.App.ServedFormats()}
	repo, _, err := u.d.App.CreateRepository(c.r.Context(), c.p, app.NewRepository{Name: form.Name, Format: form.Format,
		Description: form.Description, Public: &form.Public})
	if e, ok := refused(err, &form.Field); ok {
		form.Err = e.Message
		return u.render(w, c, e.Status(), "repository-form", "New repository", form)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Repository "+repo.Name+" created.")
	http.Redirect(w, c.r, repoPath(repo), http.StatusSeeOther)
	return nil
}

func repoPath(r *meta.Repository) string { return Prefix + "/repositories/" + url.PathEscape(r.Name) }

type repoPage struct {
	Repo     *meta.Repository
	Packages []meta.PackageSummary
	Pager    pager
	Query    string
	Setup    []snippet
}

func (u *UI) repository(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	q := c.r.URL.Query().Get("q")
	pg := pageOf(c.r)
	list, err := u.d.App.ListPackages(c.r.Context(), c.p, app.PackageFilter{RepositoryID: repo.ID, Query: q, Page: pg})
	if err != nil {
		return err
	}
	setup := setupFor(repo, httpx.SeenURL(c.r), c.user.Username)
	if setup == nil { // an installed plugin's format: its manifest says
		setup = pluginSetup(u.d.App.PluginSetup(c.r.Context(), repo.Format), repo, httpx.SeenURL(c.r), c.user.Username)
	}
	return u.render(w, c, 0, "repository", repo.Name, repoPage{Repo: repo, Packages: list.Items, Query: q,
		Pager: pagerOf(c.r, list.Page, list.Total), Setup: setup})
}

func (u *UI) repositorySettings(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "repository-form", repo.Name+": settings", u.editForm(repo))
}

// editForm is the settings form of repo as it is.
func (u *UI) editForm(repo *meta.Repository) repoForm {
	f := repoForm{Repo: repo, Name: repo.Name, Format: repo.Format, Description: repo.Description, Public: repo.Public,
		Default: u.d.App.Settings().Retention()}
	if repo.Retention != nil {
		f.OwnRule, f.Own = true, *repo.Retention
	}
	return f
}

// updateRetention sets the repository's own retention rule, or with
// rule=default removes it.
func (u *UI) updateRetention(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	f := c.r.PostForm
	form := u.editForm(repo)
	change := &app.RetentionChange{}
	if f.Get("rule") == "own" {
		num := func(key string) int { n, _ := strconv.Atoi(strings.TrimSpace(f.Get(key))); return n }
		form.OwnRule, form.Own = true, meta.Retention{KeepLast: num("keep_last"), OlderThanDays: num("older_than_days"),
			KeepDownloadedDays: num("keep_downloaded_days")}
		change.Rule = &form.Own
	}
	_, _, err = u.d.App.UpdateRepository(c.r.Context(), c.p, repo.ID, app.RepositoryChange{Retention: change})
	if e, ok := refused(err, &form.Field); ok {
		form.Err = e.Message
		return u.render(w, c, e.Status(), "repository-form", repo.Name+": settings", form)
	}
	return u.after(w, c, err, "Retention rule of "+repo.Name+" saved.", repoPath(repo)+"/settings")
}

func (u *UI) updateRepository(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	f := c.r.PostForm
	form := u.editForm(repo)
	form.Description, form.Public = f.Get("description"), f.Get("public") == "on"
	updated, _, err := u.d.App.UpdateRepository(c.r.Context(), c.p, repo.ID, app.RepositoryChange{Description: &form.Description, Public: &form.Public})
	if e, ok := refused(err, &form.Field); ok {
		form.Err = e.Message
		return u.render(w, c, e.Status(), "repository-form", repo.Name+": settings", form)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Settings of "+updated.Name+" saved.")
	http.Redirect(w, c.r, repoPath(updated), http.StatusSeeOther)
	return nil
}

func (u *UI) deleteRepository(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	if c.r.PostForm.Get("confirm") != repo.Name {
		return apierr.Invalid("confirm", "type the repository's name (%s) to delete it", repo.Name)
	}
	if _, err := u.d.App.DeleteRepository(c.r.Context(), c.p, repo.ID); err != nil {
		return err
	}
	u.flash(w, c.r, "Repository "+repo.Name+" deleted.")
	http.Redirect(w, c.r, Prefix+"/repositories", http.StatusSeeOther)
	return nil
}

type packagePage struct {
	Repo     *meta.Repository
	Name     string
	Versions []meta.VersionSummary
	// Info is what the package says of itself (nil: not read yet).
	Info *meta.PackageInfo
}

func (u *UI) packagePage(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	name := c.r.URL.Query().Get("name")
	versions, err := u.d.App.ListVersions(c.r.Context(), c.p, name, repo.ID)
	if err != nil {
		return err
	}
	info, err := u.d.App.PackageInfo(c.r.Context(), c.p, repo.ID, name)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "package", name, packagePage{Repo: repo, Name: name, Versions: versions, Info: info})
}

type versionPage struct {
	Repo          *meta.Repository
	Name, Version string
	Files         []versionFile
	// Keys are the active signing keys a file can be signed with.
	Keys []meta.SigningKey
	Back string
}

// versionFile is a file of a version with its signatures checked.
type versionFile struct {
	meta.Artifact
	Signatures *app.Verification
}

func (u *UI) versionPage(w http.ResponseWriter, c *call) error {
	repo, err := u.d.App.GetRepository(c.r.Context(), c.p, c.r.PathValue("repo"))
	if err != nil {
		return err
	}
	q := c.r.URL.Query()
	files, err := u.d.App.VersionFiles(c.r.Context(), c.p, repo.ID, q.Get("name"), q.Get("version"))
	if err != nil {
		return err
	}
	page := versionPage{Repo: repo, Name: q.Get("name"), Version: q.Get("version"), Back: c.r.URL.RequestURI()}
	for _, f := range files {
		v, err := u.d.App.Verify(c.r.Context(), c.p, f.ID)
		if err != nil {
			return err
		}
		page.Files = append(page.Files, versionFile{Artifact: f, Signatures: v})
	}
	keys, err := u.d.App.SigningKeys(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Status == meta.KeyActive {
			page.Keys = append(page.Keys, k)
		}
	}
	return u.render(w, c, 0, "version", q.Get("name")+" "+q.Get("version"), page)
}

// download answers an artifact's bytes to a signed-in browser (the
// API's download wants a bearer token a page cannot send).
func (u *UI) download(w http.ResponseWriter, c *call) error {
	resp, err := u.d.App.DownloadArtifact(c.r.Context(), c.p, c.r.PathValue("id"), nil)
	if err != nil {
		return err
	}
	return httpx.WriteResponse(w, c.r, resp, u.d.App.Blobs)
}
