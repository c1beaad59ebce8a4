// Package pluginread measures a read served by an installed plugin (the
// example Terraform module registry, a WebAssembly module) beside the
// same read served by a built-in handler, on one origin in process:
//
//   - a version list: Terraform's versions document of a module with 50
//     versions, beside the go proxy's @v/list of a module with 50;
//   - a download: a module archive (64 KiB) through the plugin, beside a
//     generic file of the same size.
//
// Run it with bench/plugins.sh.
package pluginread

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

const versions = 50

func setup(b *testing.B) (*origintest.Env, map[string]string) {
	b.Helper()
	e := origintest.Start(b, origintest.Options{})
	e.Do("POST", "/api/v1/plugins", e.Admin, plugintest.Example(b, "terraform")).Want(http.StatusCreated)
	e.CreateRepo("infra", "terraform", false)
	e.CreateRepo("mods", "go", false)
	e.CreateRepo("files", "generic", false)
	archive := make([]byte, 64<<10)
	rand.Read(archive)
	gz := append([]byte{0x1f, 0x8b}, archive[2:]...) // the plugin checks the gzip magic only
	for i := range versions {
		v := fmt.Sprintf("1.%d.0", i)
		e.Do("PUT", "/terraform/modules/v1/infra/greet/aws/"+v, e.Admin, gz).Want(http.StatusCreated)
		e.Do("PUT", "/go/mods/upload", e.Admin, moduleZip(b, "example.com/greet", "v"+v)).Want(http.StatusCreated)
	}
	e.Do("PUT", "/generic/files/greet/1.0.0/greet-aws-1.0.0.tar.gz", e.Admin, gz).Want(http.StatusCreated)
	return e, map[string]string{
		"versions/builtin-go":       "/go/mods/example.com/greet/@v/list",
		"versions/plugin-terraform": "/terraform/modules/v1/infra/greet/aws/versions",
		"download/builtin-generic":  "/generic/files/greet/1.0.0/greet-aws-1.0.0.tar.gz",
		"download/plugin-terraform": "/terraform/modules/v1/infra/greet/aws/1.0.0/greet-aws-1.0.0.tar.gz",
	}
}

func moduleZip(b *testing.B, path, version string) []byte {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+path+"\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "greet.go"), []byte("package greet\n"), 0o644)
	var out bytes.Buffer
	if err := modzip.CreateFromDir(&out, module.Version{Path: path, Version: version}, dir); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

// BenchmarkRead: each read, one request at a time and from 8 clients at
// once, with the admin's API token (its check cached, as a client's is).
func BenchmarkRead(b *testing.B) {
	e, paths := setup(b)
	get := func(b *testing.B, c *http.Client, url string) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+e.Admin)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("GET %s: %d, %d bytes", url, resp.StatusCode, n)
		}
	}
	for _, name := range []string{"versions/builtin-go", "versions/plugin-terraform", "download/builtin-generic", "download/plugin-terraform"} {
		url := e.URL + paths[name]
		b.Run(name+"/serial", func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			for b.Loop() {
				get(b, c, url)
			}
		})
		b.Run(name+"/parallel-8", func(b *testing.B) {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get(b, c, url)
				}
			})
		})
	}
}
