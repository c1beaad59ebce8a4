package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpScriptingCommands: depot help lists the scripting commands,
// each answers help through main, and `depot edge` runs the command
// managing edge nodes for one of its words and the node otherwise.
func TestHelpScriptingCommands(t *testing.T) {
	var out, errb bytes.Buffer
	run([]string{"help"}, &out, &errb)
	for _, want := range []string{"depot login", "depot logout", "depot repo list|show|create|delete",
		"depot user list|create|delete|disable|enable",
		"depot token list", "depot edge list|show|create|delete|assign|unassign", "depot webhook list", "depot plugin list|install", "--output table|json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("depot help does not mention %q", want)
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if len(line) > 100 {
			t.Errorf("depot help: a line of %d columns: %s", len(line), line)
		}
	}
	for _, args := range [][]string{{"help", "repo"}, {"help", "user"}, {"help", "token"}, {"help", "webhook"}, {"help", "login"},
		{"help", "logout"}, {"repo", "--help"}, {"edge", "help"}, {"edge", "create", "--help"}, {"webhook", "help", "create"},
		{"help", "plugin"}, {"plugin", "install", "--help"}} {
		out.Reset()
		errb.Reset()
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage: depot ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
	out.Reset()
	run([]string{"help", "edge"}, &out, &errb)
	if !strings.Contains(out.String(), "--cache-dir") || !strings.Contains(out.String(), "depot edge help") {
		t.Errorf("help edge: the node's settings and a pointer to the commands managing nodes: %q", out.String())
	}
	out.Reset()
	run([]string{"edge", "assign", "--help"}, &out, &errb)
	if !strings.Contains(out.String(), "depot edge assign NODE REPOSITORY") {
		t.Errorf("edge assign --help: %q", out.String())
	}
	errb.Reset()
	if code := run([]string{"repo", "list", "--bogus"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--bogus") {
		t.Errorf("a bad flag: exit %d, %q", code, errb.String())
	}
}
