package all_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestRepositoryOfAnotherFormat: a path of one format naming a repository
// of another is not found, and a caller who may read the repository is
// told what it is and where it is served; one who may not learns nothing.
func TestRepositoryOfAnotherFormat(t *testing.T) {
	e := formattest.New(t)
	e.Repo("js", "npm") // private
	srv := e.Node(all.Build)
	status, body := e.Do("GET", srv.URL+"/generic/js/tool/1.0/tool.bin", "", nil)
	want := "repository js is a npm repository, not generic: it is served at " + srv.URL + "/npm/js/"
	if status != 404 || !strings.Contains(string(body), want) {
		t.Fatalf("admin: %d %s, want 404 saying %q", status, body, want)
	}

	env := &format.Env{Meta: e.Store, Now: time.Now}
	r := &format.Request{Principal: &auth.Principal{UserID: "u1", Username: "ann", Role: meta.RoleUser}}
	_, err := env.Repo(r, "js", meta.ActionRead, "generic")
	var rnf *format.RepoNotFoundError
	if !errors.As(err, &rnf) || rnf.Format != "" || err.Error() != "repository js not found" {
		t.Fatalf("a user who may not read it: %v", err)
	}
}
