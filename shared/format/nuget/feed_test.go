package nuget_test

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/nuget"
	"github.com/depot-registry/depot/shared/formattest"
)

// v2Feed is what a test reads of a v2 (Atom) answer.
type v2Feed struct {
	Entries []struct {
		Props struct {
			ID        string `xml:"Id"`
			Version   string `xml:"Version"`
			Latest    bool   `xml:"IsLatestVersion"`
			AbsLatest bool   `xml:"IsAbsoluteLatestVersion"`
			Pre       bool   `xml:"IsPrerelease"`
		} `xml:"properties"`
	} `xml:"entry"`
	Links []struct {
		Rel  string `xml:"rel,attr"`
		Href string `xml:"href,attr"`
	} `xml:"link"`
}

// list is the feed's entries as "id version" with "+" after the latest
// release and "*" after the latest version.
func (f v2Feed) list() []string {
	out := []string{}
	for _, e := range f.Entries {
		s := e.Props.ID + " " + e.Props.Version
		if e.Props.Latest {
			s += "+"
		}
		if e.Props.AbsLatest {
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

// TestV2Feed: the v2 feed marks each package's latest release
// (IsLatestVersion) and latest version (IsAbsoluteLatestVersion) by
// NuGet's version order, honours $filter on them (what nuget 2.x sends to
// install without -Version), $orderby, $skip and $top, lists newest first
// by default, pages long answers with a next link, and refuses query
// options it cannot honour.
func TestV2Feed(t *testing.T) {
	e := formattest.New(t)
	e.Repo("feed", "nuget")
	srv := e.Node(func(env *format.Env) []format.Format { return []format.Format{nuget.New(env)} })
	push := func(id, version string) {
		t.Helper()
		nupkg := formattest.Zip(t, map[string]string{id + ".nuspec": `<package><metadata><id>` + id + `</id><version>` + version +
			`</version><authors>depot</authors><description>the ` + id + ` package</description></metadata></package>`})
		if code, body := e.Do("PUT", srv.URL+"/nuget/feed/", "application/octet-stream", nupkg); code != http.StatusCreated {
			t.Fatalf("push %s %s: %d %s", id, version, code, body)
		}
	}
	// In an order that is neither the version order nor the string order.
	for _, v := range []string{"1.2.0", "2.0.0-beta.10", "1.0.0", "1.10.0", "2.0.0-beta.2"} {
		push("Demo.Pkg", v)
	}
	push("Other.Pkg", "1.0.0")
	push("Other.Pkg", "1.1.0-rc")
	get := func(query string) (int, v2Feed, string) {
		t.Helper()
		code, body := e.Do("GET", srv.URL+"/nuget/feed/"+query, "", nil)
		var f v2Feed
		if code == http.StatusOK {
			if err := xml.Unmarshal(body, &f); err != nil {
				t.Fatalf("%s: %v\n%s", query, err, body)
			}
		}
		return code, f, string(body)
	}
	q := func(path string, kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return path + "?" + v.Encode()
	}
	demo := []string{"Demo.Pkg 2.0.0-beta.10*", "Demo.Pkg 2.0.0-beta.2", "Demo.Pkg 1.10.0+", "Demo.Pkg 1.2.0", "Demo.Pkg 1.0.0"}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{q("FindPackagesById()", "id", "'Demo.Pkg'"), demo},
		{q("FindPackagesById()", "id", "'demo.pkg'"), demo},
		// nuget install Demo.Pkg (nuget 2.8), and with -Prerelease.
		{q("FindPackagesById()", "$filter", "IsLatestVersion", "$orderby", "Version desc", "$top", "1", "id", "'Demo.Pkg'"), []string{"Demo.Pkg 1.10.0+"}},
		{q("FindPackagesById()", "$filter", "IsAbsoluteLatestVersion", "$orderby", "Version desc", "$top", "1", "id", "'Demo.Pkg'"), []string{"Demo.Pkg 2.0.0-beta.10*"}},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$orderby", "Version"), reversed(demo)},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$orderby", "Version asc"), reversed(demo)},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$orderby", "Version desc", "$skip", "1", "$top", "2"), demo[1:3]},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$skip", "9"), []string{}},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$top", "0"), []string{}},
		{q("FindPackagesById()", "id", "'Demo.Pkg'", "$filter", "IsPrerelease eq false and not IsLatestVersion"), []string{"Demo.Pkg 1.2.0", "Demo.Pkg 1.0.0"}},
		{q("FindPackagesById()", "id", "'Nope'"), []string{}},
		// What other v2 clients send.
		{q("Packages()", "$filter", "(tolower(Id) eq 'demo.pkg') and IsLatestVersion"), []string{"Demo.Pkg 1.10.0+"}},
		{q("Packages()", "$filter", "Id eq 'Demo.Pkg' and Version eq '1.2.0'"), []string{"Demo.Pkg 1.2.0"}},
		{q("Packages()", "$filter", "IsLatestVersion", "$orderby", "Id desc"), []string{"Other.Pkg 1.0.0+", "Demo.Pkg 1.10.0+"}},
		{q("Packages()", "$filter", "IsAbsoluteLatestVersion or (Id eq 'Other.Pkg' and IsLatestVersion)"),
			[]string{"Demo.Pkg 2.0.0-beta.10*", "Other.Pkg 1.1.0-rc*", "Other.Pkg 1.0.0+"}},
		{q("Packages()", "$filter", "substringof('other', tolower(Id)) and Id ne null"), []string{"Other.Pkg 1.1.0-rc*", "Other.Pkg 1.0.0+"}},
		{q("Search()", "searchTerm", "'OTHER'", "targetFramework", "''", "includePrerelease", "false"), []string{"Other.Pkg 1.0.0+"}},
		{q("Search()", "searchTerm", "'nothing like it'", "includePrerelease", "true"), []string{}},
		{q("Search()", "searchTerm", "''", "includePrerelease", "true", "$filter", "IsAbsoluteLatestVersion"), []string{"Demo.Pkg 2.0.0-beta.10*", "Other.Pkg 1.1.0-rc*"}},
		{q("Search()", "searchTerm", "'package'", "$filter", "IsLatestVersion"), []string{"Demo.Pkg 1.10.0+", "Other.Pkg 1.0.0+"}},
	} {
		code, f, body := get(c.query)
		if got := f.list(); code != http.StatusOK || !slices.Equal(got, c.want) {
			t.Errorf("%s: %d %v, want %v\n%.300s", c.query, code, got, c.want, body)
		}
	}
	if code, f, body := get("Packages(Id='Demo.Pkg',Version='1.10.0')"); code != http.StatusOK || !strings.Contains(body, `<d:IsLatestVersion m:type="Edm.Boolean">true</d:IsLatestVersion>`) {
		t.Errorf("Packages(Id,Version) of the latest release: %d %v %s", code, f.list(), body)
	}

	for _, bad := range []string{
		q("FindPackagesById()", "id", "'Demo.Pkg'", "$top", "-1"),
		q("FindPackagesById()", "id", "'Demo.Pkg'", "$skip", "many"),
		q("FindPackagesById()", "id", "'Demo.Pkg'", "$top", "99999999999999999999999"),
		q("FindPackagesById()", "id", "'Demo.Pkg'", "$orderby", "PackageSize desc"),
		q("FindPackagesById()", "id", "'Demo.Pkg'", "$orderby", "Version sideways"),
		q("Packages()", "$filter", "IsLatest"),
		q("Packages()", "$filter", "Id eq 'x' and"),
		q("Packages()", "$filter", "(Id eq 'x'"),
		q("Packages()", "$filter", "Id eq 'x"),
		q("Packages()", "$filter", "Id"),
		q("Packages()", "$filter", "Id eq true"),
		q("Packages()", "$filter", "tolower(Id, Version) eq 'x'"),
		q("Packages()", "$filter", "DownloadCount gt 5"),
	} {
		if code, _, body := get(bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d %.200s, want 400", bad, code, body)
		}
	}

	// A long answer comes in pages the client follows.
	for i := range 120 {
		push("Many.Pkg", fmt.Sprintf("1.0.%d", i))
	}
	var got []string
	next := q("FindPackagesById()", "id", "'Many.Pkg'", "$top", "110")
	for pages := 0; next != ""; pages++ {
		if pages > 2 {
			t.Fatal("more than two pages of 110 entries")
		}
		code, f, body := get(next)
		if code != http.StatusOK || len(f.Entries) > 100 {
			t.Fatalf("%s: %d, %d entries %.200s", next, code, len(f.Entries), body)
		}
		got = append(got, f.list()...)
		next = ""
		for _, l := range f.Links {
			if l.Rel == "next" {
				next = strings.TrimPrefix(l.Href, srv.URL+"/nuget/feed/")
			}
		}
	}
	if len(got) != 110 || got[0] != "Many.Pkg 1.0.119+*" || got[109] != "Many.Pkg 1.0.10" {
		t.Errorf("paged: %d entries, %v ... %v", len(got), got[:min(len(got), 1)], got[max(0, len(got)-1):])
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
