package api

import (
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/httpx"
)

// cors keeps other sites from using a browser's credentials against the
// API (browsers send cached Basic credentials on their own): a
// state-changing call from a foreign Origin, or that the browser marks
// cross-site, is refused unless CORSOrigins allows that origin; allowed
// origins get CORS headers and preflight answers. It reports whether it
// answered the request.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && s.originAllowed(origin)
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Depot-Index, X-Request-Id")
	}
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		if !allowed {
			apierr.Write(w, apierr.New(apierr.Forbidden, "cross-origin requests from %q are not allowed; see the CORS setting", origin))
			return true
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Depot-Min-Index")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	if !isWrite(r.Method) || allowed || !crossSite(r, origin, httpx.BaseURL(r)) {
		return false
	}
	apierr.Write(w, apierr.New(apierr.Forbidden, "cross-site requests may not change anything; allow the site's origin in the CORS setting to let it"))
	return true
}

func (s *Server) originAllowed(origin string) bool {
	return slices.Contains(s.cfg.CORSOrigins, "*") || slices.ContainsFunc(s.cfg.CORSOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimRight(o, "/"), origin)
	})
}

// crossSite reports whether a request comes from a page of another site:
// the browser says so (Sec-Fetch-Site), or its Origin names another host.
// Non-browser clients send neither and are not affected.
func crossSite(r *http.Request, origin, base string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true // "null" (sandboxed frames, file pages) and junk
	}
	b, err := url.Parse(base)
	return err != nil || !strings.EqualFold(u.Host, b.Host)
}

// isJSON reports whether a request declares a JSON body. Browsers may send
// text/plain and form bodies to another site without a preflight; requiring
// JSON closes that door.
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
