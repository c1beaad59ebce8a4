package main

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// TestREADMENamesEverySetting: every flag and environment variable
// `depot origin --help` lists is in the README's configuration table, so
// a new setting cannot go undocumented.
func TestREADMENamesEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"origin", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("origin --help exit %d", code)
	}
	flags := regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1)
	envs := regexp.MustCompile(`\[\$([A-Z0-9_]+)\]`).FindAllStringSubmatch(out.String(), -1)
	if len(flags) < 20 || len(envs) < 20 {
		t.Fatalf("read %d flags and %d variables from --help:\n%s", len(flags), len(envs), out.String())
	}
	for _, m := range append(flags, envs...) {
		if !bytes.Contains(readme, []byte("`"+m[1]+"`")) {
			t.Errorf("the README's configuration does not name `%s`", m[1])
		}
	}
}
