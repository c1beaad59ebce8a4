package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
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
		"JWT_SECRET", "JWT_ACCESS_TOKEN_EXPIRY", "JWT_REFRESH_TOKEN_EXPIRY", "DEPOT_ADMIN_PASSWORD", "DEMO_MODE",
		"AUDIT_LOG_ENABLED", "AUDIT_LOG_PATH", "RATE_LIMIT_LOGIN", "RATE_LIMIT_WINDOW"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("origin --help does not mention %s", want)
		}
	}
	if code := run([]string{"bogus"}, &out, &errb); code != 2 {
		t.Errorf("unknown command exit %d", code)
	}
	errb.Reset()
	if code := run([]string{"origin", "--rate-limit-window", "abc"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "rate-limit-window") {
		t.Errorf("bad flag: exit %d, %q", code, errb.String())
	}
}
