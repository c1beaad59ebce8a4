package api

import (
	"net/http"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/service/audit"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/ratelimit"
)

func (s *Server) login(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req loginRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	pair, idx, err := s.SignIn(r, app.Credentials{Username: req.Username, Password: req.Password})
	if err != nil {
		return written(w, idx, err, 0, nil)
	}
	return written(w, idx, nil, http.StatusOK, pair)
}

// SignIn opens a login session with a password, as POST /auth/login
// does for the API and the sign-in page for the web UI: bounded, limited
// per address (and edge node) and username, audited.
func (s *Server) SignIn(r *http.Request, in app.Credentials) (*app.TokenPair, uint64, error) {
	if err := in.Check(); err != nil {
		return nil, 0, err
	}
	ip := httpx.ClientIP(r)
	keys := []string{ip}
	if node := httpx.ForwardedBy(r); node != "" {
		keys = append(keys, "edge:"+node) // the address is the node's word: count the node too
	}
	for _, k := range keys {
		if d := s.loginLimit.Allow(k + "\x00" + strings.ToLower(in.Username)); !d.Allowed {
			s.auditLogin(r, in.Username, "", "denied", http.StatusTooManyRequests)
			secs := ratelimit.Seconds(d.Reset.Sub(s.now()))
			return nil, 0, apierr.New(apierr.RateLimited, "too many sign-in attempts; retry in %d seconds", secs).With(apierr.RetryAfter, secs)
		}
	}
	pair, p, idx, err := s.app.SignIn(r.Context(), in, ip)
	if err != nil {
		return nil, idx, err
	}
	s.auditLogin(r, p.Username, p.UserID, "success", http.StatusOK)
	return pair, idx, nil
}

func (s *Server) auditLogin(r *http.Request, username, userID, outcome string, status int) {
	s.auditLog.Record(audit.Event{Time: s.now().UTC(), Actor: username, ActorID: userID, Action: "auth.login",
		Target: Prefix + "/auth/login", Remote: httpx.ClientIP(r), Via: httpx.ForwardedBy(r), Outcome: outcome, Status: status,
		RequestID: httpx.RequestID(r.Context())})
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req refreshRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	pair, err := s.app.Refresh(r.Context(), req.RefreshToken)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pair)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.SignOut(r.Context(), p)
	return written(w, idx, err, http.StatusNoContent, nil)
}

// health answers anyone {status: "ok"} (200) or {status: "degraded",
// reasons} (503, so that load balancers take the node out), with
// warnings when there are; a signed-in caller also gets the node's
// details.
func (s *Server) health(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	body := map[string]any{"status": "ok"} // healthAnswer, and the node's details
	code := http.StatusOK
	if s.healthOf != nil {
		reasons, warnings, details := s.healthOf()
		if !p.Anonymous() {
			for k, v := range details {
				body[k] = v
			}
		}
		if len(warnings) > 0 {
			body["warnings"] = warnings
		}
		if len(reasons) > 0 {
			body["status"], body["reasons"] = "degraded", reasons
			code = http.StatusServiceUnavailable
		}
	}
	return writeJSON(w, code, body)
}
