package oci_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestCLIClients drives crane, skopeo and regctl (PROTOCOLS.md §1(c))
// against a real origin: push, list, digest, manifest, copy with a mount,
// delete, copies between repositories and to an OCI layout, referrers,
// with an API token and with a password, and anonymous pulls of a public
// repository.
func TestCLIClients(t *testing.T) {
	t.Parallel()
	bins := clienttest.RequireClients(t, "crane", "skopeo", "regctl")
	clienttest.Targets(t, func(t *testing.T) *origintest.Env { return start(t) }, func(t *testing.T, e *origintest.Env) {
		cliID := e.CreateRepo("cli", "docker", false)
		copyID := e.CreateRepo("copies", "docker", false)
		openID := e.CreateRepo("open", "docker", true)
		alice := writer(e, "alice", cliID)
		e.Grant(copyID, alice.ID, false, "read", "write", "delete")
		e.Grant(openID, alice.ID, false, "write")
		host := clienttest.HostPort(e)
		work := t.TempDir()
		home := clienttest.Home(t)
		env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
		run := func(name string, args ...string) string {
			t.Helper()
			return strings.TrimSpace(clienttest.Run(t, clienttest.Cmd{Dir: work, Env: env, Name: bins[name], Args: args}))
		}
		fail := func(name string, args ...string) string {
			t.Helper()
			out, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: env, Name: bins[name], Args: args})
			if err == nil {
				t.Fatalf("%s %v succeeded: %s", name, args, out)
			}
			return out
		}
		img := host + "/cli/img"

		// crane, logged in with the API token.
		run("crane", "auth", "login", host, "-u", alice.Name, "-p", alice.Token)
		writeTar(t, filepath.Join(work, "layer.tar"), "f.txt", "hello from crane\n")
		run("crane", "append", "--insecure", "-f", "layer.tar", "-t", img+":1.0")
		if got := run("crane", "ls", "--insecure", img); got != "1.0" {
			t.Fatalf("crane ls: %q", got)
		}
		clienttest.WantEvents(t, e, "artifact.uploaded", "docker", "img@1.0")
		digest := run("crane", "digest", "--insecure", img+":1.0")
		if !strings.HasPrefix(digest, "sha256:") {
			t.Fatalf("crane digest: %q", digest)
		}
		var m struct {
			MediaType string `json:"mediaType"`
			Layers    []struct {
				Digest string `json:"digest"`
			} `json:"layers"`
		}
		if err := json.Unmarshal([]byte(run("crane", "manifest", "--insecure", img+":1.0")), &m); err != nil || len(m.Layers) != 1 {
			t.Fatalf("crane manifest: %+v %v", m, err)
		}
		zr, err := gzip.NewReader(strings.NewReader(run("crane", "blob", "--insecure", img+"@"+m.Layers[0].Digest)))
		if err != nil {
			t.Fatal(err)
		}
		if layer, err := io.ReadAll(zr); err != nil || !strings.Contains(string(layer), "hello from crane") {
			t.Fatalf("crane blob: %q %v", layer, err)
		}
		run("crane", "copy", "--insecure", img+":1.0", host+"/copies/img:1.0")
		if got := run("crane", "digest", "--insecure", host+"/copies/img:1.0"); got != digest {
			t.Fatalf("copied digest %q, want %q", got, digest)
		}
		run("crane", "tag", "--insecure", host+"/copies/img:1.0", "extra")
		if got := run("crane", "ls", "--insecure", host+"/copies/img"); got != "1.0\nextra" {
			t.Fatalf("crane ls after tag: %q", got)
		}
		run("crane", "delete", "--insecure", host+"/copies/img@"+digest)
		fail("crane", "manifest", "--insecure", host+"/copies/img:1.0")
		if n, _ := e.RepoCounters(copyID); n != 0 {
			t.Fatalf("copies holds %d artifacts after the delete", n)
		}

		// skopeo, with the password.
		creds := alice.Name + ":" + alice.Password
		run("skopeo", "copy", "--src-tls-verify=false", "--dest-tls-verify=false", "--src-creds", creds, "--dest-creds", creds,
			"docker://"+img+":1.0", "docker://"+host+"/copies/img:2.0")
		run("skopeo", "copy", "--src-tls-verify=false", "--src-creds", creds, "docker://"+img+":1.0", "oci:"+filepath.Join(work, "layout")+":1.0")
		if _, err := os.Stat(filepath.Join(work, "layout", "index.json")); err != nil {
			t.Fatalf("skopeo wrote no OCI layout: %v", err)
		}
		var tags struct{ Tags []string }
		if err := json.Unmarshal([]byte(run("skopeo", "list-tags", "--tls-verify=false", "--creds", creds, "docker://"+host+"/copies/img")), &tags); err != nil ||
			len(tags.Tags) != 1 || tags.Tags[0] != "2.0" {
			t.Fatalf("skopeo list-tags: %+v %v", tags, err)
		}
		fail("skopeo", "list-tags", "--tls-verify=false", "--creds", alice.Name+":wrong-password", "docker://"+host+"/copies/img")

		// Anonymous pulls of a public repository, with either client.
		run("skopeo", "copy", "--src-tls-verify=false", "--dest-tls-verify=false", "--src-creds", creds, "--dest-creds", creds,
			"docker://"+img+":1.0", "docker://"+host+"/open/img:1.0")
		anonHome := clienttest.Home(t)
		anon := []string{"HOME=" + anonHome, "DOCKER_CONFIG=" + filepath.Join(anonHome, "docker")}
		clienttest.Run(t, clienttest.Cmd{Dir: work, Env: anon, Name: bins["skopeo"], Args: []string{"copy", "--src-tls-verify=false",
			"docker://" + host + "/open/img:1.0", "oci:" + filepath.Join(work, "anon") + ":1.0"}})
		if out := clienttest.Run(t, clienttest.Cmd{Dir: work, Env: anon, Name: bins["crane"], Args: []string{"digest", "--insecure", host + "/open/img:1.0"}}); strings.TrimSpace(out) != digest {
			t.Fatalf("anonymous crane digest %q", out)
		}
		if out, err := clienttest.TryRun(clienttest.Cmd{Dir: work, Env: anon, Name: bins["crane"], Args: []string{"digest", "--insecure", img + ":1.0"}}); err == nil || !strings.Contains(out, "UNAUTHORIZED") {
			t.Fatalf("anonymous read of a private repository: %v %s", err, out)
		}

		// regctl: referrers, with the API token.
		run("regctl", "registry", "set", "--tls", "disabled", host)
		run("regctl", "registry", "login", host, "-u", alice.Name, "-p", alice.Token)
		clienttest.WriteFile(t, filepath.Join(work, "sbom.json"), `{"sbom":true}`)
		run("regctl", "artifact", "put", "--subject", img+":1.0", "--artifact-type", "application/vnd.example.sbom",
			"--file", "sbom.json", "--file-media-type", "application/json")
		var refs struct {
			Manifests []struct {
				Digest       string `json:"digest"`
				ArtifactType string `json:"artifactType"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal([]byte(lastLine(run("regctl", "artifact", "list", img+":1.0", "--format", "body"))), &refs); err != nil ||
			len(refs.Manifests) != 1 || refs.Manifests[0].ArtifactType != "application/vnd.example.sbom" {
			t.Fatalf("regctl artifact list: %+v %v\n%s", refs, err, run("regctl", "artifact", "list", img+":1.0", "--format", "body"))
		}
		if got := lastLine(run("regctl", "artifact", "get", img+"@"+refs.Manifests[0].Digest)); got != `{"sbom":true}` {
			t.Fatalf("regctl artifact get: %q", got)
		}
		if got := lastLine(run("regctl", "tag", "ls", img)); got != "1.0" {
			t.Fatalf("regctl tag ls: %q (the referrer must stay untagged)", got)
		}

		// Every push is in the REST API, uploaded by alice.
		var pk struct {
			Packages []struct {
				Name         string `json:"name"`
				VersionCount int    `json:"version_count"`
			} `json:"packages"`
		}
		e.Do("GET", "/api/v1/packages?repository_id="+cliID, alice.Token, nil).Want(200).JSON(&pk)
		if len(pk.Packages) != 1 || pk.Packages[0].Name != "img" || pk.Packages[0].VersionCount != 2 { // 1.0 and the referrer
			t.Fatalf("packages %+v", pk)
		}
	})
}

// writeTar writes a one-file layer for crane append.
func writeTar(t *testing.T, path, name, content string) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(fh)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// lastLine drops the log lines regctl writes before its answer (the
// combined output holds both).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
