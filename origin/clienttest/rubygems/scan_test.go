package rubygems_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestGemScans: gems pushed with gem are scanned on upload against the
// RubyGems advisories: rack 2.2.3 with exactly the findings of the data's
// test case and the case's unaffected version with none; a gem pinning
// nokogiri 1.13.3 ("= 1.13.3") with nokogiri's test case as dependency
// findings, its "~> 2.2" on rack reported as a range not scanned.
func TestGemScans(t *testing.T) {
	bins := clienttest.RequireClients(t, "gem", "ruby")
	e := clienttest.Start(t)
	repoID := e.CreateRepo("gems", "rubygems", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	clienttest.LoadAdvisories(t, e, "RubyGems")
	home, work := clienttest.Home(t), t.TempDir()
	source := e.URL + "/rubygems/gems"
	clienttest.WriteFile(t, filepath.Join(home, ".gem", "credentials"), "---\n"+source+": Bearer "+alice.Token+"\n")
	if err := os.Chmod(filepath.Join(home, ".gem", "credentials"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "GEM_HOME=" + filepath.Join(home, "gemhome"), "NO_COLOR=1"}
	push := func(name, version string, deps ...string) {
		t.Helper()
		dir := filepath.Join(work, name+"-"+version)
		spec := "Gem::Specification.new do |s|\n  s.name = \"" + name + "\"\n  s.version = \"" + version + "\"\n  s.summary = \"a stand-in\"\n" +
			"  s.authors = [\"depot\"]\n  s.license = \"MIT\"\n  s.files = [\"lib/" + name + ".rb\"]\n"
		for _, d := range deps {
			spec += "  s.add_dependency " + d + "\n"
		}
		clienttest.WriteFile(t, filepath.Join(dir, name+".gemspec"), spec+"end\n")
		clienttest.WriteFile(t, filepath.Join(dir, "lib", name+".rb"), "module Standin\nend\n")
		clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env, Name: bins["gem"], Args: []string{"build", name + ".gemspec"}})
		out := clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env, Name: bins["gem"], Args: []string{"push", name + "-" + version + ".gem", "--host", source}})
		if !strings.Contains(out, "Successfully registered") {
			t.Fatalf("gem push %s %s:\n%s", name, version, out)
		}
	}
	push("rack", "2.2.3")
	push("rack", "3.2.6")
	push("webapp", "1.0.0", `"nokogiri", "= 1.13.3"`, `"rack", "~> 2.2"`)

	clienttest.WantCaseScans(t, e, repoID, "RubyGems", "rack")
	r := clienttest.WantDependencyScan(t, e, repoID, "webapp", "1.0.0", "RubyGems", "nokogiri")
	if len(r.Report.NotScanned) != 1 || r.Report.NotScanned[0].What != "rack ~> 2.2" {
		t.Errorf("not scanned: %+v", r.Report.NotScanned)
	}
}
