package oci_test

import (
	"slices"
	"testing"
)

// TestRESTDelete: deleting an image version through the REST API keeps the
// registry's view consistent: a tag is untagged (the manifest stays,
// reachable by digest), and the digest artifact of an untagged manifest
// deletes the manifest.
func TestRESTDelete(t *testing.T) {
	e := start(t)
	repoID := e.CreateRepo("imgs", "docker", false)
	auth := e.Admin
	body := image(t, e, auth, "imgs/app", "rest-delete", "")
	digest := putManifest(e, auth, "imgs/app", "a", body).Want(201).Header.Get("Docker-Content-Digest")
	putManifest(e, auth, "imgs/app", "b", body).Want(201)

	artifactAt := func(version string) string {
		t.Helper()
		var vs struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/app/versions?repository_id="+repoID, auth, nil).Want(200).JSON(&vs)
		for _, v := range vs.Versions {
			if v.Version == version {
				return v.ArtifactID
			}
		}
		t.Fatalf("no version %s in %+v", version, vs.Versions)
		return ""
	}

	e.Do("DELETE", "/api/v1/artifacts/"+artifactAt("a"), auth, nil).Want(204)
	if tags := tagList(t, e, auth, "imgs/app", ""); !slices.Equal(tags, []string{"b"}) {
		t.Fatalf("tags after deleting a: %v", tags)
	}
	e.Do("DELETE", "/api/v1/artifacts/"+artifactAt("b"), auth, nil).Want(204)
	if tags := tagList(t, e, auth, "imgs/app", ""); len(tags) != 0 {
		t.Fatalf("tags after deleting b: %v", tags)
	}
	// The untagged manifest is still served and listed by digest.
	e.Do("GET", "/v2/imgs/app/manifests/"+digest, auth, nil).Want(200)
	if got := versions(t, e, auth, repoID, "app"); !slices.Equal(got, []string{digest}) {
		t.Fatalf("versions after untagging everything: %v", got)
	}
	e.Do("DELETE", "/api/v1/artifacts/"+artifactAt(digest), auth, nil).Want(204)
	e.Do("GET", "/v2/imgs/app/manifests/"+digest, auth, nil).Want(404)
	if n, _ := e.RepoCounters(repoID); n != 0 {
		t.Fatalf("artifact_count %d after deleting the manifest", n)
	}
}
