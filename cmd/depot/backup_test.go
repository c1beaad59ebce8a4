package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// backupOf starts a backup with artifacts through the API, waits for it
// and downloads its archive into dir.
func backupOf(t *testing.T, base, tok, dir string) (id, path string) {
	t.Helper()
	var b struct{ ID, Status, Checksum, Error string }
	_ = json.Unmarshal(call(t, "POST", base+"/api/v1/admin/backups", tok, strings.NewReader(`{"description":"everything","include_artifacts":true}`), 202), &b)
	waitFor(t, 2*time.Minute, "the backup to finish", func() bool {
		_ = json.Unmarshal(call(t, "GET", base+"/api/v1/admin/backups/"+b.ID, tok, nil, 200), &b)
		return b.Status == "completed" || b.Status == "failed"
	})
	if b.Status != "completed" {
		t.Fatalf("backup: %+v", b)
	}
	raw := call(t, "GET", base+"/api/v1/admin/backups/"+b.ID+"/download", tok, nil, 200)
	if sha256Hex(raw) != b.Checksum {
		t.Fatal("the downloaded archive is not the one listed")
	}
	path = filepath.Join(dir, "backup.tar.zst")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return b.ID, path
}

// TestBackupRestoreWithClients: npm, twine, crane and mvn publish to an
// origin; a backup with artifacts is downloaded; the origin and its data
// directory are gone; depot admin restore unpacks the archive into a new
// directory, the origin started on it installs the metadata, and npm,
// pip, crane and mvn install everything again, byte for byte (each
// client checks the digests it was given, and the test compares the
// files).
func TestBackupRestoreWithClients(t *testing.T) {
	bins := clienttest.RequireClients(t, "npm", "node", "twine", "python3", "crane", "mvn")
	s := newSite(t)
	o := s.start(t)
	first := login(t, o.url, "admin", "initial-pw-123")
	call(t, "PUT", o.url+"/api/v1/users/me", first, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	tok := login(t, o.url, "admin", "changed-pw-456")
	for _, r := range []string{`{"name":"js","format":"npm"}`, `{"name":"py","format":"pypi"}`, `{"name":"images","format":"docker"}`, `{"name":"jars","format":"maven"}`} {
		call(t, "POST", o.url+"/api/v1/repositories", tok, strings.NewReader(r), 201)
	}
	var api struct{ Token string }
	_ = json.Unmarshal(call(t, "POST", o.url+"/api/v1/users/me/tokens", tok, strings.NewReader(`{"name":"clients","scopes":["repository:write"]}`), 201), &api)
	host := strings.TrimPrefix(o.url, "http://")
	home := clienttest.Home(t)

	// npm
	npmrc := func(base string) string {
		return "registry=" + base + "/npm/js/\n//" + strings.TrimPrefix(base, "http://") + "/npm/js/:_authToken=" + api.Token + "\n"
	}
	npm := func(dir, base string, args ...string) string {
		t.Helper()
		clienttest.WriteFile(t, filepath.Join(dir, ".npmrc"), npmrc(base))
		return clienttest.Run(t, clienttest.Cmd{Dir: dir, Name: "npm", Args: args, Env: []string{
			"HOME=" + home, "npm_config_cache=" + filepath.Join(t.TempDir(), "cache"), "npm_config_userconfig=" + filepath.Join(dir, ".npmrc"),
			"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false", "npm_config_loglevel=warn", "NO_COLOR=1"}})
	}
	pkg := filepath.Join(t.TempDir(), "pkg")
	clienttest.WriteFile(t, filepath.Join(pkg, "package.json"), `{"name":"kept-demo","version":"1.0.0","main":"index.js","description":"a kept package"}`)
	clienttest.WriteFile(t, filepath.Join(pkg, "index.js"), `module.exports = "kept across a restore";`)
	npm(pkg, o.url, "publish")
	tgz := call(t, "GET", o.url+"/npm/js/kept-demo/-/kept-demo-1.0.0.tgz", "Bearer "+api.Token, nil, 200)

	// twine
	proj := filepath.Join(t.TempDir(), "keptpkg")
	clienttest.WriteFile(t, filepath.Join(proj, "setup.py"), `from setuptools import setup
setup(name="kept_pkg", version="1.0.0", package_dir={"": "src"}, packages=["kept_pkg"])
`)
	clienttest.WriteFile(t, filepath.Join(proj, "src", "kept_pkg", "__init__.py"), "def hello():\n    return 'kept across a restore'\n")
	clienttest.Run(t, clienttest.Cmd{Dir: proj, Env: []string{"HOME=" + home}, Name: "/usr/bin/python3", Args: []string{"setup.py", "-q", "bdist_wheel"}})
	wheels, _ := filepath.Glob(filepath.Join(proj, "dist", "*.whl"))
	if len(wheels) != 1 {
		t.Fatalf("wheels: %v", wheels)
	}
	wheel, _ := os.ReadFile(wheels[0])
	clienttest.Run(t, clienttest.Cmd{Env: []string{"HOME=" + home}, Name: "twine", Args: []string{"upload", "--non-interactive",
		"--disable-progress-bar", "--repository-url", o.url + "/pypi/py/", "-u", "admin", "-p", api.Token, wheels[0]}})

	// crane
	work := t.TempDir()
	craneEnv := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
	crane := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(clienttest.Run(t, clienttest.Cmd{Dir: work, Env: craneEnv, Name: bins["crane"], Args: args}))
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := "an image kept across a restore\n"
	_ = tw.WriteHeader(&tar.Header{Name: "f.txt", Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	clienttest.WriteFile(t, filepath.Join(work, "layer.tar"), layer.String())
	crane("auth", "login", host, "-u", "admin", "-p", api.Token)
	crane("append", "--insecure", "-f", "layer.tar", "-t", host+"/images/app:1.0")
	manifest := crane("manifest", "--insecure", host+"/images/app:1.0")

	// mvn
	m := clienttest.NewMaven(t, o.url+"/maven/jars", "admin", api.Token)
	jarDir := t.TempDir()
	jarPath := filepath.Join(jarDir, "demo.jar")
	jar := makeTestJar(t, jarPath)
	pom := filepath.Join(jarDir, "demo.pom")
	clienttest.WriteFile(t, pom, mavenPOM("demo", "1.0"))
	m.DeployJar(o.url+"/maven/jars", jarPath, pom)

	// Back up, then lose the origin and its data directory.
	id, archive := backupOf(t, o.url, tok, t.TempDir())
	o.stop(t)
	if err := os.RemoveAll(s.dataDir); err != nil {
		t.Fatal(err)
	}

	// Restore into a new directory; the origin comes up on it.
	r := s
	r.dataDir, r.listen = filepath.Join(t.TempDir(), "restored"), clienttest.FreeAddr(t)
	r.raftAddr, r.gossipAddr = clienttest.FreeAddr(t), clienttest.FreeAddr(t)
	out, err := exec.Command(s.bin, "admin", "restore", archive, "--data-dir", r.dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Backup "+id) {
		t.Fatalf("depot admin restore: %v\n%s", err, out)
	}
	if out, err := exec.Command(s.bin, "admin", "restore", archive, "--data-dir", r.dataDir).CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Errorf("a second restore into the same directory: %v\n%s", err, out)
	}
	o2 := r.start(t)
	if !strings.Contains(o2.out.String(), "Restored backup "+id) {
		t.Errorf("the first start does not say it restored:\n%s", o2.out)
	}
	host2 := strings.TrimPrefix(o2.url, "http://")

	// npm installs it again; the lock's integrity is the original tarball's.
	app := filepath.Join(t.TempDir(), "app")
	clienttest.WriteFile(t, filepath.Join(app, "package.json"), `{"name":"consumer","version":"1.0.0","private":true}`)
	npm(app, o2.url, "install", "kept-demo@1.0.0")
	if got := clienttest.Run(t, clienttest.Cmd{Dir: app, Name: "node", Args: []string{"-e", `console.log(require("kept-demo"))`}}); !strings.Contains(got, "kept across a restore") {
		t.Errorf("npm's package says %q", got)
	}
	if got := call(t, "GET", o2.url+"/npm/js/kept-demo/-/kept-demo-1.0.0.tgz", "Bearer "+api.Token, nil, 200); !bytes.Equal(got, tgz) {
		t.Error("the npm tarball differs")
	}

	// pip downloads the same wheel and installs it.
	pipEnv := []string{"HOME=" + home, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_CONFIG_FILE=/dev/null", "PYTHONDONTWRITEBYTECODE=1"}
	venv := filepath.Join(t.TempDir(), "venv")
	clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: "python3", Args: []string{"-m", "venv", venv}})
	index := "http://admin:" + api.Token + "@" + host2 + "/pypi/py/simple/"
	dl := t.TempDir()
	clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "pip"), Args: []string{"download", "--no-cache-dir", "--no-deps",
		"-d", dl, "--index-url", index, "kept_pkg==1.0.0"}})
	got, _ := os.ReadFile(filepath.Join(dl, filepath.Base(wheels[0])))
	if !bytes.Equal(got, wheel) {
		t.Errorf("the wheel pip downloads differs (%d bytes, want %d)", len(got), len(wheel))
	}
	clienttest.Run(t, clienttest.Cmd{Env: pipEnv, Name: filepath.Join(venv, "bin", "pip"), Args: []string{"install", "--no-cache-dir", "--index-url", index, "kept_pkg==1.0.0"}})

	// crane reads the same manifest and layer.
	crane("auth", "login", host2, "-u", "admin", "-p", api.Token)
	if got := crane("manifest", "--insecure", host2+"/images/app:1.0"); got != manifest {
		t.Errorf("the manifest differs:\n%s\n%s", got, manifest)
	}
	var mf struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	_ = json.Unmarshal([]byte(manifest), &mf)
	if len(mf.Layers) != 1 || "sha256:"+sha256Hex([]byte(crane("blob", "--insecure", host2+"/images/app@"+mf.Layers[0].Digest))) != mf.Layers[0].Digest {
		t.Error("the layer differs")
	}

	// mvn resolves the jar again into a fresh local repository.
	m2 := clienttest.NewMaven(t, o2.url+"/maven/jars", "admin", api.Token)
	consumer := t.TempDir()
	clienttest.WriteFile(t, filepath.Join(consumer, "pom.xml"), mavenConsumer("demo", "1.0"))
	m2.Run(consumer, "validate")
	if got, err := os.ReadFile(filepath.Join(m2.Local, "com/example/demo/1.0/demo-1.0.jar")); err != nil || !bytes.Equal(got, jar) {
		t.Errorf("the jar mvn resolves differs: %v", err)
	}
}

const mavenHead = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
`

// mavenPOM is a jar's POM (its plexus-utils one Debian's repository has:
// mvn loads it as a build extension).
func mavenPOM(artifact, version string) string {
	return mavenHead + `<groupId>com.example</groupId><artifactId>` + artifact + `</artifactId><version>` + version + `</version>
<dependencies><dependency><groupId>org.codehaus.plexus</groupId><artifactId>plexus-utils</artifactId><version>3.4.2</version></dependency></dependencies>
</project>
`
}

// mavenConsumer loads the jar as a build extension, which mvn resolves
// (jar and POM) at validate.
func mavenConsumer(artifact, version string) string {
	return mavenHead + `<groupId>com.example</groupId><artifactId>consumer</artifactId><version>1.0</version>
<build><extensions><extension><groupId>com.example</groupId><artifactId>` + artifact + `</artifactId><version>` + version + `</version></extension></extensions></build>
</project>
`
}

// makeTestJar writes a small jar to path and returns its bytes.
func makeTestJar(t *testing.T, path string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\n\r\n", "depot/marker.txt": "kept\n"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRestoreClusterInPlace: a backup restored into a running cluster of
// three origins, asked at a follower, with an edge serving the
// repository: every origin and the edge come to the backup's state (a
// file deleted since is back, one uploaded since is gone, a repository
// made since is gone), and writes go on.
func TestRestoreClusterInPlace(t *testing.T) {
	c := startCluster(t)
	procs, tok, basic := c.procs, c.tok, c.basic
	var files struct{ ID string }
	_ = json.Unmarshal(call(t, "POST", procs[0].url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201), &files)
	call(t, "PUT", procs[0].url+"/generic/files/tool/1.0/a.bin", basic, strings.NewReader("kept"), 201)
	var node struct{ ID, Token string }
	edgeListen := clienttest.FreeAddr(t)
	_ = json.Unmarshal(call(t, "POST", procs[0].url+"/api/v1/edge-nodes", tok, strings.NewReader(`{"name":"near","url":"http://`+edgeListen+`"}`), 201), &node)
	call(t, "POST", procs[0].url+"/api/v1/edge-nodes/"+node.ID+"/repositories", tok, strings.NewReader(`{"repository_ids":["`+files.ID+`"]}`), 200)
	edge := edgeProc(t, c.bin, procs[0].url, node.ID, node.Token, edgeListen, t.TempDir())
	fileAt := func(base, path string) (int, string) {
		req, _ := http.NewRequest("GET", base+"/generic/files/"+path, nil)
		req.Header.Set("Authorization", basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, 20*time.Second, "the file at the edge", func() bool { st, _ := fileAt(edge.url, "tool/1.0/a.bin"); return st == 200 })

	id, _ := backupOf(t, procs[1].url, tok, t.TempDir())

	// After the backup: the file goes, another comes, a repository too.
	call(t, "DELETE", procs[0].url+"/generic/files/tool/1.0/a.bin", basic, nil, 204)
	call(t, "PUT", procs[0].url+"/generic/files/tool/2.0/b.bin", basic, strings.NewReader("later"), 201)
	call(t, "POST", procs[0].url+"/api/v1/repositories", tok, strings.NewReader(`{"name":"later","format":"generic"}`), 201)
	waitFor(t, 20*time.Second, "the edge to see the changes", func() bool { st, _ := fileAt(edge.url, "tool/2.0/b.bin"); return st == 200 })

	call(t, "POST", procs[2].url+"/api/v1/admin/backups/"+id+"/restore", tok, nil, 202)
	waitFor(t, 2*time.Minute, "the restore to complete", func() bool {
		var st struct {
			Restore struct{ Status, Error string }
		}
		_ = json.Unmarshal(call(t, "GET", procs[2].url+"/api/v1/admin/restore", tok, nil, 200), &st)
		if st.Restore.Status == "failed" {
			t.Fatalf("restore failed: %s", st.Restore.Error)
		}
		return st.Restore.Status == "completed"
	})
	for i, p := range procs {
		waitFor(t, 20*time.Second, "origin "+string(rune('1'+i))+" to hold the backup's state", func() bool {
			st1, body := fileAt(p.url, "tool/1.0/a.bin")
			st2, _ := fileAt(p.url, "tool/2.0/b.bin")
			return st1 == 200 && body == "kept" && st2 == 404
		})
		call(t, "GET", p.url+"/api/v1/repositories/later", tok, nil, 404)
	}
	waitFor(t, 30*time.Second, "the edge to resync to the backup's state", func() bool {
		st1, body := fileAt(edge.url, "tool/1.0/a.bin")
		st2, _ := fileAt(edge.url, "tool/2.0/b.bin")
		return st1 == 200 && body == "kept" && st2 == 404
	})
	call(t, "PUT", procs[1].url+"/generic/files/tool/3.0/c.bin", basic, strings.NewReader("after"), 201)
	waitFor(t, 20*time.Second, "a write after the restore at the edge", func() bool { st, _ := fileAt(edge.url, "tool/3.0/c.bin"); return st == 200 })
}
