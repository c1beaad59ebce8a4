package api

import (
	"encoding/json"
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, repo, err := s.app.Artifact(r.Context(), p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, format.ViewArtifact(a, repo.Name))
}

func (s *Server) downloadArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	resp, err := s.app.DownloadArtifact(r.Context(), p, r.PathValue("id"), formatRequest(r))
	if err != nil {
		return err
	}
	return httpx.WriteResponse(w, r, resp, s.app.Blobs)
}

// formatRequest is how r came, as a format sees it, for the REST calls
// that go through a format (downloads, deletes); the use case sets who
// asks and the repository.
func formatRequest(r *http.Request) *format.Request {
	return &format.Request{Method: r.Method, Query: r.URL.Query(), Header: r.Header, ContentLength: -1,
		BaseURL: httpx.BaseURL(r), RemoteAddr: httpx.ClientIP(r), RequestID: httpx.RequestID(r.Context())}
}

// deleteArtifact removes an artifact, its format keeping itself
// consistent (app.DeleteArtifact).
func (s *Server) deleteArtifact(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteArtifact(r.Context(), p, r.PathValue("id"), formatRequest(r))
	return written(w, idx, err, http.StatusNoContent, nil)
}

// propertiesView is an artifact's properties: key → values.
type propertiesView struct {
	ArtifactID string              `json:"artifact_id"`
	Properties map[string][]string `json:"properties"`
}

// propertiesRequest is a change of properties. A key's value is a list
// of strings or one string; in a PATCH, null removes the key.
type propertiesRequest struct {
	Properties map[string]propertyValues `json:"properties"`
}

type propertyValues struct {
	values []string
	null   bool
}

func (v *propertyValues) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		v.null = true
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		v.values = []string{one}
		return nil
	}
	return json.Unmarshal(b, &v.values)
}

func (v propertyValues) MarshalJSON() ([]byte, error) { return json.Marshal(v.values) }

func (s *Server) getProperties(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	a, _, err := s.app.Artifact(r.Context(), p, r.PathValue("id"), meta.ActionRead)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, propertiesView{ArtifactID: a.ID, Properties: orEmpty(a.Properties)})
}

// setProperties replaces (PUT) or merges (PATCH) an artifact's
// properties.
func (s *Server) setProperties(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req propertiesRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Properties == nil {
		return apierr.Invalid("properties", "properties is required: an object of key to values")
	}
	ch := app.PropertiesChange{Set: map[string][]string{}, Replace: r.Method == http.MethodPut}
	for k, v := range req.Properties {
		switch {
		case v.null && ch.Replace:
			return apierr.Invalid("properties", "property %s is null: a PUT sets every property; leave it out to remove it", k)
		case v.null:
			ch.Remove = append(ch.Remove, k)
		default:
			ch.Set[k] = v.values
		}
	}
	props, idx, err := s.app.SetArtifactProperties(r.Context(), p, r.PathValue("id"), ch)
	return written(w, idx, err, http.StatusOK, propertiesView{ArtifactID: r.PathValue("id"), Properties: orEmpty(props)})
}

func orEmpty(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}
