package cli

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
)

// TestMigrateCommand: depot migrate makes, starts and follows a migration
// from an Artifactory (the source's password on standard input) to its
// end, printing progress lines (no terminal: a line every 10 s, and the
// last) and the report's summary; a corrupted file makes it exit 1
// naming the file; --follow follows a migration again; a wrong source
// password is the server's refusal.
func TestMigrateCommand(t *testing.T) {
	e := startOrigin(t)
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("files", "LOCAL", "Generic", "tools")
	af.Put("files", "tool/1.0/tool.bin", artifactorytest.File{Data: []byte("one")})
	af.Put("files", "tool/2.0/tool.bin", artifactorytest.File{Data: []byte("two")})
	admin := newUser(t)
	admin.run(origintest.AdminPassword+"\n", "login", "--url", e.URL, "--username", "admin", "--password-stdin").ok()

	admin.run("wrong\n", "migrate", "--from", af.BaseURL(), "--user", "af-admin", "--repos", "files", "--password-stdin").
		fails(1, "the source refused the credentials")
	r := admin.run("af-password\n", "migrate", "--from", af.BaseURL(), "--user", "af-admin", "--repos", "files", "--password-stdin")
	out := r.ok()
	if !strings.Contains(out, ": completed\n") || !strings.Contains(out, "2 migrated, 0 failed") || !strings.Contains(out, "2 verified, 0 mismatched") ||
		!strings.Contains(r.stderr, "100.0% 2/2 files") {
		t.Fatalf("depot migrate:\nstdout: %s\nstderr: %s", out, r.stderr)
	}
	id := strings.Fields(strings.TrimPrefix(out, "Migration "))[0]
	id = strings.TrimSuffix(id, ":")
	if out := admin.run("", "migrate", "--follow", id).ok(); !strings.Contains(out, "Migration "+id+": completed") {
		t.Errorf("--follow: %s", out)
	}

	af.Put("files", "tool/3.0/tool.bin", artifactorytest.File{Data: []byte("three")})
	af.Corrupt("files", "tool/3.0/tool.bin")
	r = admin.run("af-password\n", "migrate", "--from", af.BaseURL(), "--user", "af-admin", "--repos", "files", "--password-stdin")
	r.fails(1, "1 files failed")
	if !strings.Contains(r.stdout, "failed: files/tool/3.0/tool.bin: checksum mismatch") || !strings.Contains(r.stdout, "2 migrated, 1 failed") {
		t.Errorf("a migration with a corrupted file:\n%s", r.stdout)
	}

	// --permissions moves the source's users; --no-metadata leaves the
	// upload times, uploaders and properties.
	af.AddRepo("more", "LOCAL", "Generic", "")
	af.Put("more", "x/1.0/x.bin", artifactorytest.File{Data: []byte("x"), CreatedBy: "someone", Properties: map[string][]string{"k": {"v"}}})
	af.AddUser(artifactorytest.User{Name: "bob", Email: "bob@example.com", Realm: "internal"})
	out = admin.run("af-password\n", "migrate", "--from", af.BaseURL(), "--user", "af-admin", "--repos", "more", "--password-stdin",
		"--permissions", "--no-metadata").ok()
	if !strings.Contains(out, "permissions: 1 local users created") || !strings.Contains(out, "metadata:    not migrated") {
		t.Errorf("--permissions --no-metadata:\n%s", out)
	}
	if got := admin.run("", "user", "list", "--output", "json").ok(); !strings.Contains(got, `"bob"`) {
		t.Errorf("bob was not made: %s", got)
	}
}
