package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/depot-registry/depot/cluster/peerauth"
)

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "depot origin") {
		t.Fatalf("help: %d %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"origin", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("origin --help exit %d", code)
	}
	for _, want := range []string{"--listen", "--data-dir", "--raft-addr", "--node-id", "--external-url",
		"--cluster-key", "DEPOT_CLUSTER_KEY", "JWT_SECRET", "JWT_ACCESS_TOKEN_EXPIRY", "JWT_REFRESH_TOKEN_EXPIRY", "DEPOT_ADMIN_PASSWORD", "DEMO_MODE",
		"AUDIT_LOG_ENABLED", "AUDIT_LOG_PATH", "RATE_LIMIT_LOGIN", "RATE_LIMIT_WINDOW"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("origin --help does not mention %s", want)
		}
	}
	if code := run([]string{"bogus"}, &out, &errb); code != 2 {
		t.Errorf("unknown command exit %d", code)
	}
	for _, cmd := range []string{"unknown", "bogus"} {
		out.Reset()
		errb.Reset()
		if code := run([]string{"help", cmd}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `depot: unknown command "`+cmd+`"`) || out.Len() != 0 {
			t.Errorf("help %s: exit %d, stdout %q, stderr %q", cmd, code, out.String(), errb.String())
		}
	}
	out.Reset()
	if code := run([]string{"help", "origin"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--listen") {
		t.Errorf("help origin: exit %d, %q", code, out.String())
	}
	for _, args := range [][]string{{"help", "admin"}, {"admin", "help"}, {"admin", "--help"}} {
		out.Reset()
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "reset-password") || !strings.Contains(out.String(), "--data-dir") {
			t.Errorf("%s: exit %d, %q", strings.Join(args, " "), code, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "admin reset-password") {
		t.Errorf("the general help does not mention admin reset-password: %q", out.String())
	}
	errb.Reset()
	if code := run([]string{"origin", "--rate-limit-window", "abc"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "rate-limit-window") {
		t.Errorf("bad flag: exit %d, %q", code, errb.String())
	}
	// Flags are named as --help names them.
	errb.Reset()
	if code := run([]string{"edge", "--lisen", ":0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "not defined: --lisen") {
		t.Errorf("unknown flag: exit %d, %q", code, errb.String())
	}
	// Every command takes --help.
	for _, cmd := range []string{"origin", "edge", "admin", "cluster", "keygen", "version"} {
		out.Reset()
		if code := run([]string{cmd, "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "depot "+cmd) {
			t.Errorf("%s --help: exit %d, %q", cmd, code, out.String())
		}
	}
	// The settings in their groups, no line past 100 columns.
	for cmd, groups := range map[string][]string{
		"origin": {"Network:", "Cluster:", "TLS and proxies:", "Sign-in and accounts:", "Limits:", "Storage and garbage collection:", "Webhooks and events:", "Logging:"},
		"edge":   {"Origins and registration:", "Network and TLS:", "Cache and replica:", "Logging:"},
	} {
		out.Reset()
		run([]string{"help", cmd}, &out, &errb)
		for _, g := range groups {
			if !strings.Contains(out.String(), "\n"+g+"\n") {
				t.Errorf("help %s has no group %q", cmd, g)
			}
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if len(line) > 100 {
				t.Errorf("help %s: a line of %d columns: %s", cmd, len(line), line)
			}
		}
	}
}

func TestKeygen(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); !strings.Contains(out.String(), "depot keygen") {
		t.Errorf("usage does not list keygen (exit %d)", code)
	}
	keys := map[string]bool{}
	for range 2 {
		out.Reset()
		errb.Reset()
		if code := run([]string{"keygen"}, &out, &errb); code != 0 || errb.Len() != 0 {
			t.Fatalf("keygen: exit %d, stderr %q", code, errb.String())
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(out.String(), "\n"))
		if err != nil || len(raw) != 32 {
			t.Fatalf("keygen printed %q: %d bytes, %v", out.String(), len(raw), err)
		}
		if _, err := peerauth.ParseKey(out.String()); err != nil {
			t.Fatalf("keygen's key is refused: %v", err)
		}
		keys[out.String()] = true
	}
	if len(keys) != 2 {
		t.Error("keygen printed the same key twice")
	}
	if code := run([]string{"keygen", "extra"}, &out, &errb); code != 2 {
		t.Errorf("keygen with an argument: exit %d", code)
	}
}
