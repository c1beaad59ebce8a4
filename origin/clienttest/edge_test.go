package clienttest_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/formattest"
)

// TestEdgeAnswersAsTheOrigin: a real edge process and the origin behind
// it answer every read route of every format the same, byte for byte
// (statuses, bodies, the headers clients act on; each node's own base
// URL aside), with credentials and without, after the content was
// written through the edge. The REST download too. And again, answered
// from the answers the edge remembers.
func TestEdgeAnswersAsTheOrigin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a depot edge process")
	}
	e := origintest.Start(t, origintest.Options{})
	origin := e.URL
	clienttest.ThroughEdge(t, e)
	edge := e.URL
	for _, r := range formattest.FixtureRepos {
		e.CreateRepo(r[0], r[1], false)
	}
	token := e.Token(e.Admin, []string{"repository:read", "repository:write"}, nil)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+token))
	f := formattest.NewFixture(t)
	for _, w := range f.Writes {
		if got := formattest.Fetch(t, edge, w, auth); got.Status != w.Want {
			t.Fatalf("%s %s through the edge: %d %s", w.Method, w.Path, got.Status, got.Body)
		}
	}
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
}
