package webui

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// The API page renders the OpenAPI document the API serves
// (/api/v1/openapi.json), from this server, with no viewer loaded from
// elsewhere: operations by tag, each with its parameters, body and
// answers, and the schemas they name.

type apiDoc struct {
	Title, Version, Description string
	Tags                        []apiTag
	Schemas                     []apiSchema
}

type apiTag struct {
	Name string
	Ops  []apiOp
}

type apiOp struct {
	ID, Method, Path, Summary string
	Params                    []apiParam
	Body                      string // the request body's schema, in short
	Answers                   []apiAnswer
	Public                    bool
}

type apiParam struct{ Name, In, Type, Description string }

type apiAnswer struct{ Status, Body string }

type apiSchema struct {
	Name   string
	Fields []apiField
}

type apiField struct {
	Name, Type string
	Required   bool
}

// parseAPIDoc reads the document into what the page shows.
func parseAPIDoc(raw []byte) (*apiDoc, error) {
	var d struct {
		Info struct{ Title, Version, Description string }
		// paths -> method -> operation
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas map[string]map[string]any
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	out := &apiDoc{Title: d.Info.Title, Version: d.Info.Version, Description: d.Info.Description}
	tags := map[string][]apiOp{}
	for path, methods := range d.Paths {
		for method, rawOp := range methods {
			var o struct {
				OperationID string `json:"operationId"`
				Summary     string
				Tags        []string
				Parameters  []struct {
					Name, In, Description string
					Schema                map[string]any
				}
				RequestBody struct {
					Content map[string]struct{ Schema map[string]any }
				} `json:"requestBody"`
				Responses map[string]struct {
					Ref     string `json:"$ref"`
					Content map[string]struct{ Schema map[string]any }
				}
				Security *[]map[string]any
			}
			if err := json.Unmarshal(rawOp, &o); err != nil {
				return nil, err
			}
			op := apiOp{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Summary: o.Summary,
				Public: o.Security != nil && len(*o.Security) == 0}
			for _, p := range o.Parameters {
				op.Params = append(op.Params, apiParam{Name: p.Name, In: p.In, Type: typeOf(p.Schema), Description: p.Description})
			}
			if c, ok := o.RequestBody.Content["application/json"]; ok {
				op.Body = typeOf(c.Schema)
			}
			for status, a := range o.Responses {
				if a.Ref != "" {
					continue // the error answers, listed once on the page
				}
				body := ""
				for ct, c := range a.Content {
					if ct == "application/json" {
						body = typeOf(c.Schema)
					} else {
						body = "the file"
					}
				}
				op.Answers = append(op.Answers, apiAnswer{Status: status, Body: body})
			}
			sort.Slice(op.Answers, func(i, j int) bool { return op.Answers[i].Status < op.Answers[j].Status })
			tag := "Other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			tags[tag] = append(tags[tag], op)
		}
	}
	for name, ops := range tags {
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return ops[i].Method < ops[j].Method
		})
		out.Tags = append(out.Tags, apiTag{Name: name, Ops: ops})
	}
	sort.Slice(out.Tags, func(i, j int) bool { return out.Tags[i].Name < out.Tags[j].Name })
	for name, s := range d.Components.Schemas {
		sch := apiSchema{Name: name}
		props, _ := s["properties"].(map[string]any)
		var req []string
		if r, ok := s["required"].([]any); ok {
			for _, x := range r {
				if n, ok := x.(string); ok {
					req = append(req, n)
				}
			}
		}
		for field, fs := range props {
			m, _ := fs.(map[string]any)
			sch.Fields = append(sch.Fields, apiField{Name: field, Type: typeOf(m), Required: slices.Contains(req, field)})
		}
		sort.Slice(sch.Fields, func(i, j int) bool { return sch.Fields[i].Name < sch.Fields[j].Name })
		out.Schemas = append(out.Schemas, sch)
	}
	sort.Slice(out.Schemas, func(i, j int) bool { return out.Schemas[i].Name < out.Schemas[j].Name })
	return out, nil
}

// typeOf writes a schema in short: a component's name, string,
// array of X, X or null.
func typeOf(s map[string]any) string {
	if s == nil {
		return "any"
	}
	if ref, ok := s["$ref"].(string); ok {
		return ref[strings.LastIndex(ref, "/")+1:]
	}
	if alts, ok := s["oneOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			m, _ := a.(map[string]any)
			parts = append(parts, typeOf(m))
		}
		return strings.Join(parts, " or ")
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok {
				types = append(types, n)
			}
		}
	}
	for i, t := range types {
		switch t {
		case "array":
			items, _ := s["items"].(map[string]any)
			types[i] = "array of " + typeOf(items)
		case "object":
			if _, ok := s["properties"]; ok {
				types[i] = "object"
			} else if ap, ok := s["additionalProperties"].(map[string]any); ok {
				types[i] = "map of " + typeOf(ap)
			}
		case "string":
			if f, ok := s["format"].(string); ok {
				types[i] = "string (" + f + ")"
			}
		}
	}
	if len(types) == 0 {
		return "any"
	}
	return strings.Join(types, " or ")
}

func (u *UI) apiPage(w http.ResponseWriter, c *call) error {
	doc, err := parseAPIDoc(u.d.OpenAPI)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "api", "API", doc)
}
