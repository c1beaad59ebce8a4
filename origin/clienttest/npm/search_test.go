package npm

import (
	"net/url"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

type quickAnswer struct {
	Results []struct {
		Type, Name, Version, Repository, Match, Summary string
		Score                                           float64
	}
}

// quick polls a quick search until its first result is of name (the
// indexer reads new packages in the background), and returns it.
func quick(t *testing.T, e *origintest.Env, auth, q, name string) quickAnswer {
	t.Helper()
	var got quickAnswer
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		e.Do("GET", "/api/v1/search/quick?q="+url.QueryEscape(q), auth, nil).Want(200).JSON(&got)
		if len(got.Results) > 0 && got.Results[0].Name == name || time.Now().After(deadline) {
			return got
		}
	}
}

// TestSearchPublished: packages published by npm are found by the
// API's search through what their package.json says (description,
// keywords, licence), by name, by name and version, and completed by
// suggest; never by a caller who may not read their repository.
func TestSearchPublished(t *testing.T) {
	e := clienttest.Start(t)
	_, alice := setup(t, e)
	c := newClient(t, e, "js", tokenAuth(alice))
	c.publish("demo-pkg", "1.0.0", "alpha")
	c.publish("@acme/other", "3.0.0", "beta")
	bearer := "Bearer " + alice.Token

	got := quick(t, e, bearer, "beta", "@acme/other")
	if r := got.Results; len(r) != 1 || r[0].Type != "package" || r[0].Match != "term" || r[0].Summary != "demo package beta" ||
		r[0].Version != "3.0.0" || r[0].Repository != "js" {
		t.Errorf("by a word of its description: %+v", got)
	}
	if got := quick(t, e, bearer, "demo-pkg", "demo-pkg"); got.Results[0].Match != "name" || got.Results[0].Score != 1 {
		t.Errorf("by name: %+v", got)
	}
	if got := quick(t, e, bearer, "@acme/other@3.0.0", "@acme/other"); got.Results[0].Type != "version" || got.Results[0].Version != "3.0.0" {
		t.Errorf("by name and version: %+v", got)
	}
	if got := quick(t, e, bearer, "MIT", "@acme/other"); len(got.Results) != 2 {
		t.Errorf("by licence: %+v", got)
	}
	var sugg struct{ Suggestions []struct{ Text, Type string } }
	e.Do("GET", "/api/v1/search/suggest?q=dem", bearer, nil).Want(200).JSON(&sugg)
	if s := sugg.Suggestions; len(s) != 2 || s[0].Text != "demo-pkg" || s[0].Type != "package" || s[1].Text != "demo" || s[1].Type != "term" {
		t.Errorf("suggest dem: %+v", sugg)
	}
	var adv struct {
		Total   int
		Results []struct{ Name, Version, Type string }
	}
	e.Do("GET", "/api/v1/search/advanced?query=demo&format=npm&repository=js&min_date="+time.Now().UTC().Format("2006-01-02"), bearer, nil).Want(200).JSON(&adv)
	if adv.Total != 2 || adv.Results[0].Type != "version" {
		t.Errorf("advanced: %+v", adv)
	}
	// The repository is private: nothing for anyone else.
	e.Do("GET", "/api/v1/search/quick?q=beta", "", nil).Want(200).JSON(&got)
	if len(got.Results) != 0 {
		t.Errorf("anonymous: %+v", got)
	}
	e.Do("GET", "/api/v1/search/suggest?q=dem", "", nil).Want(200).JSON(&sugg)
	if len(sugg.Suggestions) != 0 {
		t.Errorf("anonymous suggestions: %+v", sugg)
	}
}
