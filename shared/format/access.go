package format

import (
	"errors"
	"slices"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// What every format shares: finding the repository a request names and
// checking access, and reading its artifacts.

// Repo returns repository name, without its totals, if it has one of
// formats and the caller may do action on it (see Access).
func (d *Env) Repo(r *Request, name, action string, formats ...string) (*meta.Repository, error) {
	// Only a yes is remembered: a refusal is an error value its callers
	// may dress further.
	decide := func(tx *meta.Tx) (*meta.Repository, bool, error) {
		repo, err := tx.RepoByName(name)
		switch {
		case errors.Is(err, meta.ErrNotFound):
			repo = nil
		case err != nil:
			return nil, false, err // a store failure is not "no such repository"
		case !slices.Contains(formats, repo.Format):
			// Not here; but one who may see it is told where it is.
			if Access(tx, r.Principal, repo, name, meta.ActionRead) == nil {
				return nil, false, &RepoNotFoundError{Name: name, Wanted: formats, Format: repo.Format, URL: d.repoURL(r, repo)}
			}
			repo = nil
		}
		if err := Access(tx, r.Principal, repo, name, action); err != nil {
			return nil, false, err
		}
		c := repo.WithoutTotals() // remembered while the record stays the same
		return &c, true, nil
	}
	var repo *meta.Repository
	var err error
	if k, ok := accessKeyOf(r.Principal, name, action, formats); ok {
		repo, err = d.memos().access.Get(k, "", decide)
	} else {
		err = d.Meta.View(func(tx *meta.Tx) error { var err error; repo, _, err = decide(tx); return err })
	}
	if err != nil {
		return nil, err
	}
	c := *repo // the remembered one is shared
	return &c, nil
}

// repoURL is where repo's own format serves it, when a server of that
// format was built over d.
func (d *Env) repoURL(r *Request, repo *meta.Repository) string {
	prefix, ok := d.prefixes.Load(repo.Format)
	if !ok {
		return ""
	}
	return r.BaseURL + prefix.(string) + "/" + repo.Name + "/"
}

// Access is the one access check of the REST API and every format: may
// p do action on repo (nil: there is none by that name or id)? An
// anonymous caller is asked to authenticate (401) rather than told whether
// a private repository exists; a caller who may not read it is told it
// does not exist (404); one who may read it but not do action is refused
// (403).
func Access(tx *meta.Tx, p *auth.Principal, repo *meta.Repository, name, action string) error {
	allowed, visible := false, false
	if repo != nil {
		var err error
		if allowed, err = auth.Can(tx, p, repo, action); err != nil {
			return err
		}
		if visible = allowed; !visible && action != meta.ActionRead {
			if visible, err = auth.Can(tx, p, repo, meta.ActionRead); err != nil {
				return err
			}
		}
	}
	switch {
	case allowed:
		return nil
	case p.Anonymous():
		return Unauthorized()
	case repo != nil && p.MustChangePassword:
		return Errorf(apierr.PasswordChangeRequired, "password change required before using this account")
	case !visible:
		// A private repository the caller cannot read is indistinguishable
		// from one that does not exist.
		return &RepoNotFoundError{Name: name}
	}
	return Forbidden("%s may not %s in repository %s", p.Name(), action, repo.Name)
}

// AccessByID is Access for a repository named by its id (the REST API):
// an id is not guessable, so a signed-in caller who may not read the
// repository is refused (403) rather than told it is not there.
func AccessByID(tx *meta.Tx, p *auth.Principal, repo *meta.Repository, id, action string) error {
	err := Access(tx, p, repo, id, action)
	if rnf := (*RepoNotFoundError)(nil); repo != nil && errors.As(err, &rnf) {
		return Forbidden("%s may not %s repository %s", p.Name(), action, repo.Name)
	}
	return err
}

// Can reports whether the caller may do action on repo.
func (d *Env) Can(r *Request, repo *meta.Repository, action string) (bool, error) {
	var ok bool
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		ok, err = auth.Can(tx, r.Principal, repo, action)
		return err
	})
	return ok, err
}

// PluginEnabled reports whether the format handler (a plugin) of that
// name is on, as the store holds it (a store error: on, and the request
// fails on its own reads).
//
// The switches are read once per log index the store has applied, not
// on every request: a request reads them from memory unless the store
// moved on since.
func (d *Env) PluginEnabled(name string) bool {
	if d.Meta == nil {
		return true // an environment without a store (a unit test's)
	}
	idx := d.Meta.LastApplied()
	sw := d.switches.Load()
	if sw == nil || sw.index != idx {
		sw = &pluginSwitches{index: idx}
		_ = d.Meta.View(func(tx *meta.Tx) error {
			if tx.Count(meta.KindPlugin) == 0 {
				return nil
			}
			states, err := tx.PluginStates()
			for id, st := range states {
				if !st.Enabled {
					if sw.off == nil {
						sw.off = map[string]bool{}
					}
					sw.off[id] = true
				}
			}
			return err
		})
		d.switches.Store(sw)
	}
	return !sw.off[name]
}

// pluginSwitches are the plugins turned off as of a log index.
type pluginSwitches struct {
	index uint64
	off   map[string]bool
}

// Artifact returns the artifact stored at path in repo.
func (d *Env) Artifact(repo *meta.Repository, p string) (*meta.Artifact, error) {
	a, err := d.memos().paths.Get(pathKey{repo.ID, p}, repo.ID, func(tx *meta.Tx) (*meta.Artifact, bool, error) {
		a, err := tx.ArtifactByPath(repo.ID, p)
		return a, err == nil, err
	})
	if err != nil {
		return nil, err
	}
	c := *a // the remembered one is shared
	return &c, nil
}

// View runs fn on a consistent view of the metadata.
func (d *Env) View(fn func(*meta.Tx) error) error { return d.Meta.View(fn) }

// List returns the artifacts of repo whose path starts with prefix.
func (d *Env) List(repo *meta.Repository, prefix string) ([]meta.Artifact, error) {
	var out []meta.Artifact
	err := d.Meta.View(func(tx *meta.Tx) error {
		var err error
		out, err = tx.ArtifactsUnder(repo.ID, prefix)
		return err
	})
	return out, err
}

// Time is the current time in UTC from d.Now, or the wall clock.
func (d *Env) Time() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

// Require checks that the caller may also do action in r.Repo, for a
// request that needs more than its route declares (an npm unpublish
// arrives as a PUT).
func (d *Env) Require(r *Request, action string) error {
	_, err := d.Repo(r, r.Repo.Name, action, r.Repo.Format)
	return err
}

// RepoByRef finds the repository ref names (its id or its name) and
// checks that p may do action there, answering as Access and AccessByID
// do (a repository p may not see is not found).
func RepoByRef(tx *meta.Tx, p *auth.Principal, ref, action string) (*meta.Repository, error) {
	repo, err := tx.RepoByRef(ref)
	if errors.Is(err, meta.ErrNotFound) {
		repo = nil
	} else if err != nil {
		return nil, err
	}
	check := AccessByID
	if repo != nil && repo.ID != ref {
		check = Access
	}
	if err := check(tx, p, repo, ref, action); err != nil {
		return nil, err
	}
	return repo, nil
}
