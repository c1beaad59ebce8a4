package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
)

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	groups, err := s.app.ListGroups(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, groupList{Groups: groups, Total: len(groups)})
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req newGroupRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	g, idx, err := s.app.CreateGroup(r.Context(), p, app.NewGroup{Name: req.Name, Description: req.Description})
	return written(w, idx, err, http.StatusCreated, g)
}

func (s *Server) addGroupMembers(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req groupMembersRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	g, idx, err := s.app.AddGroupMembers(r.Context(), p, r.PathValue("id"), req.UserIDs)
	return written(w, idx, err, http.StatusOK, g)
}

func (s *Server) removeGroupMember(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	g, idx, err := s.app.RemoveGroupMember(r.Context(), p, r.PathValue("id"), r.PathValue("user"))
	return written(w, idx, err, http.StatusOK, g)
}
