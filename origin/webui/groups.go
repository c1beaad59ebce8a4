package webui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

func groupPath(g *meta.Group) string { return Prefix + "/groups/" + url.PathEscape(g.ID) }

// groupRow is a group in the list.
type groupRow struct {
	meta.Group
	Path string
}

// groupList is every group (the app lists them whole: no paging) and
// the form making one.
type groupList struct {
	Groups            []groupRow
	Name, Description string
	Err, Field        string
}

func (l groupList) formError() string { return l.Err }

func (u *UI) groupsPage(w http.ResponseWriter, c *call, status int, l groupList) error {
	groups, err := u.d.App.ListGroups(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	for i := range groups {
		l.Groups = append(l.Groups, groupRow{Group: groups[i], Path: groupPath(&groups[i])})
	}
	return u.render(w, c, status, "groups", "Groups", l)
}

func (u *UI) groups(w http.ResponseWriter, c *call) error { return u.groupsPage(w, c, 0, groupList{}) }

func (u *UI) createGroup(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	l := groupList{Name: strings.TrimSpace(f.Get("name")), Description: f.Get("description")}
	g, _, err := u.d.App.CreateGroup(c.r.Context(), c.p, app.NewGroup{Name: l.Name, Description: l.Description})
	if e, ok := refused(err, &l.Field); ok {
		l.Err = e.Message
		if l.Field == "" && e.Code == apierr.Conflict {
			l.Field = "name" // the name is taken
		}
		return u.groupsPage(w, c, e.Status(), l)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Group "+g.Name+" created: add its members.")
	http.Redirect(w, c.r, groupPath(g), http.StatusSeeOther)
	return nil
}

// findGroup is the group named by id or name (case-insensitively).
func (u *UI) findGroup(c *call, ref string) (*meta.Group, error) {
	groups, err := u.d.App.ListGroups(c.r.Context(), c.p)
	if err != nil {
		return nil, err
	}
	for i := range groups {
		if groups[i].ID == ref {
			return &groups[i], nil
		}
	}
	for i := range groups {
		if strings.EqualFold(groups[i].Name, ref) {
			return &groups[i], nil
		}
	}
	return nil, apierr.New(apierr.NotFound, "there is no group %q", ref)
}

// groupPage is one group: its members, the form adding some, and what
// it is granted.
type groupPage struct {
	Group      *meta.Group
	Members    []userRow
	Grants     []app.NamedPermission
	Usernames  []string // every user, to pick from
	Add        string   // the usernames typed
	Err, Field string
}

func (p groupPage) formError() string { return p.Err }

func (u *UI) groupPageOf(w http.ResponseWriter, c *call, status int, p groupPage) error {
	users, err := u.d.App.ListUsers(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	byID := map[string]*meta.User{}
	for i := range users {
		byID[users[i].ID] = &users[i]
		p.Usernames = append(p.Usernames, users[i].Username)
	}
	for _, id := range p.Group.Members {
		if m := byID[id]; m != nil {
			p.Members = append(p.Members, rowOf(m, c.p.UserID))
		}
	}
	grants, err := u.d.App.ListNamedPermissions(c.r.Context(), c.p, "")
	if err != nil {
		return err
	}
	for _, g := range grants {
		if g.GroupID == p.Group.ID {
			p.Grants = append(p.Grants, g)
		}
	}
	return u.render(w, c, status, "group", "Group "+p.Group.Name, p)
}

func (u *UI) group(w http.ResponseWriter, c *call) error {
	g, err := u.findGroup(c, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	return u.groupPageOf(w, c, 0, groupPage{Group: g})
}

// addMembers adds the users named (by username, separated by commas or
// spaces) to the group.
func (u *UI) addMembers(w http.ResponseWriter, c *call) error {
	g, err := u.findGroup(c, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	typed := c.r.PostForm.Get("usernames")
	names := strings.FieldsFunc(typed, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	var updated *meta.Group
	if len(names) == 0 {
		err = apierr.Invalid("user_ids", "Type the usernames of the members to add.")
	} else {
		updated, _, err = u.d.App.AddGroupMembers(c.r.Context(), c.p, g.ID, names)
	}
	p := groupPage{Group: g, Add: typed}
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.groupPageOf(w, c, e.Status(), p)
	}
	if err != nil {
		return err
	}
	msg := "Added to " + updated.Name + ": " + strings.Join(names, ", ") + "."
	if len(msg) > 300 {
		msg = "Added " + strconv.Itoa(len(names)) + " members to " + updated.Name + "."
	}
	u.flash(w, c.r, msg)
	http.Redirect(w, c.r, groupPath(updated), http.StatusSeeOther)
	return nil
}

func (u *UI) removeMember(w http.ResponseWriter, c *call) error {
	g, _, err := u.d.App.RemoveGroupMember(c.r.Context(), c.p, c.r.PathValue("id"), c.r.PathValue("user"))
	if err != nil {
		return err
	}
	u.flash(w, c.r, c.r.PathValue("user")+" is no longer in "+g.Name+".")
	http.Redirect(w, c.r, groupPath(g), http.StatusSeeOther)
	return nil
}
