package npm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestMigrateFromArtifactory: an npm repository of an Artifactory (its
// tarballs, a scoped one under either of the layouts it has used, and its
// own .npm metadata) is migrated into an npm repository here: each
// tarball is published as npm publishes it (the packument rebuilt from
// the tarballs' package.json), the dist-tags are the source's (latest
// is not the last version moved), and npm installs the packages from
// here, by tag too.
func TestMigrateFromArtifactory(t *testing.T) {
	e := clienttest.Start(t)
	_, alice := setup(t, e)
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("npm-local", "LOCAL", "Npm", "front-end packages")
	tgz := func(name, version string) []byte {
		return formattest.Tgz(t, map[string]string{"package/package.json": `{"name":"` + name + `","version":"` + version + `","main":"index.js"}`,
			"package/index.js": `module.exports = "` + name + ` ` + version + `";` + "\n"})
	}
	af.Put("npm-local", "left-pad/-/left-pad-1.0.0.tgz", artifactorytest.File{Data: tgz("left-pad", "1.0.0")})
	af.Put("npm-local", "left-pad/-/left-pad-1.1.0.tgz", artifactorytest.File{Data: tgz("left-pad", "1.1.0")})
	af.Put("npm-local", "@acme/util/-/@acme/util-2.0.0.tgz", artifactorytest.File{Data: tgz("@acme/util", "2.0.0")})
	af.Put("npm-local", "@acme/util/-/util-2.1.0.tgz", artifactorytest.File{Data: tgz("@acme/util", "2.1.0")})
	af.Put("npm-local", ".npm/left-pad/package.json", artifactorytest.File{Data: []byte(`{"name":"left-pad"}`)})
	af.SetDistTags("npm-local", "left-pad", map[string]string{"latest": "1.0.0", "next": "1.1.0"})
	af.SetDistTags("npm-local", "@acme/util", map[string]string{"latest": "2.1.0"})

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af-admin", "source_password": "af-password",
		"repositories": []string{"npm-local"}})
	clienttest.WantMigrated(t, e, m, 4, 1)

	// The repository was made with the source's name; alice may read it.
	var repo struct{ ID string }
	e.Do("GET", "/api/v1/repositories/npm-local", e.Admin, nil).Want(200).JSON(&repo)
	e.Grant(repo.ID, alice.ID, false, "read")
	c := newClient(t, e, "npm-local", tokenAuth(alice))
	dir := c.project()
	c.npm(dir, "install", "left-pad", "@acme/util", "--no-audit", "--no-fund")
	for mod, want := range map[string]string{"left-pad": "left-pad 1.0.0", "@acme/util": "@acme/util 2.1.0"} {
		got, err := os.ReadFile(filepath.Join(dir, "node_modules", mod, "index.js"))
		if err != nil || !strings.Contains(string(got), want) {
			t.Errorf("%s installed: %q %v, want %s (the source's latest)", mod, got, err, want)
		}
	}
	c.npm(dir, "install", "left-pad@next", "--no-audit", "--no-fund")
	if got, _ := os.ReadFile(filepath.Join(dir, "node_modules", "left-pad", "index.js")); !strings.Contains(string(got), "left-pad 1.1.0") {
		t.Errorf("left-pad@next installed %q", got)
	}
}
