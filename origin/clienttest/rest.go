package clienttest

import "github.com/depot-registry/depot/origin/origintest"

// ArtifactOf is the id of the artifact the REST API gives for a version
// of a package in a repository (GET /api/v1/packages/:name/versions); the
// test fails when the version is not listed.
func ArtifactOf(e *origintest.Env, auth, repoID, name, version string) string {
	e.T.Helper()
	var vs struct {
		Versions []struct {
			Version    string `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"versions"`
	}
	e.Do("GET", "/api/v1/packages/"+name+"/versions?repository_id="+repoID, auth, nil).Want(200).JSON(&vs)
	for _, v := range vs.Versions {
		if v.Version == version && v.ArtifactID != "" {
			return v.ArtifactID
		}
	}
	e.T.Fatalf("no version %s of %s in %+v", version, name, vs.Versions)
	return ""
}
