package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/service/audit"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
)

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type tokenPair struct {
	AccessToken            string `json:"access_token"`
	RefreshToken           string `json:"refresh_token,omitempty"`
	ExpiresIn              int64  `json:"expires_in"`
	TokenType              string `json:"token_type"`
	PasswordChangeRequired bool   `json:"password_change_required,omitempty"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req loginRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	// Bounded before anything is done with them: a limiter key, a lookup,
	// an audit line.
	if req.Username == "" || len(req.Username) > auth.MaxUsernameBytes {
		return apierr.Invalid("username", "username is required (at most %d bytes)", auth.MaxUsernameBytes)
	}
	if req.Password == "" || len(req.Password) > auth.MaxSecretBytes {
		return apierr.Invalid("password", "password is required (at most %d bytes)", auth.MaxSecretBytes)
	}
	ip := httpx.ClientIP(r)
	keys := []string{ip}
	if node := httpx.ForwardedBy(r); node != "" {
		keys = append(keys, "edge:"+node) // the address is the node's word: count the node too
	}
	for _, k := range keys {
		if d := s.loginLimit.Allow(k + "\x00" + strings.ToLower(req.Username)); !d.Allowed {
			s.auditLogin(r, req.Username, "", "denied", http.StatusTooManyRequests)
			tooMany(w, d.Reset.Sub(s.d.Now()))
			return nil
		}
	}
	// Failures are audited by the authenticator, like those of every path.
	p, err := s.d.Authn.Login(r.Context(), req.Username, req.Password, ip)
	if errors.Is(err, auth.ErrBadCredentials) {
		return apierr.New(apierr.Unauthorized, "invalid username or password")
	}
	if err != nil {
		return err
	}
	now := s.d.Now().UTC()
	sess := meta.Session{ID: s.d.NewID(), UserID: p.UserID, CreatedAt: now, ExpiresAt: now.Add(s.cfg.RefreshTTL)}
	if err := s.apply(r.Context(), w, &meta.SessionCreate{Session: sess}); err != nil {
		return err
	}
	pair, err := s.issue(p.UserID, sess.ID, true)
	if err != nil {
		return err
	}
	pair.PasswordChangeRequired = p.MustChangePassword
	s.auditLogin(r, p.Username, p.UserID, "success", http.StatusOK)
	return writeJSON(w, http.StatusOK, pair)
}

func (s *Server) issue(userID, sessionID string, withRefresh bool) (*tokenPair, error) {
	access, _, err := s.d.JWT.Issue(auth.AccessToken, userID, sessionID, s.cfg.AccessTTL)
	if err != nil {
		return nil, err
	}
	pair := &tokenPair{AccessToken: access, ExpiresIn: int64(s.cfg.AccessTTL / time.Second), TokenType: "Bearer"}
	if withRefresh {
		if pair.RefreshToken, _, err = s.d.JWT.Issue(auth.RefreshToken, userID, sessionID, s.cfg.RefreshTTL); err != nil {
			return nil, err
		}
	}
	return pair, nil
}

func (s *Server) auditLogin(r *http.Request, username, userID, outcome string, status int) {
	s.d.Audit.Record(audit.Event{Time: s.d.Now().UTC(), Actor: username, ActorID: userID, Action: "auth.login",
		Target: Prefix + "/auth/login", Remote: httpx.ClientIP(r), Via: httpx.ForwardedBy(r), Outcome: outcome, Status: status,
		RequestID: httpx.RequestID(r.Context())})
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.RefreshToken == "" {
		return apierr.Invalid("refresh_token", "refresh_token is required")
	}
	p, err := s.d.Authn.Refresh(req.RefreshToken)
	if err != nil {
		return apierr.New(apierr.Unauthorized, "refresh token is invalid, expired or revoked")
	}
	pair, err := s.issue(p.UserID, p.SessionID, false)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"access_token": pair.AccessToken, "expires_in": pair.ExpiresIn, "token_type": "Bearer"})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if p.SessionID == "" {
		return apierr.New(apierr.BadRequest, "logout ends a login session; revoke an API token with DELETE %s/users/me/tokens/{id}", Prefix)
	}
	return s.applyNoContent(r.Context(), w, &meta.SessionRevoke{ID: p.SessionID, At: s.d.Now().UTC()})
}

// health answers anyone {status: "ok"} (200) or {status: "degraded",
// reasons} (503, so that load balancers take the node out); a signed-in
// caller also gets the node's details.
func (s *Server) health(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	body := map[string]any{"status": "ok"}
	code := http.StatusOK
	if s.d.Health != nil {
		reasons, details := s.d.Health()
		if !p.Anonymous() {
			for k, v := range details {
				body[k] = v
			}
		}
		if len(reasons) > 0 {
			body["status"], body["reasons"] = "degraded", reasons
			code = http.StatusServiceUnavailable
		}
	}
	return writeJSON(w, code, body)
}
