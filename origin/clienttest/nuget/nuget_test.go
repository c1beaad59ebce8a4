package nuget_test

import (
	"crypto/sha512"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestNuGet: Debian's nuget packs and pushes packages with an API token
// as the API key and installs one through the v2 feed; a version cannot
// be pushed twice, a symbol package is refused; the v3 API is walked as
// the dotnet client walks it, from the service index (readable without
// credentials even for a private feed) to the flat container, the
// registration and search; a delete takes a version away.
func TestNuGet(t *testing.T) {
	bins := clienttest.RequireClients(t, "nuget", "mono")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		feedID := e.CreateRepo("feed", "nuget", true)
		privID := e.CreateRepo("private", "nuget", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(feedID, alice.ID, false, "write", "delete")
		e.Grant(privID, alice.ID, false, "write")
		home, work := clienttest.Home(t), t.TempDir()
		nuget := func(args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: work, Env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")},
				Name: bins["nuget"], Args: append(args, "-NonInteractive")})
		}
		pack := func(id, version, word, deps string) string {
			clienttest.WriteFile(t, filepath.Join(work, "content", "hello.txt"), word+"\n")
			clienttest.WriteFile(t, filepath.Join(work, id+".nuspec"), `<?xml version="1.0"?>
<package><metadata><id>`+id+`</id><version>`+version+`</version><authors>depot</authors><description>a demo package</description>
`+deps+`</metadata><files><file src="content/hello.txt" target="content/`+id+`.txt"/></files></package>`)
			nuget("pack", id+".nuspec")
			return filepath.Join(work, id+"."+version+".nupkg")
		}
		const needsOther = `<dependencies><group targetFramework="net45"><dependency id="Other.Pkg" version="[1.0,2.0)"/></group></dependencies>`
		other := pack("Other.Pkg", "1.0.0", "other 1.0.0", "")
		v1, v2 := pack("Demo.Pkg", "1.0.0", "hello 1.0.0", needsOther), pack("Demo.Pkg", "1.1.0", "hello 1.1.0", needsOther)
		for _, p := range []string{other, v1, v2} { // relative: nuget 2.8 joins an absolute path to the current directory

			nuget("push", filepath.Base(p), "-Source", e.URL+"/nuget/feed", "-ApiKey", alice.Token)
		}
		if out, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: []string{"HOME=" + home}, Name: bins["nuget"],
			Args: []string{"push", filepath.Base(v1), "-Source", e.URL + "/nuget/feed", "-ApiKey", alice.Token, "-NonInteractive"}}); err == nil {
			t.Fatalf("a second push of 1.0.0 succeeded:\n%s", out)
		}
		symbols := formattest.Zip(t, map[string]string{"Demo.Pkg.nuspec": `<package><metadata><id>Demo.Pkg</id><version>1.2.0</version>` +
			`<packageTypes><packageType name="SymbolsPackage"/></packageTypes></metadata></package>`})
		if r := e.DoHeader("PUT", "/nuget/feed/", "", symbols, map[string]string{"X-NuGet-ApiKey": alice.Token}); r.Status != 400 || !strings.Contains(string(r.Body), "symbol") {
			t.Fatalf("a symbol package: %d %s", r.Status, r.Body)
		}
		e.DoHeader("PUT", "/nuget/feed/", "", symbols, map[string]string{"X-NuGet-ApiKey": "dpt_wrong"}).Want(401)

		nuget("install", "Demo.Pkg", "-Version", "1.0.0", "-Source", e.URL+"/nuget/feed/", "-OutputDirectory", filepath.Join(work, "out"))
		for file, want := range map[string]string{"Demo.Pkg.1.0.0/content/Demo.Pkg.txt": "hello 1.0.0", "Other.Pkg.1.0.0/content/Other.Pkg.txt": "other 1.0.0"} {
			if got, err := os.ReadFile(filepath.Join(work, "out", file)); err != nil || strings.TrimSpace(string(got)) != want {
				t.Fatalf("installed %s: %q %v", file, got, err)
			}
		}

		// Without -Version nuget asks the v2 feed for the latest version
		// ($filter=IsLatestVersion&$orderby=Version desc&$top=1) and
		// installs the first entry answered: 1.1.0.
		installed := func(dir, version string, args ...string) {
			t.Helper()
			nuget(append([]string{"install", "Demo.Pkg", "-Source", e.URL + "/nuget/feed/", "-OutputDirectory", filepath.Join(work, dir)}, args...)...)
			got, err := os.ReadFile(filepath.Join(work, dir, "Demo.Pkg."+version, "content", "Demo.Pkg.txt"))
			if entries, _ := os.ReadDir(filepath.Join(work, dir)); err != nil || strings.TrimSpace(string(got)) != "hello "+version {
				t.Fatalf("install %v: %q %v; installed %v, want Demo.Pkg %s", args, got, err, entries, version)
			}
		}
		installed("latest", "1.1.0")

		// v3, as the dotnet client walks it.
		var index struct {
			Resources []struct {
				ID   string `json:"@id"`
				Type string `json:"@type"`
			} `json:"resources"`
		}
		e.Do("GET", "/nuget/private/v3/index.json", "", nil).Want(200) // no credentials needed here
		e.Do("GET", "/nuget/feed/v3/index.json", "", nil).Want(200).JSON(&index)
		resource := func(typ string) string {
			for _, r := range index.Resources {
				if r.Type == typ {
					return strings.TrimPrefix(r.ID, e.URL)
				}
			}
			t.Fatalf("no %s in the service index", typ)
			return ""
		}
		var versions struct{ Versions []string }
		e.Do("GET", resource("PackageBaseAddress/3.0.0")+"demo.pkg/index.json", "", nil).Want(200).JSON(&versions)
		if strings.Join(versions.Versions, ",") != "1.0.0,1.1.0" {
			t.Fatalf("flat container versions: %v", versions.Versions)
		}
		nupkg := e.Do("GET", resource("PackageBaseAddress/3.0.0")+"demo.pkg/1.1.0/demo.pkg.1.1.0.nupkg", "", nil).Want(200).Body
		if want, _ := os.ReadFile(v2); string(nupkg) != string(want) {
			t.Fatal("the flat container's .nupkg differs from the pushed one")
		}
		if spec := e.Do("GET", resource("PackageBaseAddress/3.0.0")+"demo.pkg/1.1.0/demo.pkg.nuspec", "", nil).Want(200).Body; !strings.Contains(string(spec), "<version>1.1.0</version>") {
			t.Fatalf("nuspec: %s", spec)
		}
		var reg struct {
			Items []struct {
				Items []struct {
					PackageContent string `json:"packageContent"`
					CatalogEntry   struct {
						Version          string
						DependencyGroups []struct {
							TargetFramework string
							Dependencies    []struct{ ID, Range string }
						}
					} `json:"catalogEntry"`
				} `json:"items"`
			} `json:"items"`
		}
		e.Do("GET", resource("RegistrationsBaseUrl/3.6.0")+"demo.pkg/index.json", "", nil).Want(200).JSON(&reg)
		if len(reg.Items) != 1 || len(reg.Items[0].Items) != 2 || reg.Items[0].Items[1].CatalogEntry.Version != "1.1.0" ||
			reg.Items[0].Items[1].CatalogEntry.DependencyGroups[0].Dependencies[0].ID != "Other.Pkg" {
			t.Fatalf("registration: %+v", reg)
		}
		if got := e.Do("GET", strings.TrimPrefix(reg.Items[0].Items[1].PackageContent, e.URL), "", nil).Want(200).Body; sha512.Sum512(got) != sha512.Sum512(nupkg) {
			t.Fatal("packageContent is not the package")
		}
		var search struct {
			TotalHits int
			Data      []struct{ ID, Version string }
		}
		e.Do("GET", resource("SearchQueryService/3.5.0")+"?q=demo&take=20", "", nil).Want(200).JSON(&search)
		if search.TotalHits != 1 || search.Data[0].ID != "Demo.Pkg" || search.Data[0].Version != "1.1.0" {
			t.Fatalf("search: %+v", search)
		}

		e.DoHeader("DELETE", "/nuget/feed/Demo.Pkg/1.0.0", "", nil, map[string]string{"X-NuGet-ApiKey": alice.Token}).Want(204)
		e.Do("GET", resource("PackageBaseAddress/3.0.0")+"demo.pkg/index.json", "", nil).Want(200).JSON(&versions)
		if strings.Join(versions.Versions, ",") != "1.1.0" {
			t.Fatalf("after the delete: %v", versions.Versions)
		}

		// A prerelease is the latest version only for -Prerelease
		// (IsAbsoluteLatestVersion); without it, the latest release.
		beta := pack("Demo.Pkg", "1.2.0-beta", "hello 1.2.0-beta", needsOther)
		nuget("push", filepath.Base(beta), "-Source", e.URL+"/nuget/feed", "-ApiKey", alice.Token)
		installed("stable", "1.1.0")
		installed("prerelease", "1.2.0-beta", "-Prerelease")
	})
}
