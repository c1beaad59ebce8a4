package composer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestMigrateFromArtifactory: a Composer repository of Artifactory moves
// here: a zip versioned by its composer.json, one versioned only by the
// source's composer.version property (as Artifactory reads it), a
// tar.gz reported as not kept; composer then requires the newest from
// Depot and its code runs.
func TestMigrateFromArtifactory(t *testing.T) {
	bins := clienttest.RequireClients(t, "composer", "php")
	e := clienttest.Start(t)
	af := artifactorytest.New(t, "af", "pw")
	af.AddRepo("php-local", "LOCAL", "Composer", "php packages")
	af.Put("php-local", "acme/greeter/greeter-1.0.0.zip", artifactorytest.File{Data: pkgZip(t, "1.0.0", "hello 1.0.0")})
	af.Put("php-local", "acme/greeter/greeter-1.1.0.zip", artifactorytest.File{Data: pkgZip(t, "", "hello 1.1.0"),
		Properties: map[string][]string{"composer.version": {"1.1.0"}}})
	af.Put("php-local", "acme/other/other-1.0.0.tar.gz", artifactorytest.File{Data: formattest.Tgz(t, map[string]string{"composer.json": "{}"})})

	m := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af", "source_password": "pw",
		"repositories": []string{"php-local"}})
	clienttest.WantMigrated(t, e, m, 2, 1)
	again := clienttest.Migrate(t, e, map[string]any{"source_url": af.URL, "source_username": "af", "source_password": "pw",
		"repositories": []string{"php-local"}})
	clienttest.WantMigrated(t, e, again, 2, 1)
	if n := af.Downloads("php-local", "acme/greeter/greeter-1.1.0.zip"); n != 1 {
		t.Errorf("the zip found here by its checksum was downloaded %d times", n)
	}

	home, proj := clienttest.Home(t), t.TempDir()
	host := clienttest.HostPort(e)
	clienttest.WriteFile(t, filepath.Join(proj, "composer.json"), `{"name":"acme/app","require":{"acme/greeter":"^1.0"},
  "repositories":[{"type":"composer","url":"`+e.URL+`/composer/php-local"},{"packagist.org":false}],"config":{"secure-http":false}}`)
	clienttest.WriteFile(t, filepath.Join(proj, "auth.json"), `{"http-basic":{"`+host+`":{"username":"admin","password":"`+origintest.AdminPassword+`"}}}`)
	clienttest.Run(t, clienttest.Cmd{Dir: proj, Name: bins["composer"], Args: []string{"install", "--no-interaction", "--no-progress"},
		Env: []string{"HOME=" + home, "COMPOSER_HOME=" + filepath.Join(home, "composer"), "COMPOSER_CACHE_DIR=" + filepath.Join(home, "cache"),
			"COMPOSER_NO_AUDIT=1"}})
	out := clienttest.Run(t, clienttest.Cmd{Dir: proj, Name: bins["php"], Args: []string{"-r",
		`require "vendor/autoload.php"; echo Acme\Greeter\Greeter::hello();`}})
	if strings.TrimSpace(out) != "hello 1.1.0" {
		t.Fatalf("the installed package says %q", out)
	}
}
