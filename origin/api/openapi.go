package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/version"
)

// The OpenAPI document (GET /api/v1/openapi.json) is made from the routes
// table: each route's op says what it does and the Go types of its
// bodies, whose JSON schemas are read from the types themselves (their
// json tags), and the error answers come from shared/apierr's registry.
// So a route cannot be added without its documentation, and a body's
// documentation cannot differ from the type it is encoded from; the API
// tests validate every answer they get against the document.

// op documents one route.
type op struct {
	Summary string
	Tag     string
	// In is a value of the request body's type (nil: no body); InType,
	// when set, is the media type of a body that is a file, not JSON.
	In     any
	InType string
	// Out is a value of the answer's type (nil: no body); Status is the
	// success status (200 when 0).
	Out    any
	Status int
	// Query are the query parameters.
	Query []param
	// Also are other answers than errors, by status, with a value of
	// their body's type (nil: none).
	Also map[int]any
	// Raw: the answer is a file (a download) of any media type, whole
	// (200) or a range of it (206).
	Raw bool
}

type param struct {
	Name, Type, Description string
}

// route is a registered route with its documentation.
type route struct {
	method, path string
	access       access
	op           op
}

// openAPIDoc builds the document.
func (s *Server) openAPIDoc() ([]byte, error) {
	g := &schemaGen{components: map[string]any{}, names: map[reflect.Type]string{}}
	paths := map[string]map[string]any{}
	for _, rt := range s.table {
		o := rt.op
		opObj := map[string]any{
			"operationId": operationID(rt.method, rt.path),
			"summary":     o.Summary,
			"tags":        []string{o.Tag},
		}
		var params []any
		for _, name := range pathParams(rt.path) {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range o.Query {
			t := q.Type
			if t == "" {
				t = "string"
			}
			params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": map[string]any{"type": t}})
		}
		if params != nil {
			opObj["parameters"] = params
		}
		if o.InType != "" {
			opObj["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				o.InType: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}}
		} else if o.In != nil {
			opObj["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": g.of(reflect.TypeOf(o.In))}}}
		}
		status := o.Status
		if status == 0 {
			status = http.StatusOK
		}
		answer := func(st int, body any) map[string]any {
			a := map[string]any{"description": http.StatusText(st)}
			switch {
			case o.Raw:
				a["content"] = map[string]any{"*/*": map[string]any{"schema": map[string]any{}}}
			case body != nil:
				a["content"] = map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeOf(body))}}
			}
			return a
		}
		responses := map[string]any{fmt.Sprint(status): answer(status, o.Out)}
		if o.Raw {
			responses["206"] = answer(http.StatusPartialContent, nil)
		}
		for st, body := range o.Also {
			responses[fmt.Sprint(st)] = answer(st, body)
		}
		for _, st := range errorStatuses(rt.access) {
			if _, own := responses[fmt.Sprint(st)]; !own {
				responses[fmt.Sprint(st)] = map[string]any{"$ref": "#/components/responses/Error" + fmt.Sprint(st)}
			}
		}
		opObj["responses"] = responses
		switch rt.access &^ ownAccount {
		case open:
			opObj["security"] = []any{}
		case anyone:
			opObj["security"] = []any{map[string]any{}, map[string]any{"bearer": []any{}}, map[string]any{"basic": []any{}}}
		case edgeNode:
			opObj["security"] = []any{map[string]any{"edgeNode": []any{}}}
		}
		p := "/api/v1" + rt.path
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.method)] = opObj
	}

	// The error answers, one per status, each listing its codes.
	errResponses := map[string]any{}
	byStatus := map[int][]apierr.Code{}
	for _, c := range apierr.Codes() {
		byStatus[c.Status()] = append(byStatus[c.Status()], c)
	}
	for st, cs := range byStatus {
		var desc []string
		for _, c := range cs {
			desc = append(desc, "`"+string(c)+"`: "+c.Description())
		}
		errResponses["Error"+fmt.Sprint(st)] = map[string]any{
			"description": strings.Join(desc, "\n\n"),
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
	}
	var codes []string
	for _, c := range apierr.Codes() {
		codes = append(codes, string(c))
	}
	g.components["Error"] = map[string]any{
		"type": "object", "required": []string{"error"},
		"properties": map[string]any{"error": map[string]any{
			"type": "object", "required": []string{"code", "message", "details"},
			"properties": map[string]any{
				"code":    map[string]any{"type": "string", "enum": codes},
				"message": map[string]any{"type": "string"},
				"details": map[string]any{"type": "object"},
			},
		}},
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "Depot",
			"version":     version.Version,
			"description": "The REST API of a Depot registry: repositories, artifacts, users, groups, permissions, tokens, webhooks, edge nodes and administration. Errors answer `{\"error\": {\"code\", \"message\", \"details\"}}`; the codes are listed with each error answer.",
		},
		"servers": []any{map[string]any{"url": "/"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":   g.components,
			"responses": errResponses,
			"securitySchemes": map[string]any{
				"bearer":   map[string]any{"type": "http", "scheme": "bearer", "description": "A login session's access token (POST /auth/login) or an API token (dpt_...)."},
				"basic":    map[string]any{"type": "http", "scheme": "basic", "description": "A username with a password or an API token."},
				"edgeNode": map[string]any{"type": "http", "scheme": "bearer", "description": "An edge node's credential (dpe_...), on the node-to-origin routes."},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"basic": []any{}}},
	}
	return json.MarshalIndent(doc, "", " ")
}

// errorStatuses are the error answers a route of that access may give,
// besides those of its own validation (400 is everyone's).
func errorStatuses(a access) []int {
	st := []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge,
		http.StatusUnsupportedMediaType, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable,
		http.StatusRequestTimeout, http.StatusInsufficientStorage, http.StatusMethodNotAllowed,
		http.StatusUnauthorized, http.StatusForbidden} // open routes too: a wrong password, a disabled account
	if a&^ownAccount == edgeNode {
		st = append(st, http.StatusGone) // a change feed read from too far back
	}
	slices.Sort(st)
	return st
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}$")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.Trim(seg, "{}"), "..."))
		}
	}
	return out
}

// schemaGen makes JSON schemas (2020-12, as OpenAPI 3.1 has them) of Go
// types as encoding/json writes them: named structs become components.
type schemaGen struct {
	components map[string]any
	names      map[reflect.Type]string
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	rawType       = reflect.TypeOf(json.RawMessage{})
	marshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	durationType  = reflect.TypeOf(time.Duration(0))
	anyType       = reflect.TypeOf((*any)(nil)).Elem()
)

func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType || t == anyType:
		return map[string]any{}
	case t == durationType:
		return map[string]any{"type": "integer"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.of(t.Elem())
		return nullable(s)
	case reflect.Interface:
		return map[string]any{}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		// A nil slice is written as null.
		return map[string]any{"type": []string{"array", "null"}, "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
			return map[string]any{} // its own JSON
		}
		if t.Name() == "" {
			return g.structSchema(t)
		}
		name, ok := g.names[t]
		if !ok {
			name = g.componentName(t)
			g.names[t] = name
			g.components[name] = map[string]any{} // placeholder: recursion stops here
			g.components[name] = g.structSchema(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// componentName is t's name, with its package's when another type of
// that name was seen first.
func (g *schemaGen) componentName(t reflect.Type) string {
	name := strings.TrimSuffix(strings.ToUpper(t.Name()[:1])+t.Name()[1:], "View")
	if _, taken := g.components[name]; taken {
		pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
		name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
	}
	return name
}

func nullable(s map[string]any) map[string]any {
	if ref, ok := s["$ref"]; ok {
		return map[string]any{"oneOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
	}
	switch t := s["type"].(type) {
	case string:
		s["type"] = []string{t, "null"}
	case []string:
		if !slices.Contains(t, "null") {
			s["type"] = append(t, "null")
		}
	}
	return s
}

// structSchema is the object encoding/json writes for t: fields by their
// json names, embedded structs' fields flattened, omitempty fields (and
// those of an embedded pointer) optional and the others required.
func (g *schemaGen) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		s["required"] = required
	}
	return s
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft, req := f.Type, required
			if ft.Kind() == reflect.Pointer {
				// A nil embedded pointer writes none of its fields.
				ft, req = ft.Elem(), new([]string)
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, req)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.of(f.Type)
		if strings.Contains(opts, "string") {
			s = map[string]any{"type": "string"}
		}
		props[name] = s
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}
