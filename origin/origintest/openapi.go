package origintest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Every answer of the API that a test gets from an origin through Do is
// checked against the OpenAPI document the origin serves
// (/api/v1/openapi.json), with a well-kept validator: its status must be
// documented for the route and its body must match the documented
// schema. So the document cannot drift from the API.

var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

// apiDoc loads the document from the origin at base once per test binary
// (every origin of a build serves the same).
func apiDoc(c *http.Client, base string) (routers.Router, error) {
	docOnce.Do(func() {
		resp, err := c.Get(base + "/api/v1/openapi.json")
		if err != nil {
			docErr = err
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			docErr = fmt.Errorf("loading the OpenAPI document: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			docErr = fmt.Errorf("the OpenAPI document is not valid: %w", err)
			return
		}
		doc.Servers = nil // any host
		docRouter, docErr = legacy.NewRouter(doc)
	})
	return docRouter, docErr
}

// checkAnswer validates one answer of the API against the document.
func (e *Env) checkAnswer(req *http.Request, status int, header http.Header, body []byte) {
	e.T.Helper()
	if e.URL != e.Server.URL || !strings.HasPrefix(req.URL.Path, "/api/v1/") || req.Method == http.MethodHead || req.Method == http.MethodOptions {
		// An edge in front answers some itself: the origin's API is what
		// is documented. HEAD is GET without the body; OPTIONS is the
		// CORS preflight of any route.
		return
	}
	router, err := apiDoc(e.Client, e.Server.URL)
	if err != nil {
		e.T.Errorf("OpenAPI: %v", err)
		return
	}
	// A path parameter may hold an escaped slash (a package named
	// acme/demo): the router matches the path as sent, segment by segment.
	find := req.Clone(context.Background())
	find.URL.Path, find.URL.RawPath = req.URL.EscapedPath(), ""
	route, params, err := router.FindRoute(find)
	if err != nil {
		if status >= 400 && status < 500 {
			return // no such route (or method): refused before any route
		}
		e.T.Errorf("OpenAPI: %s %s answered %d but is not in the document: %v", req.Method, req.URL.Path, status, err)
		return
	}
	// A download's body is the file, of its own media type: the status is
	// what is checked.
	raw := false
	if ok := route.Operation.Responses.Status(http.StatusOK); ok != nil && ok.Value != nil && ok.Value.Content.Get("*/*") != nil {
		raw = status < 300
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: raw}})
	if err != nil {
		e.T.Errorf("OpenAPI: the answer to %s %s (%d) does not match the document: %v\n%.600s", req.Method, req.URL.Path, status, err, body)
	}
}
