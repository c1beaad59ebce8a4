package composer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// pkgZip is a package zip whose Greeter says word; version "" leaves it
// out of composer.json.
func pkgZip(t *testing.T, version, word string) []byte {
	cj := map[string]any{"name": "acme/greeter", "description": "greets", "type": "library", "license": "MIT",
		"autoload": map[string]any{"psr-4": map[string]string{`Acme\Greeter\`: "src/"}}}
	if version != "" {
		cj["version"] = version
	}
	raw, _ := json.Marshal(cj)
	return formattest.Zip(t, map[string]string{"composer.json": string(raw),
		"src/Greeter.php": "<?php\nnamespace Acme\\Greeter;\n\nclass Greeter {\n    public static function hello(): string { return '" + word + "'; }\n}\n"})
}

// TestComposerRequire: package zips are uploaded (the version from
// composer.json, or ?version=); a version is not replaced; malformed
// zips are refused; the real composer requires the package in a fresh
// project (only our repository, http-basic credentials after the 401
// challenge), resolves the newest matching version, and the installed
// code runs; the lock names our dist URL.
func TestComposerRequire(t *testing.T) {
	bins := clienttest.RequireClients(t, "composer", "php")
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		repoID := e.CreateRepo("php", "composer", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(repoID, alice.ID, false, "write")
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.0.0", "hello 1.0.0")).Want(201)
		e.Do("PUT", "/composer/php?version=1.1.0", alice.Basic(), pkgZip(t, "", "hello 1.1.0")).Want(201)
		e.Do("PUT", "/composer/php", alice.Basic(), pkgZip(t, "1.0.0", "changed")).Want(409)
		for what, zip := range map[string][]byte{
			"no composer.json": formattest.Zip(t, map[string]string{"src/x.php": "<?php"}),
			"a path outside":   formattest.Zip(t, map[string]string{"composer.json": `{"name":"acme/evil","version":"1.0.0"}`, "../evil.php": "<?php"}),
			"a bad name":       formattest.Zip(t, map[string]string{"composer.json": `{"name":"Evil","version":"1.0.0"}`}),
			"no version":       formattest.Zip(t, map[string]string{"composer.json": `{"name":"acme/evil"}`}),
			"not a zip":        []byte("nope"),
		} {
			if r := e.Do("PUT", "/composer/php", alice.Basic(), zip); r.Status != 400 {
				t.Errorf("uploading a zip with %s: %d %s", what, r.Status, r.Body)
			}
		}

		home, proj := clienttest.Home(t), t.TempDir()
		host := clienttest.HostPort(e)
		clienttest.WriteFile(t, filepath.Join(proj, "composer.json"), `{"name":"acme/app","require":{"acme/greeter":"^1.0"},
  "repositories":[{"type":"composer","url":"`+e.URL+`/composer/php"},{"packagist.org":false}],"config":{"secure-http":false}}`)
		clienttest.WriteFile(t, filepath.Join(proj, "auth.json"), `{"http-basic":{"`+host+`":{"username":"`+alice.Name+`","password":"`+alice.Token+`"}}}`)
		clienttest.Run(t, clienttest.Cmd{Dir: proj, Name: bins["composer"], Args: []string{"install", "--no-interaction", "--no-progress"},
			Env: []string{"HOME=" + home, "COMPOSER_HOME=" + filepath.Join(home, "composer"), "COMPOSER_CACHE_DIR=" + filepath.Join(home, "cache"),
				"COMPOSER_NO_AUDIT=1", "COMPOSER_DISABLE_NETWORK=0"}})
		out := clienttest.Run(t, clienttest.Cmd{Dir: proj, Name: bins["php"], Args: []string{"-r",
			`require "vendor/autoload.php"; echo Acme\Greeter\Greeter::hello();`}})
		if strings.TrimSpace(out) != "hello 1.1.0" {
			t.Fatalf("the installed package says %q", out)
		}
		lock, err := os.ReadFile(filepath.Join(proj, "composer.lock"))
		if err != nil || !strings.Contains(string(lock), `"version": "1.1.0"`) || !strings.Contains(string(lock), e.URL+"/composer/php/files/acme/greeter/1.1.0/") {
			t.Fatalf("composer.lock (%v):\n%s", err, lock)
		}
	})
}
