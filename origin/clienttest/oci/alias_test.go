package oci_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestDockerPathAlias: the path form of the spec's migration example,
// <host>/docker/<repo>/<image>:<tag>, names image <image> of repository
// <repo>. crane pushes through the alias (the token flow included) and
// reads back under both names; a repository named "docker" keeps its
// two-component names.
func TestDockerPathAlias(t *testing.T) {
	t.Parallel()
	bins := clienttest.RequireClients(t, "crane")
	clienttest.Targets(t, func(t *testing.T) *origintest.Env { return start(t) }, func(t *testing.T, e *origintest.Env) {
		appsID := e.CreateRepo("apps", "docker", false)
		dockerID := e.CreateRepo("docker", "docker", false)
		alice := writer(e, "alice", appsID)
		e.Grant(dockerID, alice.ID, false, "read", "write")
		host, work, home := clienttest.HostPort(e), t.TempDir(), clienttest.Home(t)
		env := []string{"HOME=" + home, "DOCKER_CONFIG=" + filepath.Join(home, "docker")}
		crane := func(args ...string) string {
			t.Helper()
			return strings.TrimSpace(clienttest.Run(t, clienttest.Cmd{Dir: work, Env: env, Name: bins["crane"], Args: args}))
		}
		crane("auth", "login", host, "-u", alice.Name, "-p", alice.Token)
		writeTar(t, filepath.Join(work, "layer.tar"), "f.txt", "through the alias\n")
		crane("append", "--insecure", "-f", "layer.tar", "-t", host+"/docker/apps/web:1.0")
		viaAlias := crane("digest", "--insecure", host+"/docker/apps/web:1.0")
		if direct := crane("digest", "--insecure", host+"/apps/web:1.0"); direct != viaAlias {
			t.Fatalf("the alias names %s, the repository %s", viaAlias, direct)
		}
		if tags := crane("ls", "--insecure", host+"/docker/apps/web"); tags != "1.0" {
			t.Fatalf("tags through the alias: %q", tags)
		}
		// A repository named docker: two components are its own.
		crane("append", "--insecure", "-f", "layer.tar", "-t", host+"/docker/tool:2.0")
		if tags := crane("ls", "--insecure", host+"/docker/tool"); tags != "2.0" {
			t.Fatalf("tags of docker/tool: %q", tags)
		}
		// Stored in repository apps, as image web.
		if r := e.Do("GET", "/api/v1/packages?repository_id="+appsID, e.Admin, nil).Want(200); !strings.Contains(string(r.Body), "web") {
			t.Fatalf("packages of apps: %s", r.Body)
		}
	})
}
