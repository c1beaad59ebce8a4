package webui

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/httpx"
)

// The session's cookies: the login session's access and refresh tokens,
// HttpOnly (out of script's reach) and sent to the pages only.
const (
	cookieAccess  = "depot_ui_access"
	cookieRefresh = "depot_ui_refresh"
	cookieFlash   = "depot_ui_flash"
)

func (u *UI) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix + "/", MaxAge: maxAge, HttpOnly: true,
		Secure: httpx.Secure(r), SameSite: http.SameSiteLaxMode}
}

// principal is who the session cookies name (nil: nobody). An expired
// access token is renewed with the refresh token, once per request.
func (u *UI) principal(w http.ResponseWriter, r *http.Request) (*auth.Principal, error) {
	ip := httpx.ClientIP(r)
	if c, err := r.Cookie(cookieAccess); err == nil && c.Value != "" {
		p, err := u.d.App.Authn.Authenticate(r.Context(), "Bearer "+c.Value, ip)
		if err == nil && p != nil && p.SessionID != "" {
			return p, nil
		}
	}
	rc, err := r.Cookie(cookieRefresh)
	if err != nil || rc.Value == "" {
		return nil, nil
	}
	pair, err := u.d.App.Refresh(r.Context(), rc.Value)
	if err != nil {
		u.clearSession(w, r) // revoked or expired: sign in again
		return nil, nil
	}
	p, err := u.d.App.Authn.Authenticate(r.Context(), "Bearer "+pair.AccessToken, ip)
	if err != nil || p == nil {
		u.clearSession(w, r)
		return nil, nil
	}
	http.SetCookie(w, u.cookie(r, cookieAccess, pair.AccessToken, 0))
	return p, nil
}

// startSession keeps a login session's tokens in the cookies.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request, pair *app.TokenPair) {
	http.SetCookie(w, u.cookie(r, cookieAccess, pair.AccessToken, 0))
	http.SetCookie(w, u.cookie(r, cookieRefresh, pair.RefreshToken, 0))
}

func (u *UI) clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, u.cookie(r, cookieAccess, "", -1))
	http.SetCookie(w, u.cookie(r, cookieRefresh, "", -1))
}

// SignedIn finishes a single sign-on begun on the sign-in page (the
// API's callback hands it over): the session goes into the cookies and
// the browser to the page it asked for; a refused sign-in shows the
// sign-in page with the reason.
func (u *UI) SignedIn(w http.ResponseWriter, r *http.Request, pair *app.TokenPair, next string, err error) {
	if err != nil {
		c := &call{r: r}
		msg, status := "single sign-on failed", http.StatusBadRequest
		if e := apierr.As(err, format.Domain); e != nil {
			msg, status = e.Message, e.Status()
		}
		if rerr := u.render(w, c, status, "login", "Sign in", loginForm{SSO: u.d.App.OIDC != nil, Err: msg}); rerr != nil {
			http.Error(w, msg, status)
		}
		return
	}
	u.startSession(w, r, pair)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// safeNext is a page of this UI to go to after signing in: a path under
// Prefix, never another site.
func safeNext(next string) string {
	if v, err := url.Parse(next); err == nil && v.Scheme == "" && v.Host == "" && v.User == nil &&
		strings.HasPrefix(v.Path, Prefix+"/") && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") {
		return v.RequestURI()
	}
	return Prefix + "/"
}

// csrfToken is the forms' token for p's session: a MAC of the session
// id, so it is valid exactly as long as the session, on every origin.
func (u *UI) csrfToken(p *auth.Principal) string {
	m := hmac.New(sha256.New, u.d.Key)
	m.Write([]byte("depot ui form\x00" + p.SessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// maxForm bounds a form's body.
const maxForm = 64 << 10

// checkPost refuses a form sent from another site: a cross-site fetch
// or Origin, or (signed in) a token that is not the session's.
func (u *UI) checkPost(r *http.Request, p *auth.Principal) error {
	if err := sameSite(r); err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return apierr.New(apierr.BadRequest, "the form could not be read (at most %d KiB)", maxForm>>10)
	}
	if p == nil {
		return nil
	}
	got := r.PostForm.Get("_csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(u.csrfToken(p))) != 1 {
		return apierr.New(apierr.Forbidden, "the form has expired or came from elsewhere: reload the page and try again")
	}
	return nil
}

// sameSite refuses a form a page of another site sent: the browser says
// so, or its Origin names another host.
func sameSite(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return apierr.New(apierr.Forbidden, "a form from another site was refused")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !strings.EqualFold(o, httpx.SeenURL(r)) {
		return apierr.New(apierr.Forbidden, "a form from another site (%s) was refused", o)
	}
	return nil
}

// checkUpload checks a posted file upload (multipart/form-data from a
// signed-in session) as checkPost checks a form, without reading the
// file: its first part must be the session's token (the form puts the
// hidden field first, and browsers send parts in the form's order); the
// parts after it are left to the page, which streams the file within
// its own bound.
func (u *UI) checkUpload(r *http.Request, p *auth.Principal) (*multipart.Reader, error) {
	if err := sameSite(r); err != nil {
		return nil, err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, apierr.New(apierr.BadRequest, "a file upload is sent as multipart/form-data")
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "_csrf" {
		return nil, apierr.New(apierr.Forbidden, "the form has expired or came from elsewhere: reload the page and try again")
	}
	got, err := io.ReadAll(io.LimitReader(part, 256))
	if err != nil || subtle.ConstantTimeCompare(got, []byte(u.csrfToken(p))) != 1 {
		return nil, apierr.New(apierr.Forbidden, "the form has expired or came from elsewhere: reload the page and try again")
	}
	return mr, nil
}

// flash keeps a one-line message for the next page (after a redirect).
func (u *UI) flash(w http.ResponseWriter, r *http.Request, msg string) {
	http.SetCookie(w, u.cookie(r, cookieFlash, base64.RawURLEncoding.EncodeToString([]byte(msg)), 60))
}

// after ends an action posted from a page: it flashes what the action
// did, or why it was refused, and goes back to path.
func (u *UI) after(w http.ResponseWriter, c *call, err error, done, path string) error {
	var field string
	if e, ok := refused(err, &field); ok {
		done = e.Message
	} else if err != nil {
		return err
	}
	u.flash(w, c.r, done)
	http.Redirect(w, c.r, path, http.StatusSeeOther)
	return nil
}

func takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(cookieFlash)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: cookieFlash, Path: Prefix + "/", MaxAge: -1, HttpOnly: true})
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(b) > 500 {
		return ""
	}
	return string(b)
}
