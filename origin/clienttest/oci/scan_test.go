package oci_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/origin/service/scan/inventory/inventorytest"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// TestImageScans: images pushed with crane are scanned on upload for the
// packages their layers install (npm's node_modules, Python's
// site-packages, a Go binary's modules, a jar's Maven coordinates), with
// exactly the findings the advisory data's test cases name for each, and
// the Debian packages reported as not scanned for want of Debian data,
// then matched once an advisory of the image's release is loaded; a
// policy then blocks `crane pull` of the vulnerable image, by tag and by
// digest, with a message naming the policy and the advisory, and lets
// the fixed image through; with block_upload, pushing the vulnerable
// image again is refused and nothing is tagged.
func TestImageScans(t *testing.T) {
	t.Parallel()
	bins := clienttest.RequireClients(t, "crane")
	e := start(t)
	repoID := e.CreateRepo("apps", "docker", false)
	alice := writer(e, "alice", repoID)
	e.DoHeader("POST", "/api/v1/security/advisories?filename=osv.zip", e.Admin, vulntest.Zip(t, "npm", "PyPI", "Go", "Maven"),
		map[string]string{"Content-Type": "application/zip"}).Want(200)

	host := clienttest.HostPort(e)
	work := t.TempDir()
	home := clienttest.Home(t)
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
	crane := func(args ...string) (string, error) {
		return clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: args})
	}
	if out, err := crane("auth", "login", host, "-u", alice.Name, "-p", alice.Token); err != nil {
		t.Fatalf("crane auth login: %v\n%s", err, out)
	}
	system := layerTar(t, work, "system.tar", map[string]string{
		"etc/os-release":      "ID=debian\nVERSION_ID=\"12\"\n",
		"var/lib/dpkg/status": "Package: openssl\nStatus: install ok installed\nVersion: 3.0.11-1~deb12u2\n",
		"usr/lib/python3.11/site-packages/urllib3-1.26.17.dist-info/METADATA": "Metadata-Version: 2.1\nName: urllib3\nVersion: 1.26.17\n",
	})
	app := func(lodash string) string {
		return layerTar(t, work, "app-"+lodash+".tar", map[string]string{
			"app/node_modules/lodash/package.json": fmt.Sprintf(`{"name": "lodash", "version": %q}`, lodash),
			"app/bin/server":                       string(inventorytest.GoBinary(t, "github.com/gorilla/websocket", "v1.4.0")),
			"app/lib/snakeyaml-1.33.jar": jar(t, "META-INF/maven/org.yaml/snakeyaml/pom.properties",
				"groupId=org.yaml\nartifactId=snakeyaml\nversion=1.33\n"),
		})
	}
	img := host + "/apps/app"
	for tag, lodash := range map[string]string{"vulnerable": "4.17.11", "fixed": "4.17.21"} {
		if out, err := crane("append", "--insecure", "-f", system, "-f", app(lodash), "-t", img+":"+tag); err != nil {
			t.Fatalf("crane append: %v\n%s", err, out)
		}
	}

	// Scanned on upload.
	completed := func(tag string) clienttest.ScanReport { return clienttest.ScanOf(t, e, repoID, "app", tag) }
	r := completed("vulnerable")
	found := map[string][]string{} // package -> advisory ids
	where := map[string]string{}
	for _, f := range r.Report.Findings {
		if f.Source != "image" {
			t.Errorf("finding of source %q: %+v", f.Source, f)
		}
		found[f.Package] = append(found[f.Package], f.ID)
		where[f.Package] = f.Location
	}
	cases := map[string]string{"lodash": "4.17.11", "urllib3": "1.26.17", "github.com/gorilla/websocket": "v1.4.0", "org.yaml:snakeyaml": "1.33"}
	for _, c := range vulntest.Cases(t) {
		if cases[c.Name] != c.Affected {
			continue
		}
		var want []string
		for _, f := range c.Expected {
			want = append(want, f.ID)
		}
		got := found[c.Name]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s: findings %v, want %v", c.Name, c.Affected, got, want)
		}
		delete(cases, c.Name)
	}
	if len(cases) > 0 {
		t.Fatalf("no test case for %v", cases)
	}
	for pkg := range found {
		if !slices.Contains([]string{"lodash", "urllib3", "github.com/gorilla/websocket", "org.yaml:snakeyaml", "stdlib"}, pkg) {
			t.Errorf("a finding for %s, which the image does not install", pkg)
		}
	}
	if where["lodash"] != "/app/node_modules/lodash/package.json" || where["org.yaml:snakeyaml"] != "/app/lib/snakeyaml-1.33.jar" ||
		where["github.com/gorilla/websocket"] != "/app/bin/server" {
		t.Errorf("locations: %v", where)
	}
	if !slices.ContainsFunc(r.Report.NotScanned, func(n scan.NotScanned) bool {
		return n.What == "1 Debian:12 (dpkg) packages" && n.Reason == "no advisory data loaded for Debian:12"
	}) {
		t.Errorf("the Debian packages are not said to be unscanned: %+v", r.Report.NotScanned)
	}
	if r.Vulnerabilities.Critical == 0 {
		t.Errorf("counts: %+v", r.Vulnerabilities)
	}
	if f := completed("fixed"); slices.ContainsFunc(f.Report.Findings, func(f scan.Finding) bool { return f.Package == "lodash" }) {
		t.Errorf("lodash 4.17.21 has findings: %+v", f.Report.Findings)
	}

	// With Debian's advisories for the image's release loaded, its dpkg
	// packages are matched too (the new database re-scans it).
	var loaded struct{ Database meta.AdvisoryDB }
	e.DoHeader("POST", "/api/v1/security/advisories?filename=debian.json", e.Admin, []byte(`{"schema_version":"1.6.0","id":"DSA-TEST-1",
		"modified":"2026-01-01T00:00:00Z","summary":"openssl: a test advisory","affected":[{"package":{"ecosystem":"Debian:12","name":"openssl"},
		"ranges":[{"type":"ECOSYSTEM","events":[{"introduced":"0"},{"fixed":"3.0.13-1~deb12u1"}]}]}],"database_specific":{"severity":"high"}}`),
		map[string]string{"Content-Type": "application/json"}).Want(200).JSON(&loaded)
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r = completed("vulnerable"); r.Advisories == loaded.Database.Digest {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the image was not scanned again against the new database within 60 s")
		}
	}
	if !slices.ContainsFunc(r.Report.Findings, func(f scan.Finding) bool {
		return f.ID == "DSA-TEST-1" && f.Ecosystem == "Debian:12" && f.Location == "/var/lib/dpkg/status"
	}) || slices.ContainsFunc(r.Report.NotScanned, func(n scan.NotScanned) bool { return strings.Contains(n.What, "Debian") }) {
		t.Errorf("with Debian advisories: findings %+v, not scanned %+v", r.Report.Findings, r.Report.NotScanned)
	}

	// A policy blocks pulling the vulnerable image, by tag and by digest.
	digest, err := crane("digest", "--insecure", img+":vulnerable")
	if err != nil {
		t.Fatal(err)
	}
	e.Do("POST", "/api/v1/security/policies", e.Admin, map[string]any{"name": "no criticals in images",
		"scope": map[string]any{"formats": []string{"docker"}}, "rules": map[string]any{"severity_threshold": "critical", "block_download": true, "block_upload": true}}).Want(201)
	for _, ref := range []string{img + ":vulnerable", img + "@" + strings.TrimSpace(digest)} {
		out, err := crane("pull", "--insecure", ref, filepath.Join(work, "pulled.tar"))
		if err == nil {
			t.Fatalf("crane pull %s under the policy succeeded", ref)
		}
		if !strings.Contains(out, `security policy "no criticals in images"`) || !strings.Contains(out, "GHSA-") || !strings.Contains(out, "lodash") {
			t.Errorf("crane pull %s says:\n%s", ref, out)
		}
	}
	if out, err := crane("pull", "--insecure", img+":fixed", filepath.Join(work, "pulled.tar")); err != nil {
		t.Fatalf("crane pull of the fixed image: %v\n%s", err, out)
	}

	// And pushing one: refused, no tag made; the fixed image goes in.
	out, err := crane("append", "--insecure", "-f", system, "-f", app("4.17.11"), "-t", img+":again")
	if err == nil || !strings.Contains(out, `upload blocked by security policy "no criticals in images"`) {
		t.Fatalf("crane append of a vulnerable image under block_upload: %v\n%s", err, out)
	}
	if out, err := crane("append", "--insecure", "-f", system, "-f", app("4.17.21"), "-t", img+":fixed-again"); err != nil {
		t.Fatalf("crane append of the fixed image: %v\n%s", err, out)
	}
	if out, _ := crane("ls", "--insecure", img); strings.Join(strings.Fields(out), " ") != "fixed fixed-again vulnerable" {
		t.Fatalf("tags after the refused push: %q", out)
	}
}

// layerTar writes a tar of files (name -> content; executables under
// bin/) into dir and returns its path.
func layerTar(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		mode := int64(0o644)
		if strings.Contains(n, "/bin/") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[n]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// jar is a zip holding one file.
func jar(t *testing.T, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(content))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
