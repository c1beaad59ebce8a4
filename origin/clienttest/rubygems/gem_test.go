package rubygems_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestGemPushInstallBundle: gem builds and pushes two gems (one needing
// the other) with a Bearer key from ~/.gem/credentials; a version cannot
// be pushed twice; gem install resolves the newest version and its
// dependency from the compact index; bundle install pins an older one;
// the installed code runs; gem yank takes a version out of the index;
// Ruby itself reads the legacy specs.4.8.gz.
func TestGemPushInstallBundle(t *testing.T) {
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
		run := func(dir, name string, args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env, Name: bins[name], Args: args})
		}
		build := func(name, version, word string, deps ...string) string {
			dir := filepath.Join(work, name+"-"+version)
			spec := "Gem::Specification.new do |s|\n  s.name = \"" + name + "\"\n  s.version = \"" + version + "\"\n  s.summary = \"a demo\"\n" +
				"  s.authors = [\"depot\"]\n  s.license = \"MIT\"\n  s.files = [\"lib/" + name + ".rb\"]\n  s.required_ruby_version = \">= 2.7\"\n"
			for _, d := range deps {
				spec += "  s.add_dependency " + d + "\n"
			}
			clienttest.WriteFile(t, filepath.Join(dir, name+".gemspec"), spec+"end\n")
			clienttest.WriteFile(t, filepath.Join(dir, "lib", name+".rb"), "module "+strings.Title(name)+"\n  def self.hi = \""+word+"\"\nend\n")
			run(dir, "gem", "build", name+".gemspec")
			return filepath.Join(dir, name+"-"+version+".gem")
		}
		for _, g := range []string{build("basegem", "1.0.0", "base"), build("demogem", "1.0.0", "hi 1.0.0", `"basegem", ">= 1.0"`),
			build("demogem", "1.1.0", "hi 1.1.0", `"basegem", ">= 1.0", "< 2"`)} {
			if out := run(work, "gem", "push", g, "--host", source); !strings.Contains(out, "Successfully registered") {
				t.Fatalf("gem push %s:\n%s", filepath.Base(g), out)
			}
		}
		out, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins["gem"], Args: []string{"push", filepath.Join(work, "demogem-1.0.0", "demogem-1.0.0.gem"), "--host", source}})
		if err == nil && !strings.Contains(out, "already exists") {
			t.Fatalf("a second push of demogem 1.0.0:\n%s", out)
		}

		authed := strings.Replace(source, "://", "://"+alice.Name+":"+alice.Token+"@", 1) + "/"
		inst := filepath.Join(work, "inst")
		run(work, "gem", "install", "demogem", "--clear-sources", "--source", authed, "--install-dir", inst, "--no-document", "--verbose")
		if got := run(work, "ruby", "-I", filepath.Join(inst, "gems", "demogem-1.1.0", "lib"), "-e", `require "demogem"; puts Demogem.hi`); strings.TrimSpace(got) != "hi 1.1.0" {
			t.Fatalf("gem install gave %q", got)
		}
		if _, err := os.Stat(filepath.Join(inst, "gems", "basegem-1.0.0")); err != nil {
			t.Fatalf("the dependency was not installed: %v", err)
		}

		app := filepath.Join(work, "app")
		clienttest.WriteFile(t, filepath.Join(app, "Gemfile"), "source \""+source+"/\"\ngem \"demogem\", \"1.0.0\"\n")
		run(app, "bundle", "config", "set", "--local", source+"/", alice.Name+":"+alice.Token)
		run(app, "bundle", "config", "set", "--local", "path", "vendor")
		run(app, "bundle", "install")
		if got := run(app, "bundle", "exec", "ruby", "-e", `require "demogem"; puts Demogem.hi`); strings.TrimSpace(got) != "hi 1.0.0" {
			t.Fatalf("bundle gave %q", got)
		}

		specs := filepath.Join(work, "specs.4.8.gz")
		if err := os.WriteFile(specs, e.Do("GET", "/rubygems/gems/specs.4.8.gz", alice.Basic(), nil).Want(200).Body, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := run(work, "ruby", "-rzlib", "-rrubygems", "-e", `p Marshal.load(Zlib.gunzip(File.binread(ARGV[0]))).map { |n, v, pl| [n, v.to_s, pl] }`, specs); !strings.Contains(got, `["demogem", "1.1.0", "ruby"]`) || !strings.Contains(got, `["basegem", "1.0.0", "ruby"]`) {
			t.Fatalf("specs.4.8.gz as Ruby reads it: %s", got)
		}

		run(work, "gem", "yank", "demogem", "-v", "1.1.0", "--host", source)
		if info := string(e.Do("GET", "/rubygems/gems/info/demogem", alice.Basic(), nil).Want(200).Body); strings.Contains(info, "1.1.0") || !strings.Contains(info, "1.0.0 basegem:>= 1.0|checksum:") {
			t.Fatalf("info after the yank:\n%s", info)
		}
	})
}
