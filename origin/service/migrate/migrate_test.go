package migrate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// run makes and starts a migration of repos with options and waits for
// its end.
func run(t *testing.T, e *origintest.Env, af *artifactorytest.Server, options map[string]any, repos ...string) meta.Migration {
	t.Helper()
	return clienttest.Migrate(t, e, map[string]any{"source": map[string]any{"url": af.URL, "username": "af", "password": "pw"},
		"repositories": repos, "options": options})
}

// TestFaults: a dry run counts what would move and writes nothing; a
// connection dropped mid-file every time and a source slower than
// timeout_seconds are failures saying so, after their retries, and
// store nothing; what fails does not stop the rest.
func TestFaults(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "")
	af.Put("files", "a/1.0/a.bin", artifactorytest.File{Data: []byte("the first file's bytes")})
	af.Put("files", "b/1.0/b.bin", artifactorytest.File{Data: []byte("the second file's bytes")})

	dry := run(t, e, af, map[string]any{"dry_run": true}, "files")
	if dry.Status != meta.MigrationCompleted || dry.Progress.MigratedArtifacts != 2 {
		t.Fatalf("a dry run: %s %+v", dry.Status, dry.Progress)
	}
	e.Do("GET", "/api/v1/repositories/files", e.Admin, nil).WantError(404, "NOT_FOUND")

	af.Drop("files", "b/1.0/b.bin", true)
	m := run(t, e, af, map[string]any{"retry_attempts": 1}, "files")
	f := clienttest.MigrationFailures(t, e, m.ID)
	if m.Status != meta.MigrationCompletedWithErrors || m.Progress.MigratedArtifacts != 1 || len(f) != 1 || f[0].Path != "b/1.0/b.bin" ||
		!strings.Contains(f[0].Message, "downloading it") {
		t.Fatalf("a dropped connection: %s %+v %+v", m.Status, m.Progress, f)
	}
	e.Do("GET", "/generic/files/b/1.0/b.bin", e.Admin, nil).Want(404)

	af.Drop("files", "b/1.0/b.bin", false)
	af.Slow(2 * time.Second)
	m = run(t, e, af, map[string]any{"retry_attempts": 0, "timeout_seconds": 1}, "files")
	f = clienttest.MigrationFailures(t, e, m.ID)
	if m.Progress.MigratedArtifacts != 1 || len(f) != 1 || !strings.Contains(f[0].Message, "longer than 1 s") {
		t.Fatalf("a slow source: %s %+v %+v", m.Status, m.Progress, f)
	}
	af.Slow(0)
	if m = run(t, e, af, nil, "files"); m.Status != meta.MigrationCompleted || m.Progress.MigratedArtifacts != 2 {
		t.Fatalf("once the source is well: %s %+v %+v", m.Status, m.Progress, clienttest.MigrationFailures(t, e, m.ID))
	}
	if got := string(e.Do("GET", "/generic/files/b/1.0/b.bin", e.Admin, nil).Want(200).Body); got != "the second file's bytes" {
		t.Errorf("b.bin: %q", got)
	}
}

// TestPermissions: with include_permissions, the source's users are made
// here (a password change required: an administrator resets theirs),
// its groups with their members, and its permission targets that cover
// a migrated repository become grants (manage to admin; write, annotate
// and delete to write; read to read), patterns widened to the whole
// repository with a warning; a target of a repository not migrated
// grants nothing.
func TestPermissions(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "")
	af.Put("files", "a/1.0/a.bin", artifactorytest.File{Data: []byte("a")})
	af.AddUser(artifactorytest.User{Name: "bob", Email: "bob@example.com", Realm: "internal"})
	af.AddUser(artifactorytest.User{Name: "carol", Email: "carol@example.com", Realm: "ldap", Admin: true})
	af.AddUser(artifactorytest.User{Name: "anonymous", Realm: "internal"})
	af.AddGroup(artifactorytest.Group{Name: "devs", Description: "developers", UserNames: []string{"bob", "carol"}})
	af.AddPermission(artifactorytest.Permission{Name: "deployers", Repositories: []string{"files"}, Include: []string{"**"},
		Users: map[string][]string{"bob": {"read", "write"}}})
	af.AddPermission(artifactorytest.Permission{Name: "readers", Repositories: []string{"ANY LOCAL"}, Include: []string{"com/**"},
		Groups: map[string][]string{"devs": {"read", "annotate"}}})
	af.AddPermission(artifactorytest.Permission{Name: "elsewhere", Repositories: []string{"other-repo"},
		Users: map[string][]string{"bob": {"manage"}}})

	m := run(t, e, af, map[string]any{"include_permissions": true}, "files")
	if m.Status != meta.MigrationCompleted {
		t.Fatalf("the migration: %s %+v", m.Status, m.Progress)
	}
	var users struct {
		Users []struct {
			ID, Username, Role string
		}
	}
	e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&users)
	ids := map[string]string{}
	for _, u := range users.Users {
		ids[u.Username] = u.ID
		if (u.Username == "bob" && u.Role != "user") || (u.Username == "carol" && u.Role != "admin") {
			t.Errorf("user %s: %+v", u.Username, u)
		}
	}
	if ids["bob"] == "" || ids["carol"] == "" || ids["anonymous"] != "" {
		t.Fatalf("users here: %+v", users.Users)
	}
	var groups struct{ Groups []meta.Group }
	e.Do("GET", "/api/v1/groups", e.Admin, nil).Want(200).JSON(&groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Name != "devs" {
		t.Fatalf("groups: %+v", groups.Groups)
	}
	var repo struct{ ID string }
	e.Do("GET", "/api/v1/repositories/files", e.Admin, nil).Want(200).JSON(&repo)
	var perms struct{ Permissions []meta.Permission }
	e.Do("GET", "/api/v1/permissions?repository_id="+repo.ID, e.Admin, nil).Want(200).JSON(&perms)
	got := map[string]string{}
	for _, p := range perms.Permissions {
		who := p.UserID
		if p.GroupID != "" {
			who = "group"
		}
		got[who] = strings.Join(p.Permissions, ",")
	}
	if len(got) != 2 || got[ids["bob"]] != "read,write" || got["group"] != "read,write" {
		t.Errorf("grants on files: %+v", perms.Permissions)
	}
	var report struct {
		Permissions string `json:"permission_migration"`
	}
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/report", e.Admin, nil).Want(200).JSON(&report)
	if !strings.HasPrefix(report.Permissions, "1 local users created") || !strings.Contains(report.Permissions, "1 directory users created") || !strings.Contains(report.Permissions, "1 groups, 2 grants from 3 permission targets") {
		t.Errorf("report: %q", report.Permissions)
	}
	var logs struct{ Entries []meta.MigrationEntry }
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/logs", e.Admin, nil).Want(200).JSON(&logs)
	if !slices.ContainsFunc(logs.Entries, func(l meta.MigrationEntry) bool {
		return strings.Contains(l.Message, "readers: its patterns (com/**) are not kept")
	}) {
		t.Errorf("no warning of the widened pattern: %+v", logs.Entries)
	}
}

// TestNoSpace: on an origin whose disk is below --min-free-bytes, a
// migration stops before it moves anything when the source's storage
// summary says the repositories need more than the room here; without
// the summary it stops at the first refusal (507). Either way it is
// interrupted with what to do, counting no file as failed.
func TestNoSpace(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.MinFreeBytes = 1 << 62 }})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "")
	for i := range 5 {
		af.Put("files", fmt.Sprintf("f/1.%d/f.bin", i), artifactorytest.File{Data: []byte("bytes")})
	}
	interrupted := func() meta.Migration {
		t.Helper()
		var m meta.Migration
		e.Do("POST", "/api/v1/migrations", e.Admin, map[string]any{"source": map[string]any{"url": af.URL, "username": "af", "password": "pw"},
			"repositories": []string{"files"}}).Want(201).JSON(&m)
		e.Do("POST", "/api/v1/migrations/"+m.ID+"/start", e.Admin, nil).Want(200)
		for end := time.Now().Add(30 * time.Second); m.Status != meta.MigrationInterrupted; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(end) || meta.MigrationDone(m.Status) {
				t.Fatalf("the migration: %s %+v", m.Status, m.Progress)
			}
			e.Do("GET", "/api/v1/migrations/"+m.ID, e.Admin, nil).Want(200).JSON(&m)
		}
		if !strings.Contains(m.Error, "nearly full") || !strings.Contains(m.Error, "resume") || m.Progress.FailedArtifacts != 0 {
			t.Errorf("interrupted: %q %+v", m.Error, m.Progress)
		}
		return m
	}
	if m := interrupted(); !strings.Contains(m.Error, "the repositories left use 25 B at the source") || af.Downloads("files", "f/1.0/f.bin") != 0 {
		t.Errorf("checked before: %q, %d downloads", m.Error, af.Downloads("files", "f/1.0/f.bin"))
	}
	af.NoStorageInfo.Store(true)
	if m := interrupted(); strings.Contains(m.Error, "repositories left") {
		t.Errorf("without the source's summary: %q", m.Error)
	}
}

// TestGoHelmGems: a Go repository (module zips in the proxy layout, their
// .mod, .info and list files left to the registry), a Helm one (chart
// archives, the index left to the registry), a RubyGems one (gems, the
// indexes left) and a NuGet one are migrated; the go proxy here lists the
// version and serves the go.mod from the zip, the chart index names the
// chart, the compact index the gem, the flat container the package; a
// second migration finds each of them here and moves nothing again.
func TestGoHelmGems(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("go-local", "LOCAL", "Go", "")
	af.AddRepo("helm-local", "LOCAL", "Helm", "")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/Greet\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "greet.go"), []byte("package greet\n"), 0o644)
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: "example.com/Greet", Version: "v1.0.0"}, dir); err != nil {
		t.Fatal(err)
	}
	af.Put("go-local", "example.com/!greet/@v/v1.0.0.zip", artifactorytest.File{Data: zip.Bytes()})
	af.Put("go-local", "example.com/!greet/@v/v1.0.0.mod", artifactorytest.File{Data: []byte("module example.com/Greet\n\ngo 1.21\n")})
	af.Put("go-local", "example.com/!greet/@v/v1.0.0.info", artifactorytest.File{Data: []byte(`{"Version":"v1.0.0"}`)})
	af.Put("go-local", "example.com/!greet/@v/list", artifactorytest.File{Data: []byte("v1.0.0\n")})
	af.AddRepo("gems-local", "LOCAL", "Gems", "")
	af.Put("gems-local", "gems/demo-1.0.0.gem", artifactorytest.File{Data: formattest.Gem(t, "demo", "1.0.0")})
	af.Put("gems-local", "specs.4.8.gz", artifactorytest.File{Data: []byte("not read")})
	af.Put("gems-local", "quick/Marshal.4.8/demo-1.0.0.gemspec.rz", artifactorytest.File{Data: []byte("not read")})
	af.AddRepo("nuget-local", "LOCAL", "NuGet", "")
	nupkg := formattest.Zip(t, map[string]string{"Demo.Pkg.nuspec": `<?xml version="1.0"?><package><metadata><id>Demo.Pkg</id>` +
		`<version>1.2.0</version><authors>depot</authors><description>a package</description></metadata></package>`})
	af.Put("nuget-local", "Demo.Pkg/Demo.Pkg.1.2.0.nupkg", artifactorytest.File{Data: nupkg})
	chart := formattest.Tgz(t, map[string]string{"mychart/Chart.yaml": "apiVersion: v2\nname: mychart\nversion: 0.1.0\ndescription: a chart\n",
		"mychart/values.yaml": "replicas: 1\n"})
	af.Put("helm-local", "mychart-0.1.0.tgz", artifactorytest.File{Data: chart})
	af.Put("helm-local", "index.yaml", artifactorytest.File{Data: []byte("apiVersion: v1\nentries: {}\n")})

	m := run(t, e, af, nil, "go-local", "helm-local", "gems-local", "nuget-local")
	if m.Status != meta.MigrationCompleted || m.Progress.MigratedArtifacts != 4 || m.Progress.SkippedArtifacts != 6 {
		t.Fatalf("the migration: %s %+v %+v", m.Status, m.Progress, clienttest.MigrationFailures(t, e, m.ID))
	}
	if got := strings.TrimSpace(string(e.Do("GET", "/go/go-local/example.com/!greet/@v/list", e.Admin, nil).Want(200).Body)); got != "v1.0.0" {
		t.Errorf("the module's versions here: %q", got)
	}
	if got := string(e.Do("GET", "/go/go-local/example.com/!greet/@v/v1.0.0.mod", e.Admin, nil).Want(200).Body); !strings.Contains(got, "module example.com/Greet") {
		t.Errorf("go.mod: %q", got)
	}
	if idx := string(e.Do("GET", "/helm/helm-local/index.yaml", e.Admin, nil).Want(200).Body); !strings.Contains(idx, "mychart") || !strings.Contains(idx, "0.1.0") {
		t.Errorf("the chart index:\n%s", idx)
	}
	if info := string(e.Do("GET", "/rubygems/gems-local/info/demo", e.Admin, nil).Want(200).Body); !strings.Contains(info, "1.0.0") {
		t.Errorf("the gem's info:\n%s", info)
	}
	if got := string(e.Do("GET", "/nuget/nuget-local/v3/package/demo.pkg/index.json", e.Admin, nil).Want(200).Body); !strings.Contains(got, "1.2.0") {
		t.Errorf("the package's versions: %s", got)
	}
	// Again: everything is here already, nothing is moved twice.
	again := run(t, e, af, nil, "go-local", "helm-local", "gems-local", "nuget-local")
	if again.Status != meta.MigrationCompleted || again.Progress.MigratedArtifacts != 4 || again.Progress.FailedArtifacts != 0 {
		t.Errorf("the second migration: %s %+v %+v", again.Status, again.Progress, clienttest.MigrationFailures(t, e, again.ID))
	}
}

// TestProperties: with include_metadata, each file's properties are kept
// as its artifact's (multi-valued), a key this registry does not allow
// is dropped and named in the log, a file already here gets the
// source's properties too, and a dry run sets none.
func TestProperties(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "")
	af.Put("files", "app/1.0/app.bin", artifactorytest.File{Data: []byte("app"),
		Properties: map[string][]string{"build.number": {"42"}, "qa.status": {"passed", "signed"}, "bad key!": {"x"}}})
	af.Put("files", "app/1.0/plain.bin", artifactorytest.File{Data: []byte("plain")})
	// A space and a plus (Artifactory reads a bare + as a space).
	af.Put("files", "docs/1.0/release notes.txt", artifactorytest.File{Data: []byte("notes")})
	af.Put("files", "app/1.0+build.5/app.bin", artifactorytest.File{Data: []byte("plus")})
	props := func(data string) map[string][]string {
		var ans struct {
			Results []struct {
				Properties map[string][]string `json:"properties"`
			} `json:"results"`
		}
		e.Do("GET", "/api/v1/search/checksum?checksum="+sha256Hex(data), e.Admin, nil).Want(200).JSON(&ans)
		if len(ans.Results) != 1 {
			t.Fatalf("%s: %d artifacts with its checksum", data, len(ans.Results))
		}
		return ans.Results[0].Properties
	}

	// Without include_metadata, none; then a migration with it sets them on
	// the files already here.
	if m := run(t, e, af, map[string]any{"include_metadata": false}, "files"); m.Status != meta.MigrationCompleted {
		t.Fatalf("without metadata: %s %+v %+v", m.Status, m.Progress, clienttest.MigrationFailures(t, e, m.ID))
	}
	if got := props("app"); len(got) != 0 {
		t.Fatalf("properties without include_metadata: %v", got)
	}
	if m := run(t, e, af, map[string]any{"dry_run": true}, "files"); m.Status != meta.MigrationCompleted {
		t.Fatalf("dry run: %s", m.Status)
	}
	if got := props("app"); len(got) != 0 {
		t.Fatalf("properties after a dry run: %v", got)
	}
	m := run(t, e, af, nil, "files")
	want := map[string][]string{"build.number": {"42"}, "qa.status": {"passed", "signed"}}
	if got := props("app"); !slices.Equal(got["build.number"], want["build.number"]) || !slices.Equal(got["qa.status"], want["qa.status"]) || len(got) != 2 {
		t.Fatalf("properties kept: %v, want %v", got, want)
	}
	if got := props("plain"); len(got) != 0 {
		t.Fatalf("a file without properties has %v", got)
	}
	// A file moved for the first time is recorded with its properties.
	af.AddRepo("fresh", "LOCAL", "Maven", "")
	af.Put("fresh", "com/acme/lib/1.0/lib-1.0.jar", artifactorytest.File{Data: []byte("a jar"), Properties: map[string][]string{"vcs.revision": {"abc123"}}})
	if fm := run(t, e, af, nil, "fresh"); fm.Status != meta.MigrationCompleted || fm.Progress.WithProperties != 1 {
		t.Fatalf("fresh: %s %+v", fm.Status, fm.Progress)
	}
	if got := props("a jar"); len(got) != 1 || !slices.Equal(got["vcs.revision"], []string{"abc123"}) {
		t.Fatalf("a file moved with its properties has %v", got)
	}
	for path, want := range map[string]string{"docs/1.0/release%20notes.txt": "notes", "app/1.0+build.5/app.bin": "plus"} {
		if got := string(e.Do("GET", "/generic/files/"+path, e.Admin, nil).Want(200).Body); got != want {
			t.Errorf("%s: %q", path, got)
		}
	}
	if m.Progress.WithProperties != 1 || m.Progress.PropertiesDropped != 1 || m.Progress.MigratedArtifacts != 4 {
		t.Fatalf("progress %+v", m.Progress)
	}
	var rep struct {
		Metadata string `json:"metadata_migration"`
	}
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/report", e.Admin, nil).Want(200).JSON(&rep)
	if !strings.Contains(rep.Metadata, "properties kept on 1 artifacts (1 beyond") {
		t.Fatalf("report: %q", rep.Metadata)
	}
	var logs struct {
		Entries []meta.MigrationEntry `json:"entries"`
	}
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/logs", e.Admin, nil).Want(200).JSON(&logs)
	if !slices.ContainsFunc(logs.Entries, func(l meta.MigrationEntry) bool {
		return strings.Contains(l.Message, "not kept") && strings.Contains(l.Message, "bad key!")
	}) {
		t.Fatalf("the dropped key is not named in the log: %+v", logs.Entries)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestDirectoryUsers: a source's user of its LDAP realm becomes an LDAP
// user here (no password kept) who signs in with the directory's
// password and has the grant migrated for them; a single sign-on user
// becomes an OpenID Connect user, with a warning while no provider is
// configured here.
func TestDirectoryUsers(t *testing.T) {
	e := clienttest.StartWithDirectory(t)
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("files", "LOCAL", "Generic", "")
	af.Put("files", "a/1.0/a.bin", artifactorytest.File{Data: []byte("a")})
	af.AddUser(artifactorytest.User{Name: clienttest.DirectoryUser, Email: "dana@example.org", Realm: "ldap"})
	af.AddUser(artifactorytest.User{Name: "sam", Email: "sam@example.org", Realm: "saml"})
	af.AddPermission(artifactorytest.Permission{Name: "deployers", Repositories: []string{"files"},
		Users: map[string][]string{clienttest.DirectoryUser: {"read", "write"}, "sam": {"read"}}})
	m := run(t, e, af, map[string]any{"include_permissions": true}, "files")
	if m.Status != meta.MigrationCompleted {
		t.Fatalf("the migration: %s %+v", m.Status, m.Progress)
	}
	var users struct {
		Users []struct{ Username, Source string }
	}
	e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&users)
	sources := map[string]string{}
	for _, u := range users.Users {
		sources[u.Username] = u.Source
	}
	if sources[clienttest.DirectoryUser] != "ldap" || sources["sam"] != "oidc" {
		t.Fatalf("users here: %+v", users.Users)
	}
	// The directory's password signs dana in, and the migrated grant lets
	// her upload; a wrong one is refused.
	dana := basicAuth(clienttest.DirectoryUser, clienttest.DirectoryPassword)
	e.DoHeader("PUT", "/generic/files/b/1.0/b.bin", "", "from dana", map[string]string{"Authorization": dana}).Want(201)
	e.DoHeader("PUT", "/generic/files/b/1.0/c.bin", "", "x", map[string]string{"Authorization": basicAuth(clienttest.DirectoryUser, "wrong")}).Want(401)
	var logs struct{ Entries []meta.MigrationEntry }
	e.Do("GET", "/api/v1/migrations/"+m.ID+"/logs", e.Admin, nil).Want(200).JSON(&logs)
	if !slices.ContainsFunc(logs.Entries, func(l meta.MigrationEntry) bool {
		return strings.Contains(l.Message, "sam created as an oidc user") && strings.Contains(l.Message, "no oidc sign-in is configured here")
	}) {
		t.Errorf("no warning for the single sign-on user: %+v", logs.Entries)
	}
}

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}
