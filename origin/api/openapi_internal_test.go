package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/depot-registry/depot/shared/apierr"
)

// TestOpenAPIDocumentsEveryRoute: the document is valid OpenAPI 3.1 (read
// by a well-kept validator), it has an operation for every route the API
// serves and none other, each with a summary, a tag, its path parameters
// and a success answer, and the error answers list every error code of
// the registry with its description.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	s := &Server{mux: http.NewServeMux()}
	s.routes()
	raw, err := s.openAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("not a valid document: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	documented := 0
	for path, item := range doc.Paths.Map() {
		documented += len(item.Operations())
		for method := range item.Operations() {
			// The mux serves it: a request to it reaches that very route.
			req := httptest.NewRequest(method, param.ReplaceAllString(path, "x"), nil)
			if _, pattern := s.mux.Handler(req); pattern != method+" "+path {
				t.Errorf("%s %s is documented but the API routes it to %q", method, path, pattern)
			}
		}
	}
	if documented != len(s.table) {
		t.Errorf("%d operations documented, %d routes", documented, len(s.table))
	}
	for _, rt := range s.table {
		item := doc.Paths.Find(Prefix + rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s %s is not documented", rt.method, rt.path)
			continue
		}
		o := item.GetOperation(rt.method)
		if o.Summary == "" || len(o.Tags) != 1 || o.Tags[0] == "" {
			t.Errorf("%s %s: summary %q, tags %v", rt.method, rt.path, o.Summary, o.Tags)
		}
		for _, name := range param.FindAllString(rt.path, -1) {
			if o.Parameters.GetByInAndName("path", strings.Trim(name, "{}")) == nil {
				t.Errorf("%s %s: path parameter %s undocumented", rt.method, rt.path, name)
			}
		}
		if o.Responses.Len() < 2 {
			t.Errorf("%s %s: answers %v", rt.method, rt.path, o.Responses.Map())
		}
	}
	text := string(raw)
	for _, c := range apierr.Codes() {
		if !strings.Contains(text, `"`+string(c)+`"`) || !strings.Contains(text, c.Description()[:20]) {
			t.Errorf("error code %s is not in the document", c)
		}
	}
}
