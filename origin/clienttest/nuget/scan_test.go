package nuget_test

import (
	"path/filepath"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestNuGetScans: packages pushed with nuget are scanned on upload
// against the NuGet advisories: Newtonsoft.Json 12.0.3 with exactly the
// findings of the data's test case and the case's unaffected version
// with none; a package depending on Npgsql "[8.0.2]" with Npgsql's test
// case as dependency findings, its "[1.0,2.0)" range reported as not
// scanned.
func TestNuGetScans(t *testing.T) {
	bins := clienttest.RequireClients(t, "nuget", "mono")
	e := clienttest.Start(t)
	repoID := e.CreateRepo("feed", "nuget", true) // public: nuget 2.8 reads the feed before it pushes, without credentials
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	clienttest.LoadAdvisories(t, e, "NuGet")
	home, work := clienttest.Home(t), t.TempDir()
	nuget := func(args ...string) string {
		t.Helper()
		return clienttest.Run(t, clienttest.Cmd{Dir: work, Env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")},
			Name: bins["nuget"], Args: append(args, "-NonInteractive")})
	}
	push := func(id, version, deps string) {
		t.Helper()
		clienttest.WriteFile(t, filepath.Join(work, "content", "a.txt"), id+" "+version+"\n")
		clienttest.WriteFile(t, filepath.Join(work, id+".nuspec"), `<?xml version="1.0"?>
<package><metadata><id>`+id+`</id><version>`+version+`</version><authors>depot</authors><description>a stand-in</description>
`+deps+`</metadata><files><file src="content/a.txt" target="content/a.txt"/></files></package>`)
		nuget("pack", id+".nuspec")
		nuget("push", id+"."+version+".nupkg", "-Source", e.URL+"/nuget/feed", "-ApiKey", alice.Token)
	}
	push("Newtonsoft.Json", "12.0.3", "")
	push("Newtonsoft.Json", "13.0.1", "")
	push("Demo.App", "1.0.0", `<dependencies><group targetFramework="net8.0"><dependency id="Npgsql" version="[8.0.2]"/>`+
		`<dependency id="Other.Lib" version="[1.0,2.0)"/></group></dependencies>`)

	clienttest.WantCaseScans(t, e, repoID, "NuGet", "Newtonsoft.Json")
	r := clienttest.WantDependencyScan(t, e, repoID, "Demo.App", "1.0.0", "NuGet", "Npgsql")
	if len(r.Report.NotScanned) != 1 || r.Report.NotScanned[0].What != "Other.Lib [1.0, 2.0)" {
		t.Errorf("not scanned: %+v", r.Report.NotScanned)
	}
}
