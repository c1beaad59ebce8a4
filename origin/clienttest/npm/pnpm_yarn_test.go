package npm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestPnpmAndYarn: pnpm publishes to the registry (token in .npmrc) and
// installs from it; yarn (classic) installs the same package; each one's
// lockfile resolves only to the registry.
func TestPnpmAndYarn(t *testing.T) {
	bins := clienttest.RequireClients(t, "pnpm", "yarn", "node")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		_, alice := setup(t, e)
		c := newClient(t, e, "js", tokenAuth(alice))
		env := func() []string {
			return []string{"HOME=" + c.home, "npm_config_userconfig=" + filepath.Join(c.home, ".npmrc"), "NO_COLOR=1",
				"npm_config_update_notifier=false", "YARN_CACHE_FOLDER=" + filepath.Join(c.cache, "yarn")}
		}
		run := func(dir, name string, args ...string) string {
			t.Helper()
			return clienttest.Run(t, clienttest.Cmd{Dir: dir, Env: env(), Name: bins[name], Args: args})
		}
		run(c.pkg("pnpm-made", "1.0.0", "from pnpm"), "pnpm", "publish", "--no-git-checks")
		run(c.pkg("pnpm-made", "1.1.0", "from pnpm, again"), "pnpm", "publish", "--no-git-checks")
		if out := c.npm(c.home, "view", "pnpm-made", "versions", "--json"); !strings.Contains(out, "1.1.0") {
			t.Fatalf("versions after pnpm publish: %s", out)
		}

		dir := c.project()
		run(dir, "pnpm", "add", "pnpm-made@1.0.0", "--store-dir", filepath.Join(c.cache, "pnpm-store"))
		if got := readFile(t, dir, "node_modules/pnpm-made/index.js"); !strings.Contains(got, `"from pnpm"`) {
			t.Errorf("pnpm installed index.js = %q", got)
		}
		checkResolved(t, filepath.Join(dir, "pnpm-lock.yaml"), c.registry, "pnpm-made")

		// yarn classic sends the token for a registry below a path only
		// with always-auth, as its users configure it.
		dir = c.project()
		clienttest.WriteFile(t, filepath.Join(dir, ".npmrc"), c.npmrc+"always-auth=true\n")
		run(dir, "yarn", "add", "pnpm-made@^1.1.0", "--non-interactive", "--no-progress")
		if got := readFile(t, dir, "node_modules/pnpm-made/index.js"); !strings.Contains(got, `"from pnpm, again"`) {
			t.Errorf("yarn installed index.js = %q", got)
		}
		checkResolved(t, filepath.Join(dir, "yarn.lock"), c.registry, "pnpm-made")
	})
}

// checkResolved fails unless the lockfile names pkg and every tarball it
// resolves comes from registry.
func checkResolved(t *testing.T, lockfile, registry, pkg string) {
	t.Helper()
	raw, err := os.ReadFile(lockfile)
	if err != nil {
		t.Fatal(err)
	}
	lock := string(raw)
	if !strings.Contains(lock, pkg) {
		t.Fatalf("%s does not name %s:\n%s", filepath.Base(lockfile), pkg, lock)
	}
	for _, line := range strings.Split(lock, "\n") {
		if i := strings.Index(line, "http"); i >= 0 && strings.Contains(line, ".tgz") && !strings.Contains(line[i:], strings.TrimSuffix(registry, "/")) {
			t.Fatalf("%s resolves outside the registry: %s", filepath.Base(lockfile), line)
		}
	}
}
