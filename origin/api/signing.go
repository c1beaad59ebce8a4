package api

import (
	"net/http"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/signing"
)

// keyList is GET /signing/keys.
type keyList struct {
	Keys []meta.SigningKey `json:"keys"`
}

// signRequest is POST /signing/sign.
type signRequest struct {
	ArtifactID string `json:"artifact_id"`
	KeyID      string `json:"key_id"`
}

func (s *Server) listSigningKeys(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	keys, err := s.app.SigningKeys(r.Context(), p)
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []meta.SigningKey{}
	}
	return writeJSON(w, http.StatusOK, keyList{Keys: keys})
}

func (s *Server) createSigningKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in app.NewSigningKey
	if err := decode(r, &in); err != nil {
		return err
	}
	k, idx, err := s.app.CreateSigningKey(r.Context(), p, in)
	return written(w, idx, err, http.StatusCreated, k)
}

func (s *Server) getSigningKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, err := s.app.SigningKey(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, k)
}

// publicKey answers a key's public part as a file: PEM, or an armored
// OpenPGP key (for gpg --import, cosign verify --key, openssl).
func (s *Server) publicKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, err := s.app.SigningKey(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	ct, name := "application/x-pem-file", k.ID+".pem"
	if k.Algorithm == signing.OpenPGP {
		ct, name = "application/pgp-keys", k.ID+".asc"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	_, err = w.Write([]byte(k.PublicKey))
	return err
}

func (s *Server) retireSigningKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, idx, err := s.app.RetireSigningKey(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusOK, k)
}

func (s *Server) deleteSigningKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	idx, err := s.app.DeleteSigningKey(r.Context(), p, r.PathValue("id"))
	return written(w, idx, err, http.StatusNoContent, nil)
}

func (s *Server) sign(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var in signRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	sig, idx, err := s.app.Sign(r.Context(), p, in.ArtifactID, in.KeyID, httpx.BaseURL(r))
	return written(w, idx, err, http.StatusCreated, sig)
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	v, err := s.app.Verify(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}
