package npm_test

import (
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/npm"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

func publishBody(t *testing.T, name, version, description string, keywords []string) []byte {
	t.Helper()
	data := formattest.Tgz(t, map[string]string{"package/package.json": `{"name":"` + name + `"}`})
	s1, s512 := sha1.Sum(data), sha512.Sum512(data)
	b, err := json.Marshal(map[string]any{
		"_id": name, "name": name, "description": description, "dist-tags": map[string]any{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "description": description, "keywords": keywords, "readme": "# " + name,
			"dist": map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])}}},
		"_attachments": map[string]any{name + "-" + version + ".tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(data), "length": len(data)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type searchAnswer struct {
	Objects []struct {
		Package struct {
			Name        string   `json:"name"`
			Version     string   `json:"version"`
			Description string   `json:"description"`
			Keywords    []string `json:"keywords"`
		} `json:"package"`
	} `json:"objects"`
	Total int `json:"total"`
}

func (a searchAnswer) names() []string {
	out := []string{}
	for _, o := range a.Objects {
		out = append(out, o.Package.Name)
	}
	return out
}

// TestSearch: search matches each word in the name, the description or
// the keywords, pages with from and size over matches in name order, and
// counts every match; it reads the search record the publish wrote, and
// falls back to the package record for a package that has none.
func TestSearch(t *testing.T) {
	e := formattest.New(t)
	repo := e.Repo("js", "npm")
	srv := e.Node(func(env *format.Env) []format.Format { return []format.Format{npm.New(env)} })
	publish := func(name, version, description string, keywords ...string) {
		t.Helper()
		if code, body := e.Do("PUT", srv.URL+"/npm/js/"+name, "application/json", publishBody(t, name, version, description, keywords)); code != http.StatusCreated {
			t.Fatalf("publish %s: %d %s", name, code, body)
		}
	}
	search := func(query string) searchAnswer {
		t.Helper()
		code, body := e.Do("GET", srv.URL+"/npm/js/-/v1/search?"+query, "", nil)
		var a searchAnswer
		if code != http.StatusOK || json.Unmarshal(body, &a) != nil {
			t.Fatalf("search %s: %d %s", query, code, body)
		}
		return a
	}
	for i := range 5 {
		publish(fmt.Sprintf("tool-%d", i), "1.0.0", "A command line helper", "cli")
	}
	publish("json-kit", "1.0.0", "Parses JSON", "parser")
	publish("yaml-kit", "1.0.0", "Reads YAML files", "Parser", "yaml")
	publish("yaml-kit", "1.1.0", "Reads YAML documents", "yaml")
	publish("@acme/widget", "2.0.0", "Widgets for the command line", "ui")

	for _, c := range []struct {
		query string
		want  []string
		total int
	}{
		{"text=kit", []string{"json-kit", "yaml-kit"}, 2},
		{"text=parser", []string{"json-kit"}, 1}, // yaml-kit's latest publish dropped the keyword
		{"text=documents+yaml", []string{"yaml-kit"}, 1},
		{"text=COMMAND+line", []string{"@acme/widget", "tool-0", "tool-1", "tool-2", "tool-3", "tool-4"}, 6},
		{"text=command&from=2&size=3", []string{"tool-1", "tool-2", "tool-3"}, 6},
		{"text=command&from=9", []string{}, 6},
		{"text=nothing-like-it", []string{}, 0},
		{"text=", []string{"@acme/widget", "json-kit", "tool-0", "tool-1", "tool-2", "tool-3", "tool-4", "yaml-kit"}, 8},
	} {
		a := search(c.query)
		if got := a.names(); !reflect.DeepEqual(got, c.want) || a.Total != c.total {
			t.Errorf("search %s = %v (total %d), want %v (total %d)", c.query, got, a.Total, c.want, c.total)
		}
	}
	if a := search("text=yaml"); len(a.Objects) != 1 || a.Objects[0].Package.Version != "1.1.0" ||
		a.Objects[0].Package.Description != "Reads YAML documents" {
		t.Errorf("a hit shows its latest version and package record: %+v", a.Objects)
	}

	// What search remembers follows publishes at once: a new package is
	// found, a new version is the hit's.
	publish("toml-kit", "0.1.0", "Reads TOML", "parser")
	publish("json-kit", "1.2.0", "Parses JSON fast", "parser")
	if a := search("text=parser"); !reflect.DeepEqual(a.names(), []string{"json-kit", "toml-kit"}) || a.Total != 2 ||
		a.Objects[0].Package.Version != "1.2.0" || a.Objects[0].Package.Description != "Parses JSON fast" {
		t.Errorf("after two publishes: %+v (total %d)", a.Objects, a.Total)
	}

	// A package whose search record is missing (published before search
	// records were kept) is found through its package record.
	if _, err := e.Apply(context.Background(), &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{{Key: "find/json-kit"}}}); err != nil {
		t.Fatal(err)
	}
	if a := search("text=parses"); !reflect.DeepEqual(a.names(), []string{"json-kit"}) || a.Total != 1 {
		t.Errorf("without a search record: %v (total %d)", a.names(), a.Total)
	}
}
