package pypi

import (
	"net/http"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "pypi"

// Format is the PyPI format.
type Format struct {
	format.Base
}

var _ format.Format = (*Format)(nil)

// New returns the PyPI format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/pypi")} }

// Routes implements format.Format. Trailing slashes do not matter to the
// router: "/r/simple" and "/r/simple/" are one route.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}/simple", Action: meta.ActionRead, Read: f.projectList},
		{Method: http.MethodGet, Path: "/{repo}/simple/{project}", Action: meta.ActionRead, Read: f.projectPage},
		{Method: http.MethodGet, Path: "/{repo}/files/{project}/{version}/{filename}", Action: meta.ActionRead, Read: f.file},
		// twine POSTs to exactly the --repository-url, "/pypi/<repo>/".
		{Method: http.MethodPost, Path: "/{repo}", Action: meta.ActionWrite, Write: f.upload},
	}
}

// Error renders errors as PyPI does: the status with a plain-text
// message. A 401 challenges for Basic credentials, since pip only sends
// them after a challenge unless they are in the index URL.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.PlainText)
}
