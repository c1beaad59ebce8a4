package webui

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// userRow is a user as the administrators' pages show it.
type userRow struct {
	meta.User
	Path   string // its page
	Source string // local, ldap or oidc
	Self   bool   // the signed-in administrator
}

func rowOf(u *meta.User, self string) userRow {
	src := u.Source
	if src == "" {
		src = meta.SourceLocal
	}
	return userRow{User: *u, Path: userPath(u), Source: src, Self: u.ID == self}
}

// userPath is a user's page, named by username (by id for a user named
// "new", whose name is the creation page's).
func userPath(u *meta.User) string {
	ref := u.Username
	if strings.EqualFold(ref, "new") {
		ref = u.ID
	}
	return Prefix + "/users/" + url.PathEscape(ref)
}

// findUser is the user named by id or username (case-insensitively, as
// the API takes either), among all users.
func (u *UI) findUser(c *call, ref string) (*meta.User, error) {
	users, err := u.d.App.ListUsers(c.r.Context(), c.p)
	if err != nil {
		return nil, err
	}
	for i := range users {
		if users[i].ID == ref {
			return &users[i], nil
		}
	}
	for i := range users {
		if strings.EqualFold(users[i].Username, ref) {
			return &users[i], nil
		}
	}
	return nil, apierr.New(apierr.NotFound, "there is no user %q", ref)
}

// userList is the table of every user (the app lists them whole: no
// paging).
type userList struct {
	Users []userRow
	Err   string
}

func (l userList) formError() string { return l.Err }

func (u *UI) usersPage(w http.ResponseWriter, c *call, status int, errMsg string) error {
	users, err := u.d.App.ListUsers(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	l := userList{Err: errMsg}
	for i := range users {
		l.Users = append(l.Users, rowOf(&users[i], c.p.UserID))
	}
	return u.render(w, c, status, "users", "Users", l)
}

func (u *UI) users(w http.ResponseWriter, c *call) error { return u.usersPage(w, c, 0, "") }

// userForm creates a local user.
type userForm struct {
	Username, Email, Role string
	Roles                 []string
	Err, Field            string
}

func (f userForm) formError() string { return f.Err }

var roles = []string{string(meta.RoleUser), string(meta.RoleViewer), string(meta.RoleAdmin)}

func (u *UI) newUser(w http.ResponseWriter, c *call) error {
	return u.render(w, c, 0, "user-form", "New user", userForm{Role: string(meta.RoleUser), Roles: roles})
}

func (u *UI) createUser(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	form := userForm{Username: strings.TrimSpace(f.Get("username")), Email: strings.TrimSpace(f.Get("email")), Role: f.Get("role"), Roles: roles}
	// The password is an initial one: the user changes it at the first
	// sign-in, before anything else.
	created, _, err := u.d.App.CreateUser(c.r.Context(), c.p, app.NewUser{Username: form.Username, Email: form.Email,
		Password: f.Get("password"), Role: meta.Role(form.Role), MustChangePassword: true})
	if e, ok := refused(err, &form.Field); ok {
		form.Err = e.Message
		if form.Field == "" && e.Code == apierr.Conflict {
			form.Field = "username" // the name is taken
		}
		return u.render(w, c, e.Status(), "user-form", "New user", form)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "User "+created.Username+" created: they choose their own password when they first sign in.")
	http.Redirect(w, c.r, Prefix+"/users", http.StatusSeeOther)
	return nil
}

// userPage is one user: details, groups, grants, and disabling and
// deleting.
type userPage struct {
	User       userRow
	Groups     []meta.Group
	Grants     []app.NamedPermission
	Err, Field string
}

func (p userPage) formError() string { return p.Err }

func (u *UI) userPageOf(w http.ResponseWriter, c *call, status int, user *meta.User, errMsg, field string) error {
	groups, err := u.d.App.ListGroups(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	p := userPage{User: rowOf(user, c.p.UserID), Err: errMsg, Field: field}
	for _, g := range groups {
		if slices.Contains(g.Members, user.ID) {
			p.Groups = append(p.Groups, g)
		}
	}
	grants, err := u.d.App.ListNamedPermissions(c.r.Context(), c.p, "")
	if err != nil {
		return err
	}
	for _, g := range grants {
		if g.UserID == user.ID {
			p.Grants = append(p.Grants, g)
		}
	}
	return u.render(w, c, status, "user", "User "+user.Username, p)
}

func (u *UI) userDetails(w http.ResponseWriter, c *call) error {
	user, err := u.findUser(c, c.r.PathValue("user"))
	if err != nil {
		return err
	}
	return u.userPageOf(w, c, 0, user, "", "")
}

// setDisabled disables or enables a user; the form says which page it
// came from (the list or the user's), where a refusal is shown.
func (u *UI) setDisabled(disabled bool) handler {
	return func(w http.ResponseWriter, c *call) error {
		user, err := u.findUser(c, c.r.PathValue("user"))
		if err != nil {
			return err
		}
		fromUser := c.r.PostForm.Get("from") == "user"
		changed, _, err := u.d.App.SetUserDisabled(c.r.Context(), c.p, user.ID, disabled)
		var field string
		if e, ok := refused(err, &field); ok {
			if fromUser {
				return u.userPageOf(w, c, e.Status(), user, e.Message, "")
			}
			return u.usersPage(w, c, e.Status(), e.Message)
		}
		if err != nil {
			return err
		}
		msg := "User " + changed.Username + " is enabled: they may sign in again (their revoked API tokens stay revoked)."
		if disabled {
			msg = "User " + changed.Username + " is disabled: their sessions are ended and their API tokens revoked."
		}
		u.flash(w, c.r, msg)
		back := Prefix + "/users"
		if fromUser {
			back = userPath(changed)
		}
		http.Redirect(w, c.r, back, http.StatusSeeOther)
		return nil
	}
}

func (u *UI) deleteUser(w http.ResponseWriter, c *call) error {
	user, err := u.findUser(c, c.r.PathValue("user"))
	if err != nil {
		return err
	}
	if c.r.PostForm.Get("confirm") != user.Username {
		return u.userPageOf(w, c, http.StatusBadRequest, user, "Type the username ("+user.Username+") to delete the user.", "confirm")
	}
	_, err = u.d.App.DeleteUser(c.r.Context(), c.p, user.ID)
	var field string
	if e, ok := refused(err, &field); ok {
		return u.userPageOf(w, c, e.Status(), user, e.Message, "")
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "User "+user.Username+" deleted, with their API tokens, sessions and permissions.")
	http.Redirect(w, c.r, Prefix+"/users", http.StatusSeeOther)
	return nil
}
