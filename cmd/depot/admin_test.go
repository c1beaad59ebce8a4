package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestListenTakenCreatesNothing: when the HTTP port is taken the origin
// fails before it creates anything, so no generated admin password is
// printed (and lost) and the next start creates the admin afresh.
func TestListenTakenCreatesNothing(t *testing.T) {
	bin := buildDepot(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "origin", "--data-dir", dataDir, "--listen", taken.Addr().String(), "--raft-addr", clienttest.FreeAddr(t))
	cmd.Env = withoutEnv(os.Environ(), "DEPOT_ADMIN_PASSWORD", "JWT_SECRET")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code <= 0 {
		t.Fatalf("exit %d (%v) with the port taken:\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "cannot listen on "+taken.Addr().String()) {
		t.Errorf("the message does not name the address:\n%s", out)
	}
	if strings.Contains(strings.ToLower(string(out)), "password") {
		t.Errorf("a password was printed although the origin did not start:\n%s", out)
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		t.Errorf("the data directory was written: %v", entries)
	}
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

var newPasswordRE = regexp.MustCompile(`New password for user 'admin': (\S+)`)

// resetPassword runs `depot admin reset-password` and returns the password
// it printed; the output must say whether the running origin (via) did it.
func resetPassword(t *testing.T, s site, via string) string {
	t.Helper()
	var stdout, stderr clienttest.Buffer
	cmd := exec.Command(s.bin, "admin", "reset-password", "--data-dir", s.dataDir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("reset-password: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	m := newPasswordRE.FindStringSubmatch(stdout.String())
	if m == nil || !strings.Contains(stdout.String(), "Set through "+via) {
		t.Fatalf("reset-password printed no password or not through %s:\n%s", via, stdout.String())
	}
	return m[1]
}

// wantLogin checks that pass logs admin in and must be changed.
func wantLogin(t *testing.T, base, pass string) {
	t.Helper()
	var out struct {
		PasswordChangeRequired bool `json:"password_change_required"`
	}
	body := `{"username":"admin","password":"` + pass + `"}`
	if err := json.Unmarshal(call(t, "POST", base+"/api/v1/auth/login", "", strings.NewReader(body), 200), &out); err != nil {
		t.Fatal(err)
	}
	if !out.PasswordChangeRequired {
		t.Errorf("a reset password need not be changed")
	}
}

// TestResetPassword resets the admin's password through a running origin
// (its admin socket), then on the stopped data directory (through its
// raft log); each time the old password and sessions stop working.
func TestResetPassword(t *testing.T) {
	s := newSite(t)
	p := s.start(t)
	session := login(t, p.url, "admin", "initial-pw-123")
	call(t, "PUT", p.url+"/api/v1/users/me", session, strings.NewReader(`{"current_password":"initial-pw-123","password":"changed-pw-456"}`), 200)
	call(t, "GET", p.url+"/api/v1/users/me", session, nil, 200)

	sock := filepath.Join(s.dataDir, "admin.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v, mode %v; want 0600", err, fi)
	}

	online := resetPassword(t, s, "the running origin")
	call(t, "POST", p.url+"/api/v1/auth/login", "", strings.NewReader(`{"username":"admin","password":"changed-pw-456"}`), 401)
	call(t, "GET", p.url+"/api/v1/users/me", session, nil, 401)
	call(t, "GET", p.url+"/generic/none/p/1.0/f.txt", "Basic "+basicAuth("admin", "changed-pw-456"), nil, 401)
	wantLogin(t, p.url, online)

	p.stop(t)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the admin socket outlived the origin: %v", err)
	}

	offline := resetPassword(t, s, "the stopped origin's raft log")
	if offline == online {
		t.Fatal("the offline reset printed the same password")
	}
	p = s.start(t)
	call(t, "POST", p.url+"/api/v1/auth/login", "", strings.NewReader(`{"username":"admin","password":"`+online+`"}`), 401)
	wantLogin(t, p.url, offline)
}
