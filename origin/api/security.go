package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// scanRequest is POST /security/scans (the spec's body).
type scanRequest struct {
	ArtifactID string `json:"artifact_id"`
	Scanner    string `json:"scanner,omitempty"`
}

// scanList is GET /security/scans.
type scanList struct {
	Scans []meta.Scan `json:"scans"`
	Total int         `json:"total"`
	Page  int         `json:"page"`
	Limit int         `json:"limit"`
}

// scanDetail is GET /security/scans/:id: the scan and, once it has one,
// its report.
type scanDetail struct {
	meta.Scan
	Report *scan.Report `json:"report"`
}

// advisoriesLoaded is POST /security/advisories.
type advisoriesLoaded struct {
	Loaded   meta.AdvisoryLoad `json:"loaded"`
	Database *meta.AdvisoryDB  `json:"database"`
}

// advisoryStatus is GET /security/advisories.
type advisoryStatus struct {
	Database *meta.AdvisoryDB `json:"database"`
}

func (s *Server) requestScan(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in scanRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	sc, idx, err := s.app.RequestScan(r.Context(), p, in.ArtifactID, in.Scanner)
	return written(w, idx, err, http.StatusAccepted, sc)
}

func (s *Server) listScans(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pg, err := pageOf(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l, err := s.app.ListScans(r.Context(), p, app.ScanFilter{ArtifactID: q.Get("artifact_id"), RepositoryID: q.Get("repository_id"),
		Status: q.Get("status"), Page: pg})
	if err != nil {
		return err
	}
	if l.Items == nil {
		l.Items = []meta.Scan{}
	}
	return writeJSON(w, http.StatusOK, scanList{Scans: l.Items, Total: l.Total, Page: l.Page.Number, Limit: l.Page.Limit})
}

func (s *Server) getScan(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	sc, rep, err := s.app.GetScan(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, scanDetail{Scan: *sc, Report: rep})
}

func (s *Server) loadAdvisories(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	load, db, err := s.app.LoadAdvisories(r.Context(), p, r.URL.Query().Get("filename"), r.Body)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, advisoriesLoaded{Loaded: load, Database: db})
}

func (s *Server) advisories(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	db, err := s.app.Advisories(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, advisoryStatus{Database: db})
}

func (s *Server) queryOSV(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var q app.OSVQuery
	if err := decodeQuery(r, &q); err != nil {
		return err
	}
	out, err := s.app.QueryOSV(r.Context(), p, q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) queryOSVBatch(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var b app.OSVBatch
	if err := decodeQuery(r, &b); err != nil {
		return err
	}
	out, err := s.app.QueryOSVBatch(r.Context(), p, b)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// policyList is GET /security/policies.
type policyList struct {
	Policies []meta.Policy `json:"policies"`
	Total    int           `json:"total"`
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	l, err := s.app.ListPolicies(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, policyList{Policies: l, Total: len(l)})
}

func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in app.PolicyInput
	if err := decode(r, &in); err != nil {
		return err
	}
	pol, idx, err := s.app.CreatePolicy(r.Context(), p, in)
	return written(w, idx, err, http.StatusCreated, pol)
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pol, err := s.app.GetPolicy(r.Context(), p, r.PathValue("id"))
	return written(w, 0, err, http.StatusOK, pol)
}

func (s *Server) updatePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in app.PolicyInput
	if err := decode(r, &in); err != nil {
		return err
	}
	pol, idx, err := s.app.UpdatePolicy(r.Context(), p, r.PathValue("id"), in)
	return written(w, idx, err, http.StatusOK, pol)
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeletePolicy(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}
