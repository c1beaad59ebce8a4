package edge

import (
	"errors"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/search"
)

// SearchScopeHeader marks a search answered by an edge node from its
// replica: the results are of the repositories it holds, not of the
// whole registry.
const SearchScopeHeader = "X-Depot-Search-Scope"

// search answers GET /api/v1/search/<kind>. An advanced search of a
// repository this node holds is answered here, whole; any other search
// goes to an origin (the registry's every repository), and is answered
// from the replica, marked with SearchScopeHeader, when no origin can be
// reached.
func (e *Edge) search(ctx *fasthttp.RequestCtx, kind string) {
	q, err := url.ParseQuery(string(ctx.QueryArgs().QueryString()))
	if err != nil {
		server.APIError(ctx, apierr.New(apierr.BadRequest, "the query string could not be read"))
		return
	}
	local := false
	if ref := q.Get("repository"); kind == "advanced" && ref != "" {
		_ = e.replica.View(func(tx *meta.Tx) error {
			_, err := tx.RepoByRef(ref)
			local = err == nil
			return nil
		})
	}
	if !local && e.forward(ctx) == nil {
		return
	}
	p, err := e.authn.Authenticate(ctx, string(ctx.Request.Header.Peek("Authorization")), ctx.RemoteIP().String())
	var out any
	if err == nil {
		err = e.replica.View(func(tx *meta.Tx) error {
			var err error
			out, err = search.Serve(tx, search.CallerOf(tx, p, func(ref string) (*meta.Repository, error) {
				return format.RepoByRef(tx, p, ref, meta.ActionRead)
			}), kind, q)
			return err
		})
	}
	if err != nil {
		if errors.Is(err, auth.ErrNotHere) {
			err = apierr.New(apierr.Unavailable, "this edge node cannot reach an origin to check this credential; retry later").With(apierr.RetryAfter, 5)
		}
		server.APIError(ctx, format.Classify(err))
		return
	}
	ctx.Response.Header.Set(SearchScopeHeader, "edge")
	writeJSON(ctx, fasthttp.StatusOK, out)
}

// searchKind is the search a path asks ("" : none).
func searchKind(path string) string {
	kind, ok := strings.CutPrefix(path, "/api/v1/search/")
	if !ok || strings.Contains(kind, "/") {
		return ""
	}
	return kind
}
