package webui

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

// Edge nodes: administrators register them (the credential shown once,
// with the command that starts the node), give them repositories and
// deregister them (app.ListEdgeNodes...).

const edgesPath = Prefix + "/edges"

func edgePath(id string) string { return edgesPath + "/" + url.PathEscape(id) }

// edgeForm registers a node.
type edgeForm struct {
	Name, URL, Region string
}

type edgeList struct {
	Edges      []app.EdgeNode
	Form       edgeForm
	Err, Field string
}

func (l edgeList) formError() string { return l.Err }

func (u *UI) edgeList(w http.ResponseWriter, c *call, status int, l edgeList) error {
	edges, err := u.d.App.ListEdgeNodes(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	slices.SortFunc(edges, func(a, b app.EdgeNode) int { return strings.Compare(a.Name, b.Name) })
	l.Edges = edges
	return u.render(w, c, status, "edges", "Edge nodes", l)
}

func (u *UI) edges(w http.ResponseWriter, c *call) error { return u.edgeList(w, c, 0, edgeList{}) }

// edgePage is one node; Token and Command are set once, on the answer
// to its registration.
type edgePage struct {
	Edge    *app.EdgeNode
	Token   string
	Command string
	Assign  []meta.Repository // what may be assigned: the repositories it lacks
	Rows    int               // the choice's height
	Err     string
	Field   string
}

func (p edgePage) formError() string { return p.Err }

func (u *UI) createEdge(w http.ResponseWriter, c *call) error {
	pf := c.r.PostForm
	f := edgeForm{Name: strings.TrimSpace(pf.Get("name")), URL: strings.TrimSpace(pf.Get("url")), Region: strings.TrimSpace(pf.Get("region"))}
	e, token, _, err := u.d.App.CreateEdgeNode(c.r.Context(), c.p, app.NewEdgeNode{Name: f.Name, URL: f.URL, Region: f.Region})
	l := edgeList{Form: f}
	if ae, ok := refused(err, &l.Field); ok {
		l.Err = ae.Message
		return u.edgeList(w, c, ae.Status(), l)
	}
	if err != nil {
		return err
	}
	// The credential is shown in this answer only (no redirect that
	// would have to carry it).
	p, err := u.edgePage(c, e)
	if err != nil {
		return err
	}
	p.Token, p.Command = token, startCommand(e, token, httpx.SeenURL(c.r))
	return u.render(w, c, http.StatusCreated, "edge", "Edge node "+e.Name, p)
}

// startCommand is how the node is started with its credential, as
// `depot edge create` prints it: the origin is the address this browser
// uses, the listening port the one of the node's URL.
func startCommand(e *app.EdgeNode, token, origin string) string {
	listen := "<addr:port>"
	if v, err := url.Parse(e.URL); err == nil && v.Port() != "" {
		listen = net.JoinHostPort("", v.Port())
	}
	return "DEPOT_NODE_TOKEN=" + token + " \\\n  depot edge --origin " + strings.TrimRight(origin, "/") + " --node-id " + e.ID + " \\\n" +
		"  --listen " + listen + " --cache-dir <dir>"
}

func (u *UI) edgePage(c *call, e *app.EdgeNode) (*edgePage, error) {
	repos, err := u.allRepositories(c)
	if err != nil {
		return nil, err
	}
	p := &edgePage{Edge: e}
	for _, r := range repos {
		if !slices.Contains(e.RepositoryIDs, r.ID) {
			p.Assign = append(p.Assign, r)
		}
	}
	p.Rows = min(max(len(p.Assign), 4), 10)
	return p, nil
}

func (u *UI) edge(w http.ResponseWriter, c *call) error {
	e, err := u.d.App.GetEdgeNode(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	p, err := u.edgePage(c, e)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "edge", "Edge node "+e.Name, p)
}

func (u *UI) assignEdge(w http.ResponseWriter, c *call) error {
	e, err := u.d.App.GetEdgeNode(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	repos := c.r.PostForm["repository"]
	assigned, _, err := u.d.App.AssignRepositories(c.r.Context(), c.p, e.ID, repos)
	if ae, ok := refused(err, new(string)); ok {
		p, err := u.edgePage(c, e)
		if err != nil {
			return err
		}
		p.Err, p.Field = ae.Message, "repository"
		if len(repos) == 0 {
			p.Err = "Choose the repositories to assign."
		}
		return u.render(w, c, ae.Status(), "edge", "Edge node "+e.Name, p)
	}
	if err != nil {
		return err
	}
	e = assigned
	msg := "Assigned to " + e.Name + ": it fetches what they hold and serves them."
	if len(repos) == 1 {
		for _, r := range e.Repositories {
			if r.ID == repos[0] || r.Name == repos[0] {
				msg = r.Name + " assigned to " + e.Name + ": it fetches what it holds and serves it."
			}
		}
	}
	u.flash(w, c.r, msg)
	http.Redirect(w, c.r, edgePath(e.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) unassignEdge(w http.ResponseWriter, c *call) error {
	e, err := u.d.App.GetEdgeNode(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	name := c.r.PathValue("repo")
	for _, r := range e.Repositories {
		if r.ID == name {
			name = r.Name
		}
	}
	if e, _, err = u.d.App.UnassignRepository(c.r.Context(), c.p, e.ID, c.r.PathValue("repo")); err != nil {
		return err
	}
	u.flash(w, c.r, name+" is no longer served by "+e.Name+", which drops its copy.")
	http.Redirect(w, c.r, edgePath(e.ID), http.StatusSeeOther)
	return nil
}

func (u *UI) deleteEdge(w http.ResponseWriter, c *call) error {
	e, err := u.d.App.GetEdgeNode(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := u.d.App.DeleteEdgeNode(c.r.Context(), c.p, e.ID); err != nil {
		return err
	}
	u.flash(w, c.r, "Edge node "+e.Name+" deregistered: its credential stopped working.")
	http.Redirect(w, c.r, edgesPath, http.StatusSeeOther)
	return nil
}
