package api

import (
	"net/http"
	"strconv"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// migrationList is GET /migrations.
type migrationList struct {
	Migrations []meta.Migration `json:"migrations"`
	Total      int              `json:"total"`
}

// migrationEntries is GET /migrations/:id/logs and /failures.
type migrationEntries struct {
	Entries []meta.MigrationEntry `json:"entries"`
}

func (s *Server) createMigration(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in app.MigrationInput
	if err := decode(r, &in); err != nil {
		return err
	}
	m, idx, err := s.app.CreateMigration(r.Context(), p, in)
	return written(w, idx, err, http.StatusCreated, m)
}

func (s *Server) listMigrations(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ms, err := s.app.Migrations(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, migrationList{Migrations: ms, Total: len(ms)})
}

func (s *Server) getMigration(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	m, err := s.app.Migration(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

// moveMigration is POST /migrations/:id/start, /resume and /cancel.
func (s *Server) moveMigration(action string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		m, idx, err := s.app.MoveMigration(r.Context(), p, r.PathValue("id"), action)
		return written(w, idx, err, http.StatusOK, m)
	}
}

// migrationLog is GET /migrations/:id/logs (kind "log") and /failures.
func (s *Server) migrationLog(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		after, _ := strconv.Atoi(r.URL.Query().Get("after"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		es, err := s.app.MigrationEntries(r.Context(), p, r.PathValue("id"), kind, after, limit)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, migrationEntries{Entries: es})
	}
}

func (s *Server) migrationReport(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	rep, err := s.app.Report(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}
