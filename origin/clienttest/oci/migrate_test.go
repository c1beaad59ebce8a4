package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
)

// TestMigrateFromArtifactory: a Docker repository of an Artifactory, in
// its storage layout (<image>/<tag>/manifest.json beside sha256__<hex>
// blobs), is migrated here: each image is pushed at its manifest, its
// blobs first (once, though two tags share a layer), and crane pulls
// both tags from here with the source's digests.
func TestMigrateFromArtifactory(t *testing.T) {
	t.Parallel()
	bins := clienttest.RequireClients(t, "crane")
	e := start(t)
	af := artifactorytest.New(t, "af-admin", "af-password")
	af.AddRepo("docker-local", "LOCAL", "Docker", "images")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})
	tw.Write([]byte("hello\n"))
	tw.Close()
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	zw.Write(tarBuf.Bytes())
	zw.Close()
	digests := map[string]string{}
	for _, tag := range []string{"1.0", "1.1"} {
		config, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{"Labels": map[string]string{"tag": tag}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sum(tarBuf.Bytes())}}})
		manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
			"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "size": len(config), "digest": "sha256:" + sum(config)},
			"layers": []map[string]any{{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": layer.Len(), "digest": "sha256:" + sum(layer.Bytes())}}})
		af.Put("docker-local", "team/app/"+tag+"/manifest.json", artifactorytest.File{Data: manifest})
		af.Put("docker-local", "team/app/"+tag+"/sha256__"+sum(config), artifactorytest.File{Data: config})
		af.Put("docker-local", "team/app/"+tag+"/sha256__"+sum(layer.Bytes()), artifactorytest.File{Data: layer.Bytes()})
		digests[tag] = "sha256:" + sum(manifest)
	}
	// A two-platform image: its index at team/multi/2.0/list.manifest.json,
	// each platform's manifest and blobs in team/multi/sha256:<hex>/.
	var children []map[string]any
	platforms := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		config, _ := json.Marshal(map[string]any{"architecture": arch, "os": "linux",
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sum(tarBuf.Bytes())}}})
		manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "size": len(config), "digest": "sha256:" + sum(config)},
			"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "size": layer.Len(), "digest": "sha256:" + sum(layer.Bytes())}}})
		folder := "team/multi/sha256:" + sum(manifest)
		af.Put("docker-local", folder+"/manifest.json", artifactorytest.File{Data: manifest})
		af.Put("docker-local", folder+"/sha256__"+sum(config), artifactorytest.File{Data: config})
		af.Put("docker-local", folder+"/sha256__"+sum(layer.Bytes()), artifactorytest.File{Data: layer.Bytes()})
		children = append(children, map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": len(manifest),
			"digest": "sha256:" + sum(manifest), "platform": map[string]string{"os": "linux", "architecture": arch}})
		platforms[arch] = "sha256:" + sum(manifest)
	}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": children})
	af.Put("docker-local", "team/multi/2.0/list.manifest.json", artifactorytest.File{Data: index})

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af-admin", "source_password": "af-password",
		"repositories": []string{"docker-local"}})
	clienttest.WantMigrated(t, e, m, 5, 8)
	for arch, d := range platforms {
		if n := af.Downloads("docker-local", "team/multi/"+d+"/manifest.json"); n > 2 {
			t.Errorf("the %s manifest was downloaded %d times", arch, n)
		}
	}
	if n := af.Downloads("docker-local", "team/app/1.0/sha256__"+sum(layer.Bytes())) + af.Downloads("docker-local", "team/app/1.1/sha256__"+sum(layer.Bytes())); n != 1 {
		t.Errorf("the layer both tags share was downloaded %d times", n)
	}
	work := t.TempDir()
	home := clienttest.Home(t)
	env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
	host := clienttest.HostPort(e)
	crane := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(clienttest.Run(t, clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: args}))
	}
	crane("auth", "login", host, "-u", "admin", "-p", origintest.AdminPassword)
	for tag, digest := range digests {
		if got := crane("digest", "--insecure", host+"/docker-local/team/app:"+tag); got != digest {
			t.Errorf("app:%s digest %s, want the source's %s", tag, got, digest)
		}
		crane("pull", "--insecure", host+"/docker-local/team/app:"+tag, filepath.Join(work, tag+".tar"))
	}
	// The index keeps its digest, and each platform pulls its own image.
	if got := crane("digest", "--insecure", host+"/docker-local/team/multi:2.0"); got != "sha256:"+sum(index) {
		t.Errorf("multi:2.0 digest %s, want the source's sha256:%s", got, sum(index))
	}
	for arch, d := range platforms {
		if got := crane("digest", "--insecure", "--platform", "linux/"+arch, host+"/docker-local/team/multi:2.0"); got != d {
			t.Errorf("multi:2.0 for linux/%s is %s, want %s", arch, got, d)
		}
		crane("pull", "--insecure", "--platform", "linux/"+arch, host+"/docker-local/team/multi:2.0", filepath.Join(work, arch+".tar"))
	}
	// Run again, everything is here already: nothing is downloaded again.
	before := af.Downloads("docker-local", "team/multi/2.0/list.manifest.json")
	again := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af-admin", "source_password": "af-password",
		"repositories": []string{"docker-local"}})
	clienttest.WantMigrated(t, e, again, 5, 8)
	if n := af.Downloads("docker-local", "team/multi/2.0/list.manifest.json"); n != before {
		t.Errorf("the index was downloaded again (%d, then %d)", before, n)
	}
	for arch, d := range platforms {
		if n := af.Downloads("docker-local", "team/multi/"+d+"/manifest.json"); n > 2 {
			t.Errorf("the %s manifest was downloaded %d times after a second run", arch, n)
		}
	}
}
