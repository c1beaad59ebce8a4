package webui

import (
	"net/http"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/httpx"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/signing"
)

// The signing page: the signing keys with their public parts (anyone
// signed in reads them), and for administrators a form to make one and,
// per key, its retirement and its deletion. A version's page signs its
// files and shows their signatures.

const signingPath = Prefix + "/signing"

type signingPage struct {
	Keys       []meta.SigningKey
	Algorithms []string
	Name       string
	Algorithm  string
	Email      string
	Err, Field string
}

func (p signingPage) formError() string { return p.Err }

func (u *UI) signingList(w http.ResponseWriter, c *call, status int, p signingPage) error {
	var err error
	if p.Keys, err = u.d.App.SigningKeys(c.r.Context(), c.p); err != nil {
		return err
	}
	p.Algorithms = signing.Algorithms
	if p.Algorithm == "" {
		p.Algorithm = signing.Ed25519
	}
	return u.render(w, c, status, "signing", "Signing keys", p)
}

func (u *UI) signingKeys(w http.ResponseWriter, c *call) error {
	return u.signingList(w, c, 0, signingPage{})
}

func (u *UI) createSigningKey(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	p := signingPage{Name: strings.TrimSpace(f.Get("name")), Algorithm: f.Get("algorithm"), Email: strings.TrimSpace(f.Get("email"))}
	k, _, err := u.d.App.CreateSigningKey(c.r.Context(), c.p, app.NewSigningKey{Name: p.Name, Algorithm: p.Algorithm, Email: p.Email})
	if e, ok := refused(err, &p.Field); ok {
		p.Err = e.Message
		return u.signingList(w, c, e.Status(), p)
	}
	if err != nil {
		return err
	}
	u.flash(w, c.r, "Key "+k.Name+" made ("+k.Algorithm+", fingerprint "+k.Fingerprint+").")
	http.Redirect(w, c.r, signingPath, http.StatusSeeOther)
	return nil
}

func (u *UI) retireSigningKey(w http.ResponseWriter, c *call) error {
	k, _, err := u.d.App.RetireSigningKey(c.r.Context(), c.p, c.r.PathValue("id"))
	name := c.r.PathValue("id")
	if k != nil {
		name = k.Name
	}
	return u.after(w, c, err, "Key "+name+" retired: it signs no more; its signatures verify until it is deleted.", signingPath)
}

func (u *UI) deleteSigningKey(w http.ResponseWriter, c *call) error {
	_, err := u.d.App.DeleteSigningKey(c.r.Context(), c.p, c.r.PathValue("id"))
	return u.after(w, c, err, "Key deleted: the signatures it made no longer verify.", signingPath)
}

// signArtifact signs a file from its version's page, back to that page.
func (u *UI) signArtifact(w http.ResponseWriter, c *call) error {
	f := c.r.PostForm
	_, _, err := u.d.App.Sign(c.r.Context(), c.p, f.Get("artifact_id"), f.Get("key_id"), httpx.BaseURL(c.r))
	back := f.Get("back")
	if !strings.HasPrefix(back, Prefix+"/") {
		back = Prefix + "/repositories"
	}
	return u.after(w, c, err, "Signed.", back)
}
