package webui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// actions are what a grant may allow, in the order the pages list them.
var actions = []string{meta.ActionRead, meta.ActionWrite, meta.ActionDelete, meta.ActionAdmin}

// permForm grants actions on a repository to a user or a group.
type permForm struct {
	Repository string
	Kind       string // user or group
	Grantee    string // its name
	Actions    map[string]bool
}

// permPage lists grants: every one (administrators), or one
// repository's (its administrators, who may grant and revoke there; its
// other readers see the grants the app shows them, without the forms).
// The app lists them whole: no paging.
type permPage struct {
	Repo       *meta.Repository // nil: every repository's
	Grants     []app.NamedPermission
	CanManage  bool
	Form       permForm
	Actions    []string
	Usernames  []string // to pick from (administrators)
	GroupNames []string
	Err, Field string
}

func (p permPage) formError() string { return p.Err }

// permissionsPath is the page of grants, of repo when not "".
func permissionsPath(repo string) string {
	if repo == "" {
		return Prefix + "/permissions"
	}
	return Prefix + "/permissions?repository=" + url.QueryEscape(repo)
}

// forbiddenAll refuses the list of every grant to a non-administrator.
func forbiddenAll(c *call) error {
	if c.p.IsAdmin() {
		return nil
	}
	return apierr.New(apierr.Forbidden, "this page is for administrators; a repository's permissions are on its settings page")
}

// permissionsPage renders the grants of repo ("": all) with p's form
// and error.
func (u *UI) permissionsPage(w http.ResponseWriter, c *call, status int, repo string, p permPage) error {
	ctx := c.r.Context()
	repoID, title := "", "Permissions"
	if repo == "" {
		if err := forbiddenAll(c); err != nil {
			return err
		}
		p.CanManage = true
	} else {
		r, err := u.d.App.GetRepository(ctx, c.p, repo)
		if err != nil {
			return err
		}
		if p.CanManage, err = u.d.App.CanManagePermissions(ctx, c.p, r.ID); err != nil {
			return err
		}
		p.Repo, repoID, title = r, r.ID, "Permissions of "+r.Name
		p.Form.Repository = r.Name
	}
	grants, err := u.d.App.ListNamedPermissions(ctx, c.p, repoID)
	if err != nil {
		return err
	}
	p.Grants, p.Actions = grants, actions
	if p.Form.Kind == "" {
		p.Form.Kind = "user"
	}
	if p.Form.Actions == nil {
		p.Form.Actions = map[string]bool{meta.ActionRead: true}
	}
	if c.p.IsAdmin() { // only administrators may list users and groups
		users, err := u.d.App.ListUsers(ctx, c.p)
		if err != nil {
			return err
		}
		for _, x := range users {
			p.Usernames = append(p.Usernames, x.Username)
		}
		groups, err := u.d.App.ListGroups(ctx, c.p)
		if err != nil {
			return err
		}
		for _, g := range groups {
			p.GroupNames = append(p.GroupNames, g.Name)
		}
	}
	return u.render(w, c, status, "permissions", title, p)
}

// permissions is the list of grants: ?repository= one repository's,
// which its administrators may open; without it every grant, for
// administrators. ?user= or ?group= fills the grant form in.
func (u *UI) permissions(w http.ResponseWriter, c *call) error {
	q := c.r.URL.Query()
	var form permForm
	if g := q.Get("group"); g != "" {
		form.Kind, form.Grantee = "group", g
	} else if name := q.Get("user"); name != "" {
		form.Kind, form.Grantee = "user", name
	}
	return u.permissionsPage(w, c, 0, q.Get("repository"), permPage{Form: form})
}

// grant makes a grant; the form's "for" is the repository whose page it
// came from ("": the list of all).
func (u *UI) grant(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	back := f.Get("for")
	if back == "" {
		if err := forbiddenAll(c); err != nil {
			return err
		}
	}
	form := permForm{Repository: strings.TrimSpace(f.Get("repository")), Kind: f.Get("kind"), Grantee: strings.TrimSpace(f.Get("grantee")),
		Actions: map[string]bool{}}
	if back != "" {
		form.Repository = back
	}
	in := app.NewPermission{RepositoryID: form.Repository}
	for _, a := range actions {
		if f.Get("action_"+a) == "on" {
			form.Actions[a] = true
			in.Permissions = append(in.Permissions, a)
		}
	}
	var err error
	switch {
	case form.Repository == "":
		err = apierr.Invalid("repository_id", "Name the repository to grant on.")
	case form.Grantee == "":
		err = apierr.Invalid("grantee", "Name the user or the group to grant to.")
	case form.Kind == "group":
		in.GroupID = form.Grantee
	default:
		form.Kind, in.UserID = "user", form.Grantee
	}
	var perm *meta.Permission
	if err == nil {
		perm, _, err = u.d.App.CreatePermission(c.r.Context(), c.p, in)
	}
	page := permPage{Form: form}
	if e, ok := refused(err, &page.Field); ok {
		page.Err = e.Message
		return u.permissionsPage(w, c, e.Status(), back, page)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Granted "+strings.Join(perm.Permissions, ", ")+" on "+form.Repository+" to "+form.Kind+" "+form.Grantee+".")
	http.Redirect(w, c.r, permissionsPath(back), http.StatusSeeOther)
	return nil
}

// revoke deletes a grant, back to the page it was revoked on.
func (u *UI) revoke(w http.ResponseWriter, c *call) error {
	back := c.r.PostForm.Get("for")
	if back == "" {
		if err := forbiddenAll(c); err != nil {
			return err
		}
	}
	_, err := u.d.App.DeletePermission(c.r.Context(), c.p, c.r.PathValue("id"))
	var field string
	if e, ok := refused(err, &field); ok {
		return u.permissionsPage(w, c, e.Status(), back, permPage{Err: e.Message})
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "The permission is revoked.")
	http.Redirect(w, c.r, permissionsPath(back), http.StatusSeeOther)
	return nil
}
