package maven

import (
	"net/http"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves; Gradle repositories
// ("gradle") use the same layout and are served too.
const Name = "maven"

// Formats are the repository formats served here.
var Formats = []string{"maven", "gradle"}

// Repository setting and its values (validated by the API).
const (
	SettingVersionPolicy = "version_policy"
	PolicyRelease        = "release"
	PolicySnapshot       = "snapshot"
)

// Format is the Maven repository format.
type Format struct {
	d *format.Deps
}

var (
	_ format.Format    = (*Format)(nil)
	_ format.Aliased   = (*Format)(nil)
	_ format.MultiRepo = (*Format)(nil)
)

// New returns the maven format over deps.
func New(d *format.Deps) *Format { return &Format{d: d} }

// Name implements format.Format.
func (f *Format) Name() string { return Name }

// Prefix implements format.Format.
func (f *Format) Prefix() string { return "/maven2" }

// Aliases implements format.Aliased: /maven is the path a migration
// example uses.
func (f *Format) Aliases() []string { return []string{"/maven"} }

// RepoFormats implements format.MultiRepo.
func (f *Format) RepoFormats() []string { return Formats }

// Routes implements format.Format. Every path is a file of the tree; GET
// routes also answer HEAD (Gradle and wagon existence checks).
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{path...}", Op: format.Read, Handle: f.get},
		{Method: http.MethodPut, Path: "/{path...}", Op: format.Write, Handle: f.put},
		{Method: http.MethodDelete, Path: "/{path...}", Op: format.Write, Handle: f.delete},
	}
}

// Error renders errors as Maven repositories do: a plain-text body with
// the status. A 401 challenges for Basic, without which mvn (whose GETs
// are not preemptive) never sends its credentials.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.PlainText)
}

// resolve parses the request path and finds the repository, checking the
// caller may do action there.
func (f *Format) resolve(r *format.Request, action string) (Coords, *meta.Repository, error) {
	c, err := ParsePath(r.Param("path"))
	if err != nil {
		return c, nil, err
	}
	repo, err := f.d.Repo(r, c.Repo, action, Formats...)
	return c, repo, err
}

// checkPolicy applies the repository's version_policy to an upload under
// version v: release repositories refuse SNAPSHOTs and snapshot
// repositories refuse releases, as in Nexus and Artifactory.
func checkPolicy(repo *meta.Repository, v string) error {
	if v == "" {
		return nil
	}
	switch policy := repo.Settings[SettingVersionPolicy]; {
	case policy == PolicyRelease && IsSnapshot(v):
		return format.BadRequest("repository %s accepts only release versions (version_policy=release); %s is a SNAPSHOT", repo.Name, v)
	case policy == PolicySnapshot && !IsSnapshot(v):
		return format.BadRequest("repository %s accepts only SNAPSHOT versions (version_policy=snapshot); %s is a release", repo.Name, v)
	}
	return nil
}
