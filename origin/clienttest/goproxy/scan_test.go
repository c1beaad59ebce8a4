package goproxy_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestModuleScans: module zips uploaded to a go repository are scanned on
// upload against the Go advisories: github.com/gin-gonic/gin v1.9.0 with
// exactly the findings of the data's test case and the case's unaffected
// version with none; a module whose go.mod requires golang.org/x/text
// v0.3.5 with that test case's findings as dependency findings.
func TestModuleScans(t *testing.T) {
	e := start(t)
	repoID := e.CreateRepo("gomods", "go", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	clienttest.LoadAdvisories(t, e, "Go")
	upload := func(path, version, gomod string) {
		t.Helper()
		dir := t.TempDir()
		clienttest.WriteFile(t, filepath.Join(dir, "go.mod"), "module "+path+"\n\ngo 1.21\n"+gomod)
		clienttest.WriteFile(t, filepath.Join(dir, "a.go"), "package a\n")
		var b bytes.Buffer
		if err := modzip.CreateFromDir(&b, module.Version{Path: path, Version: version}, dir); err != nil {
			t.Fatal(err)
		}
		e.Do("PUT", "/go/gomods/upload", alice.Basic(), b.Bytes()).Want(201)
	}
	upload("github.com/gin-gonic/gin", "v1.9.0", "")
	upload("github.com/gin-gonic/gin", "v1.9.1", "")
	upload("example.com/app", "v1.0.0", "\nrequire golang.org/x/text v0.3.5\n")

	clienttest.WantCaseScans(t, e, repoID, "Go", "github.com/gin-gonic/gin")
	clienttest.WantDependencyScan(t, e, repoID, "example.com/app", "v1.0.0", "Go", "golang.org/x/text")
}
