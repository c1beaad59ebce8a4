package npm

import (
	"net/http"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestStaleUnpublishRefused: an unpublish document read before another
// publish must not remove the version published in between.
func TestStaleUnpublishRefused(t *testing.T) {
	e := clienttest.Start(t)
	repoID, u := setup(t, e)
	e.Do("PUT", "/npm/js/stale", u.Token, publishDoc(t, "stale", "1.0.0", goodTgz(t), nil)).Want(201)
	e.Do("PUT", "/npm/js/stale", u.Token, publishDoc(t, "stale", "1.1.0", goodTgz(t), nil)).Want(201)
	var doc map[string]any
	e.Do("GET", "/npm/js/stale?write=true", u.Token, nil).Want(200).JSON(&doc)
	rev, _ := doc["_rev"].(string)
	if rev == "" {
		t.Fatalf("no _rev in %v", doc)
	}
	// Another client publishes 1.2.0; then the first drops 1.0.0 from the
	// document it read.
	e.Do("PUT", "/npm/js/stale", u.Token, publishDoc(t, "stale", "1.2.0", goodTgz(t), nil)).Want(201)
	versions := doc["versions"].(map[string]any)
	delete(versions, "1.0.0")
	doc["dist-tags"] = map[string]string{"latest": "1.1.0"}
	wantNPMError(t, e.Do("PUT", "/npm/js/stale/-rev/"+rev, u.Token, doc), http.StatusConflict)
	if n, _ := e.RepoCounters(repoID); n != 3 {
		t.Fatalf("artifact_count %d after a refused stale unpublish, want 3", n)
	}
}
