package npm

import (
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestRESTDelete: deleting a version through the REST API is an unpublish:
// the dist-tags follow, so "latest" never names a missing version.
func TestRESTDelete(t *testing.T) {
	e := clienttest.Start(t)
	repoID, u := setup(t, e)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		e.Do("PUT", "/npm/js/rest-pkg", u.Token, publishDoc(t, "rest-pkg", v, goodTgz(t), nil)).Want(201)
	}
	var vs struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/rest-pkg/versions?repository_id="+repoID, u.Token, nil).Want(200).JSON(&vs)
	var latestID string
	for _, v := range vs.Versions {
		if v.Version == "1.1.0" {
			latestID = v.ArtifactID
		}
	}
	if latestID == "" {
		t.Fatalf("versions: %+v", vs)
	}
	e.Do("DELETE", "/api/v1/artifacts/"+latestID, u.Token, nil).Want(204)
	var tags map[string]string
	e.Do("GET", "/npm/js/-/package/rest-pkg/dist-tags", u.Token, nil).Want(200).JSON(&tags)
	if tags["latest"] != "1.0.0" {
		t.Fatalf("dist-tags after deleting 1.1.0: %v", tags)
	}
	e.Do("GET", "/npm/js/rest-pkg/-/rest-pkg-1.1.0.tgz", u.Token, nil).Want(404)
}
