package composer_test

import (
	"encoding/json"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestComposerScans: package zips uploaded to a composer repository are
// scanned on upload against the Packagist advisories:
// guzzlehttp/guzzle 7.4.2 with exactly the findings of the data's test
// case and the case's unaffected version with none; a package requiring
// twig/twig "3.4.2" with twig's test case as dependency findings, its
// "^1.0" on psr/log reported as not scanned and its php requirement
// (a platform's, not a package's) left out.
func TestComposerScans(t *testing.T) {
	e := clienttest.Start(t)
	repoID := e.CreateRepo("php", "composer", false)
	alice := clienttest.NewUser(e, "alice")
	e.Grant(repoID, alice.ID, false, "write")
	clienttest.LoadAdvisories(t, e, "Packagist")
	upload := func(name, version string, require map[string]string) {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"name": name, "version": version, "type": "library", "require": require})
		e.Do("PUT", "/composer/php", alice.Basic(), formattest.Zip(t, map[string]string{"composer.json": string(raw), "src/A.php": "<?php\n"})).Want(201)
	}
	upload("guzzlehttp/guzzle", "7.4.2", nil)
	upload("guzzlehttp/guzzle", "7.12.1", nil)
	upload("acme/app", "1.0.0", map[string]string{"php": ">=8.1", "twig/twig": "3.4.2", "psr/log": "^1.0"})

	clienttest.WantCaseScans(t, e, repoID, "Packagist", "guzzlehttp/guzzle")
	r := clienttest.WantDependencyScan(t, e, repoID, "acme/app", "1.0.0", "Packagist", "twig/twig")
	if len(r.Report.NotScanned) != 1 || r.Report.NotScanned[0].What != "psr/log ^1.0" {
		t.Errorf("not scanned: %+v", r.Report.NotScanned)
	}
}
