package ldap_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth/ldap"
	"github.com/depot-registry/depot/shared/auth/ldap/ldaptest"
)

func directory(t *testing.T, s *ldaptest.Slapd, change func(*ldap.Config)) *ldap.Directory {
	t.Helper()
	cfg := ldap.Config{URL: s.URL, BindDN: ldaptest.ServiceDN, BindPassword: ldaptest.ServicePW, BaseDN: ldaptest.People,
		GroupBaseDN: ldaptest.Groups, UserFilter: "(&(objectClass=inetOrgPerson)(uid={username}))", Timeout: 2 * time.Second}
	if change != nil {
		change(&cfg)
	}
	d, err := ldap.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestAuthenticate against a real slapd: the right password gives the
// user's identity and groups; a wrong one, an unknown user, an empty
// password and a filter injection are all just invalid credentials.
func TestAuthenticate(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{})
	s.AddUser("alice", "alice-pw", "alice@example.org")
	s.AddUser("bob", "bob-pw", "bob@example.org")
	s.AddGroup("admins", "alice")
	s.AddGroup("developers", "alice", "bob")
	d := directory(t, s, nil)
	ctx := t.Context()

	id, err := d.Authenticate(ctx, "alice", "alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(id.Groups)
	if id.DN != ldaptest.UserDN("alice") || id.Email != "alice@example.org" || !slices.Equal(id.Groups, []string{"admins", "developers"}) {
		t.Fatalf("alice = %+v", id)
	}
	if id, err := d.Authenticate(ctx, "BOB", "bob-pw"); err != nil || id.Username != "bob" || !slices.Equal(id.Groups, []string{"developers"}) {
		t.Fatalf("bob (typed BOB) = %+v, %v", id, err)
	}
	for _, c := range []struct{ user, pw string }{{"bob", "wrong"}, {"nobody", "x"}, {"alice", ""}, {"*", "alice-pw"}, {"alice)(uid=*", "x"}} {
		if _, err := d.Authenticate(ctx, c.user, c.pw); !errors.Is(err, ldap.ErrInvalidCredentials) {
			t.Errorf("Authenticate(%q, %q) = %v, want ErrInvalidCredentials", c.user, c.pw, err)
		}
	}
	// The connection a refused password used is bound as the service
	// account again: the next search works.
	if _, err := d.Authenticate(ctx, "alice", "alice-pw"); err != nil {
		t.Fatalf("after a refusal: %v", err)
	}

	// Lookup (the sync): who is still there, and their groups now.
	s.RemoveMember("developers", "bob")
	if id, err := d.Lookup(ctx, "bob"); err != nil || len(id.Groups) != 0 {
		t.Fatalf("Lookup(bob) = %+v, %v; want no groups", id, err)
	}
	s.DeleteUser("bob")
	if _, err := d.Lookup(ctx, "bob"); !errors.Is(err, ldap.ErrNotFound) {
		t.Fatalf("Lookup of a deleted user: %v", err)
	}
}

// TestUnavailable: a stopped directory is ErrUnavailable (not a wrong
// password), and the pool reconnects once it is back; a service account
// the directory refuses is ErrUnavailable too, saying so.
func TestUnavailable(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{})
	s.AddUser("alice", "alice-pw", "alice@example.org")
	d := directory(t, s, nil)
	ctx := t.Context()
	if _, err := d.Authenticate(ctx, "alice", "alice-pw"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	start := time.Now()
	if _, err := d.Authenticate(ctx, "alice", "alice-pw"); !errors.Is(err, ldap.ErrUnavailable) {
		t.Fatalf("directory down: %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a down directory took %v to say so", took)
	}
	s.Restart()
	if _, err := d.Authenticate(ctx, "alice", "alice-pw"); err != nil {
		t.Fatalf("directory back: %v", err)
	}
	bad := directory(t, s, func(c *ldap.Config) { c.BindPassword = "wrong" })
	if _, err := bad.Authenticate(ctx, "alice", "alice-pw"); !errors.Is(err, ldap.ErrUnavailable) || !contains(err, "LDAP_BIND_PASSWORD") {
		t.Fatalf("a refused service account: %v", err)
	}
}

// TestStartTLS: with the directory's CA the connection is upgraded;
// without it the certificate is refused (unavailable, not a fallback to
// plain text).
func TestStartTLS(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{TLS: true})
	s.AddUser("alice", "alice-pw", "alice@example.org")
	d := directory(t, s, func(c *ldap.Config) { c.StartTLS, c.CAFile = true, s.CAFile })
	if _, err := d.Authenticate(t.Context(), "alice", "alice-pw"); err != nil {
		t.Fatalf("StartTLS with the CA: %v", err)
	}
	untrusted := directory(t, s, func(c *ldap.Config) { c.StartTLS = true })
	if _, err := untrusted.Authenticate(t.Context(), "alice", "alice-pw"); !errors.Is(err, ldap.ErrUnavailable) || !contains(err, "certificate") {
		t.Fatalf("StartTLS without the CA: %v", err)
	}
}

// TestLDAPS: over ldaps:// (TLS from the first byte, on slapd's second
// port) with the directory's CA a user authenticates and a wrong password
// is a verdict like over ldap://; without the CA the handshake fails on
// the certificate's unknown authority, the directory is unavailable and
// no password is accepted, the right one neither (no fallback to plain
// text, no skipped verification). After a restart slapd serves ldaps on
// the same port.
func TestLDAPS(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{TLS: true})
	if !strings.HasPrefix(s.LDAPSURL, "ldaps://127.0.0.1:") {
		t.Fatalf("LDAPSURL = %q", s.LDAPSURL)
	}
	s.AddUser("alice", "alice-pw", "alice@example.org")
	s.AddGroup("developers", "alice")
	ctx := t.Context()

	d := directory(t, s, func(c *ldap.Config) { c.URL, c.CAFile = s.LDAPSURL, s.CAFile })
	id, err := d.Authenticate(ctx, "alice", "alice-pw")
	if err != nil {
		t.Fatalf("ldaps with the CA: %v", err)
	}
	if id.DN != ldaptest.UserDN("alice") || !slices.Equal(id.Groups, []string{"developers"}) {
		t.Fatalf("alice over ldaps = %+v", id)
	}
	if _, err := d.Authenticate(ctx, "alice", "wrong"); !errors.Is(err, ldap.ErrInvalidCredentials) {
		t.Fatalf("a wrong password over ldaps: %v, want ErrInvalidCredentials", err)
	}

	untrusted := directory(t, s, func(c *ldap.Config) { c.URL = s.LDAPSURL })
	for _, pw := range []string{"alice-pw", "wrong"} {
		id, err := untrusted.Authenticate(ctx, "alice", pw)
		if id != nil || !errors.Is(err, ldap.ErrUnavailable) || !contains(err, "certificate signed by unknown authority") {
			t.Fatalf("ldaps without the CA, password %q: %+v, %v; want ErrUnavailable for the untrusted certificate", pw, id, err)
		}
	}

	url := s.LDAPSURL
	s.Stop()
	s.Restart()
	if s.LDAPSURL != url {
		t.Fatalf("after a restart slapd serves ldaps on %s, was %s", s.LDAPSURL, url)
	}
	if _, err := d.Authenticate(ctx, "alice", "alice-pw"); err != nil {
		t.Fatalf("ldaps after a restart: %v", err)
	}
}

// TestConfig refuses settings that cannot work.
func TestConfig(t *testing.T) {
	for _, c := range []ldap.Config{
		{URL: "http://x", BaseDN: "dc=x"},
		{URL: "ldap://", BaseDN: "dc=x"},
		{URL: "ldap://x"},
		{URL: "ldap://x", BaseDN: "dc=x", UserFilter: "(uid=alice)"},
		{URL: "ldap://x", BaseDN: "dc=x", UserFilter: "(uid={username}"},
		{URL: "ldaps://x", BaseDN: "dc=x", StartTLS: true},
		{URL: "ldap://x", BaseDN: "dc=x", CAFile: "/nonexistent"},
	} {
		if _, err := ldap.New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
