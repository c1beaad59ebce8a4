package rubygems_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestRESTDelete: a gem version deleted through the REST API leaves the
// compact index (versions, info/<name>), so bundler, whose cache saw it,
// now locks the version before it, gem install installs that one, and gem
// install of the deleted version finds nothing; the .gem is no longer
// served. A yanked version deleted so and pushed again is not yanked: its
// flag went with it.
func TestRESTDelete(t *testing.T) {
	bins := clienttest.RequireClients(t, "gem", "bundle", "ruby")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("gems", "rubygems", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write", "delete")
		home, work := clienttest.Home(t), t.TempDir()
		source := e.URL + "/rubygems/gems"
		clienttest.WriteFile(t, filepath.Join(home, ".gem", "credentials"), "---\n"+source+": Bearer "+alice.Token+"\n")
		if err := os.Chmod(filepath.Join(home, ".gem", "credentials"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"HOME=" + home, "GEM_HOME=" + filepath.Join(home, "gemhome"), "GEM_PATH=" + filepath.Join(home, "gemhome"),
			"BUNDLE_USER_HOME=" + filepath.Join(home, "bundle"), "NO_COLOR=1"}
		cmd := func(dir, name string, args ...string) clienttest.Cmd {
			return clienttest.Cmd{Dir: dir, Env: env, Name: bins[name], Args: args}
		}
		run := func(dir, name string, args ...string) string {
			t.Helper()
			return clienttest.Run(t, cmd(dir, name, args...))
		}
		gems := map[string]string{}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			dir := filepath.Join(work, "demogem-"+v)
			clienttest.WriteFile(t, filepath.Join(dir, "demogem.gemspec"), "Gem::Specification.new do |s|\n  s.name = \"demogem\"\n  s.version = \""+v+"\"\n"+
				"  s.summary = \"a demo\"\n  s.authors = [\"depot\"]\n  s.license = \"MIT\"\n  s.files = [\"lib/demogem.rb\"]\nend\n")
			clienttest.WriteFile(t, filepath.Join(dir, "lib", "demogem.rb"), "module Demogem\n  def self.hi = \"hi "+v+"\"\nend\n")
			run(dir, "gem", "build", "demogem.gemspec")
			gems[v] = filepath.Join(dir, "demogem-"+v+".gem")
			if out := run(work, "gem", "push", gems[v], "--host", source); !strings.Contains(out, "Successfully registered") {
				t.Fatalf("gem push %s:\n%s", v, out)
			}
		}
		// indexed is what the compact index offers of demogem: the
		// versions in versions, and those info/demogem has a line for.
		indexed := func() (versions, info []string) {
			t.Helper()
			for _, l := range strings.Split(string(e.Do("GET", "/rubygems/gems/versions", alice.Basic(), nil).Want(200).Body), "\n") {
				if f := strings.Fields(l); len(f) == 3 && f[0] == "demogem" {
					versions = strings.Split(f[1], ",")
				}
			}
			r := e.Do("GET", "/rubygems/gems/info/demogem", alice.Basic(), nil)
			if r.Status == 404 {
				return versions, nil
			}
			for _, l := range strings.Split(string(r.Want(200).Body), "\n") {
				if v, _, ok := strings.Cut(l, " "); ok && l != "---" {
					info = append(info, v)
				}
			}
			return versions, info
		}
		app := filepath.Join(work, "app")
		clienttest.WriteFile(t, filepath.Join(app, "Gemfile"), "source \""+source+"/\"\ngem \"demogem\"\n")
		run(app, "bundle", "config", "set", "--local", source+"/", alice.Name+":"+alice.Token)
		run(app, "bundle", "config", "set", "--local", "path", "vendor")
		lockedDemogem := func() string {
			t.Helper()
			lock, err := os.ReadFile(filepath.Join(app, "Gemfile.lock"))
			if err != nil {
				t.Fatal(err)
			}
			_, rest, _ := strings.Cut(string(lock), "    demogem (")
			v, _, _ := strings.Cut(rest, ")")
			return v
		}
		// bundler's compact index cache holds 1.1.0.
		run(app, "bundle", "lock")
		if v := lockedDemogem(); v != "1.1.0" {
			t.Fatalf("before the delete bundler locked demogem %q, want 1.1.0", v)
		}

		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demogem", "1.1.0"), alice.Basic(), nil).Want(204)
		if versions, info := indexed(); strings.Join(versions, ",") != "1.0.0" || strings.Join(info, ",") != "1.0.0" {
			t.Fatalf("compact index after deleting 1.1.0: versions %v, info %v", versions, info)
		}
		e.Do("GET", "/rubygems/gems/gems/demogem-1.1.0.gem", alice.Basic(), nil).Want(404)

		if err := os.Remove(filepath.Join(app, "Gemfile.lock")); err != nil {
			t.Fatal(err)
		}
		run(app, "bundle", "install")
		if v := lockedDemogem(); v != "1.0.0" {
			t.Fatalf("after the delete bundler locked demogem %q, want 1.0.0", v)
		}
		if got := run(app, "bundle", "exec", "ruby", "-e", `require "demogem"; puts Demogem.hi`); strings.TrimSpace(got) != "hi 1.0.0" {
			t.Fatalf("bundle gave %q", got)
		}
		authed := strings.Replace(source, "://", "://"+alice.Name+":"+alice.Token+"@", 1) + "/"
		install := func(dir string, args ...string) clienttest.Cmd {
			return cmd(work, "gem", append([]string{"install", "demogem", "--clear-sources", "--source", authed, "--install-dir", filepath.Join(work, dir), "--no-document"}, args...)...)
		}
		clienttest.Run(t, install("inst"))
		if got, _ := filepath.Glob(filepath.Join(work, "inst", "gems", "*")); len(got) != 1 || filepath.Base(got[0]) != "demogem-1.0.0" {
			t.Fatalf("gem install without a version installed %v", got)
		}
		if out, err := clienttest.TryRun(install("deleted", "-v", "1.1.0")); err == nil || !strings.Contains(out, "Could not find a valid gem 'demogem' (= 1.1.0)") {
			t.Fatalf("gem install of the deleted 1.1.0: %v\n%s", err, out)
		}

		// A yanked version deleted and pushed again is offered again.
		run(work, "gem", "yank", "demogem", "-v", "1.0.0", "--host", source)
		if versions, info := indexed(); len(versions) != 0 || len(info) != 0 {
			t.Fatalf("compact index after the yank: versions %v, info %v", versions, info)
		}
		e.Do("DELETE", "/api/v1/artifacts/"+clienttest.ArtifactOf(e, alice.Basic(), repoID, "demogem", "1.0.0"), alice.Basic(), nil).Want(204)
		if out := run(work, "gem", "push", gems["1.0.0"], "--host", source); !strings.Contains(out, "Successfully registered") {
			t.Fatalf("gem push of 1.0.0 again:\n%s", out)
		}
		if versions, info := indexed(); strings.Join(versions, ",") != "1.0.0" || strings.Join(info, ",") != "1.0.0" {
			t.Fatalf("compact index after pushing 1.0.0 again: versions %v, info %v", versions, info)
		}
		clienttest.Run(t, install("again"))
		if got, _ := filepath.Glob(filepath.Join(work, "again", "gems", "*")); len(got) != 1 || filepath.Base(got[0]) != "demogem-1.0.0" {
			t.Fatalf("gem install after pushing 1.0.0 again installed %v", got)
		}
	})
}
