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
	format.Base
}

var (
	_ format.Format    = (*Format)(nil)
	_ format.Aliased   = (*Format)(nil)
	_ format.MultiRepo = (*Format)(nil)
)

// New returns the maven format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/maven2")} }

// Aliases implements format.Aliased: /maven is the path a migration
// example uses.
func (f *Format) Aliases() []string { return []string{"/maven"} }

// RepoFormats implements format.MultiRepo.
func (f *Format) RepoFormats() []string { return Formats }

// Routes implements format.Format. Every path is a file of the tree; GET
// routes also answer HEAD (Gradle and wagon existence checks).
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/{path...}", Action: meta.ActionRead, Read: f.get},
		{Method: http.MethodPut, Path: "/{repo}/{path...}", Action: meta.ActionWrite, Write: f.put},
		{Method: http.MethodDelete, Path: "/{repo}/{path...}", Action: meta.ActionDelete, Write: f.delete},
	}
}

// Error renders errors as Maven repositories do: a plain-text body with
// the status. A 401 challenges for Basic, without which mvn (whose GETs
// are not preemptive) never sends its credentials.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.PlainText)
}

// coords parses the request's path in its repository.
func coords(r *format.Request) (Coords, error) {
	return ParsePath(r.Param("repo") + "/" + r.Param("path"))
}

// Settings implements format.Configurable: release and snapshot
// repositories are separate, as in Nexus and Artifactory; "mixed" accepts
// both.
func (f *Format) Settings() map[string][]string {
	return map[string][]string{SettingVersionPolicy: {"mixed", "release", "snapshot"}}
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
