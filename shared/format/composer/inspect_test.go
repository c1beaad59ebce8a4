package composer

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

const composerJSON = `{
    "name": "Acme/Mailer",
    "description": "Sends mail",
    "type": "library",
    "keywords": ["mail", "smtp"],
    "homepage": "https://acme.example/mailer",
    "license": ["MIT", "GPL-3.0-or-later"],
    "support": {"source": "https://github.com/acme/mailer"},
    "require": {"php": ">=8.1", "psr/log": "^1.1 || ^2.0 || ^3.0", "ext-json": "*"},
    "require-dev": {"phpunit/phpunit": "^10.5"},
    "autoload": {"psr-4": {"Acme\\Mailer\\": "src/"}}
}`

func TestInspect(t *testing.T) {
	zip := formattest.Zip(t, map[string]string{"composer.json": composerJSON, "src/Mailer.php": "<?php\n"})
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "acme/mailer/2.3.0/acme-mailer-2.3.0.zip", File: bytes.NewReader(zip), Size: int64(len(zip))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "composer", Name: "acme/mailer", Version: "2.3.0", Size: int64(len(zip)), Summary: "Sends mail",
		Licenses: []string{"MIT", "GPL-3.0-or-later"}, Homepage: "https://acme.example/mailer", Repository: "https://github.com/acme/mailer",
		Keywords: []string{"mail", "smtp"}, Dependencies: []format.Dependency{
			{Name: "ext-json", Constraint: "*", Kind: "runtime", Ecosystem: "platform"},
			{Name: "php", Constraint: ">=8.1", Kind: "runtime", Ecosystem: "platform"},
			{Name: "psr/log", Constraint: "^1.1 || ^2.0 || ^3.0", Kind: "runtime", Ecosystem: "composer"},
			{Name: "phpunit/phpunit", Constraint: "^10.5", Kind: "dev", Ecosystem: "composer"}},
		Files: []format.FileEntry{{Path: "composer.json", Size: int64(len(composerJSON))}, {Path: "src/Mailer.php", Size: 6}}, FileCount: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// composer.json's own version wins over the path's.
	versioned := formattest.Zip(t, map[string]string{"composer.json": `{"name":"acme/x","version":"v1.0.0-beta1","license":"MIT"}`})
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "x.zip", File: bytes.NewReader(versioned), Size: int64(len(versioned))})
	if err != nil || got.Version != "v1.0.0-beta1" || !reflect.DeepEqual(got.Licenses, []string{"MIT"}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	for what, z := range map[string][]byte{
		"no composer.json": formattest.Zip(t, map[string]string{"src/a.php": ""}),
		"no version":       formattest.Zip(t, map[string]string{"composer.json": `{"name":"acme/x"}`}),
		"a bad name":       formattest.Zip(t, map[string]string{"composer.json": `{"name":"acme","version":"1.0.0"}`}),
		"an escape":        formattest.Zip(t, map[string]string{"composer.json": composerJSON, "../evil.php": ""}),
		"not a zip":        []byte(composerJSON),
	} {
		if _, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "x.zip", File: bytes.NewReader(z), Size: int64(len(z))}); err == nil {
			t.Errorf("a package with %s is inspected", what)
		}
	}
}

func FuzzInspectComposer(f *testing.F) {
	f.Add(formattest.Zip(f, map[string]string{"composer.json": composerJSON}))
	f.Add(formattest.Zip(f, map[string]string{"composer.json": `{"name":"a/b","version":"1.0","require":{"x/y":3},"license":[1]}`}))
	f.Fuzz(func(t *testing.T, z []byte) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "a/b/1.0.0/a-b-1.0.0.zip", File: bytes.NewReader(z), Size: int64(len(z))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
