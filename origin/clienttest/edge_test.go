package clienttest_test

import (
	"encoding/base64"
	"maps"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// fixture is an origin with an edge process in front (e.URL is the
// edge's), the fixture's repositories, private, and its writes made
// through the edge or at the origin.
type fixture struct {
	e            *origintest.Env
	origin, edge string
	auth         string // the admin's API token, as Basic
	repoIDs      []string
	f            formattest.Fixture
}

func startFixture(t *testing.T, writeThroughEdge bool) fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a depot edge process")
	}
	fx := fixture{e: origintest.Start(t, origintest.Options{})}
	fx.origin = fx.e.URL
	clienttest.ThroughEdge(t, fx.e)
	fx.edge = fx.e.URL
	for _, r := range formattest.FixtureRepos {
		fx.repoIDs = append(fx.repoIDs, fx.e.CreateRepo(r[0], r[1], false))
	}
	fx.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+fx.e.Token(fx.e.Admin, []string{"repository:read", "repository:write"}, nil)))
	fx.f = formattest.NewFixture(t)
	to := fx.origin
	if writeThroughEdge {
		to = fx.edge
	}
	for _, w := range fx.f.Writes {
		if got := formattest.Fetch(t, to, w, fx.auth); got.Status != w.Want {
			t.Fatalf("%s %s at %s: %d %s", w.Method, w.Path, to, got.Status, got.Body)
		}
	}
	return fx
}

// TestEdgeAnswersAsTheOrigin: a real edge process and the origin behind
// it answer every read route of every format the same, byte for byte
// (statuses, bodies, the headers clients act on; each node's own base
// URL aside), with credentials and without, after the content was
// written through the edge. The REST download too. And again, answered
// from the answers the edge remembers.
func TestEdgeAnswersAsTheOrigin(t *testing.T) {
	fx := startFixture(t, true)
	e, origin, edge, auth, f := fx.e, fx.origin, fx.edge, fx.auth, fx.f
	var versions struct {
		Versions []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/tool/versions", e.Admin, nil).Want(200).JSON(&versions)
	if len(versions.Versions) != 1 {
		t.Fatalf("versions of tool: %+v", versions)
	}
	// Every format's upload is a package with a version in the REST API.
	for _, r := range formattest.FixtureRepos {
		var list struct {
			Repositories []struct{ ID, Name string } `json:"repositories"`
		}
		e.Do("GET", "/api/v1/repositories?limit=100", e.Admin, nil).Want(200).JSON(&list)
		for _, repo := range list.Repositories {
			if repo.Name != r[0] {
				continue
			}
			var pkgs struct {
				Packages []struct {
					Name         string `json:"name"`
					VersionCount int    `json:"version_count"`
				} `json:"packages"`
			}
			e.Do("GET", "/api/v1/packages?repository_id="+repo.ID, e.Admin, nil).Want(200).JSON(&pkgs)
			if len(pkgs.Packages) == 0 || pkgs.Packages[0].VersionCount == 0 {
				t.Errorf("repository %s (%s) lists no package with a version: %+v", r[0], r[1], pkgs)
			}
		}
	}
	reads := append(f.Reads, formattest.Call{Method: "GET", Path: "/api/v1/artifacts/" + versions.Versions[0].ArtifactID + "/download"})
	// A forwarded answer's absolute URLs name the edge: the challenge of
	// a push, decided by the origin, sends the client to the edge's realm.
	if r := formattest.Fetch(t, edge, formattest.Call{Method: "POST", Path: "/v2/ctr/app/blobs/uploads/"}, ""); r.Status != 401 ||
		!strings.Contains(r.Header.Get("WWW-Authenticate"), `realm="`+edge+`/v2/token"`) {
		t.Errorf("an anonymous push through the edge: %d %q", r.Status, r.Header.Get("WWW-Authenticate"))
	}

	// Twice: the second time the edge answers from what it remembers.
	for range 2 {
		formattest.CompareReads(t, reads, origin, edge, auth)
		formattest.CompareReads(t, reads, origin, edge, "")
	}

	// A document built from the request's host says it varies on it,
	// and on Accept where negotiated, answered anew or from memory (the
	// second ask, right after the first).
	for _, c := range []formattest.Call{{Method: "GET", Path: "/npm/js/demo-pkg"}, {Method: "GET", Path: "/pypi/py/simple/demo/"}} {
		want := "Host, X-Forwarded-Proto, X-Forwarded-Host, Accept"
		if got := formattest.Fetch(t, origin, c, auth).Header.Values("Vary"); len(got) != 1 || got[0] != want {
			t.Errorf("%s at the origin: Vary %q, want %q", c.Path, got, want)
		}
		for i := range 2 {
			if got := formattest.Fetch(t, edge, c, auth).Header.Values("Vary"); len(got) != 1 || got[0] != want {
				t.Errorf("%s at the edge (ask %d): Vary %q, want %q", c.Path, i+1, got, want)
			}
		}
	}
}

// TestEdgeAccessMatrix: every read route of every format, asked by every
// kind of caller (anonymous, a reader with an API token in Basic, in
// NuGet's X-NuGet-ApiKey and with a login session, a user without a
// grant, a revoked API token, a login session ended by logout), answers
// the same at the origin and at an edge, cold and from the answers the
// edge remembers: each read is asked
// by all of them in turn, so a remembered answer earned by one caller is
// there when the next one asks. (An anonymous request right after a
// reader's X-NuGet-ApiKey read used to get the reader's answer.)
func TestEdgeAccessMatrix(t *testing.T) {
	fx := startFixture(t, false)
	e, origin, edge, ids, f := fx.e, fx.origin, fx.edge, fx.repoIDs, fx.f
	reader := clienttest.NewUser(e, "reader", "repository:read")
	stranger := clienttest.NewUser(e, "stranger", "repository:read")
	for _, id := range ids {
		e.Grant(id, reader.ID, false, "read")
	}
	session := e.Login(reader.Name, reader.Password)
	var revoked struct{ ID, Token string }
	e.Do("POST", "/api/v1/users/me/tokens", session, map[string]any{"name": "gone", "scopes": []string{"repository:read"}}).Want(201).JSON(&revoked)
	e.Do("DELETE", "/api/v1/users/me/tokens/"+revoked.ID, session, nil).Want(204)
	// A session the edge has vouched for, then ended.
	ended := e.Login(reader.Name, reader.Password)
	if r := formattest.Fetch(t, edge, formattest.Call{Method: "GET", Path: f.Tool}, "Bearer "+ended); r.Status != 200 {
		t.Fatalf("the reader's session at the edge: %d", r.Status)
	}
	e.Do("POST", "/api/v1/auth/logout", ended, nil).Want(204)
	basic := func(user, secret string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))}
	}
	callers := []struct {
		name   string
		header map[string]string
	}{
		{"reader (API token)", basic(reader.Name, reader.Token)},
		{"anonymous", nil},
		{"reader (X-NuGet-ApiKey)", map[string]string{"X-NuGet-ApiKey": reader.Token}},
		{"anonymous", nil},
		{"reader (session)", map[string]string{"Authorization": "Bearer " + session}},
		{"stranger", basic(stranger.Name, stranger.Token)},
		{"revoked token", basic(reader.Name, revoked.Token)},
		{"ended session", map[string]string{"Authorization": "Bearer " + ended}},
		{"anonymous", nil},
	}
	// The edge has applied everything above before the matrix starts.
	var idx string
	if r := e.Do("GET", "/api/v1/health", e.Admin, nil); r.Status == 200 {
		idx = r.Header.Get("X-Depot-Index")
	}
	for pass := range 2 {
		for _, rd := range f.Reads {
			for _, c := range callers {
				call := rd
				call.Header = map[string]string{}
				maps.Copy(call.Header, rd.Header)
				maps.Copy(call.Header, c.header)
				if idx != "" {
					call.Header["X-Depot-Min-Index"] = idx
				}
				w, g := formattest.Fetch(t, origin, call, ""), formattest.Fetch(t, edge, call, "")
				if w.Status != g.Status || (w.Status == 200 && formattest.Normalize(w.Body, origin) != formattest.Normalize(g.Body, edge)) {
					t.Errorf("pass %d, %s: %s %s: origin %d, edge %d %.200s", pass, c.name, rd.Method, rd.Path, w.Status, g.Status, g.Body)
				}
			}
		}
	}
}
