package origin_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth/ldap/ldaptest"
)

// ldapOrigin starts an origin signing users in with the directory of s:
// members of "admins" are administrators.
func ldapOrigin(t *testing.T, s *ldaptest.Slapd) *origintest.Env {
	t.Helper()
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.LDAP.URL, c.LDAP.BindDN, c.LDAP.BindPassword = s.URL, ldaptest.ServiceDN, ldaptest.ServicePW
		c.LDAP.BaseDN, c.LDAP.GroupBaseDN = ldaptest.People, ldaptest.Groups
		c.LDAP.UserFilter = "(&(objectClass=inetOrgPerson)(uid={username}))"
		c.LDAP.RoleGroups = "admin=admins"
		c.LDAP.StartTLS, c.LDAP.CAFile = s.CAFile != "", s.CAFile
	}})
}

func signIn(e *origintest.Env, user, pw string) *origintest.Response {
	return e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": user, "password": pw})
}

func bearer(r *origintest.Response) string {
	var out struct {
		AccessToken string `json:"access_token"`
	}
	r.Want(200).JSON(&out)
	return "Bearer " + out.AccessToken
}

func basic(user, pw string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pw)
	return req.Header.Get("Authorization")
}

// TestLDAPSignIn against a real slapd (over StartTLS with a CA of the
// test): a first sign-in creates the user with the role its groups give;
// a directory group becomes a Depot group whose permission applies to its
// members, also through Basic credentials on a client path; a group the
// directory takes away is gone at the next sign-in; a local user's name is
// not taken over; with the directory down LDAP passwords answer 503 while
// local users and API tokens go on.
func TestLDAPSignIn(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{TLS: true})
	s.AddUser("alice", "alice-pw-1", "alice@example.org")
	s.AddUser("bob", "bob-pw-1", "bob@example.org")
	s.AddUser("admin", "directory-admin-pw", "intruder@example.org")
	s.AddGroup("admins", "alice")
	s.AddGroup("developers", "alice", "bob")
	e := ldapOrigin(t, s)

	alice := bearer(signIn(e, "alice", "alice-pw-1"))
	me := e.Do("GET", "/api/v1/users/me", alice, nil).Want(200).Map()
	if me["source"] != "ldap" || me["role"] != "admin" || me["email"] != "alice@example.org" {
		t.Fatalf("alice after her first sign-in: %v", me)
	}
	signIn(e, "alice", "wrong").WantError(401, "UNAUTHORIZED")
	signIn(e, "nobody", "x").WantError(401, "UNAUTHORIZED")
	// The directory's "admin" does not become the local admin.
	signIn(e, "admin", "directory-admin-pw").WantError(401, "UNAUTHORIZED")

	// Her groups are Depot groups now; a permission on one applies to
	// bob, who has never signed in, through his Basic credentials.
	repo := e.CreateRepo("private", "generic", false)
	e.Do("POST", "/api/v1/permissions", alice, map[string]any{"repository_id": repo, "group_id": "developers",
		"permissions": []string{"read", "write"}}).Want(201)
	e.Do("PUT", "/generic/private/tool/1.0/tool.txt", basic("bob", "bob-pw-1"), "bytes").Want(201)
	if got := string(e.Do("GET", "/generic/private/tool/1.0/tool.txt", basic("bob", "bob-pw-1"), nil).Want(200).Body); got != "bytes" {
		t.Fatalf("bob reads %q", got)
	}
	e.Do("GET", "/generic/private/tool/1.0/tool.txt", basic("bob", "wrong"), nil).WantError(401, "UNAUTHORIZED")
	var users struct {
		Users []struct{ Username, Role, Source string } `json:"users"`
	}
	e.Do("GET", "/api/v1/users", alice, nil).Want(200).JSON(&users)
	if !slices.ContainsFunc(users.Users, func(u struct{ Username, Role, Source string }) bool {
		return u.Username == "bob" && u.Role == "user" && u.Source == "ldap"
	}) {
		t.Fatalf("users: %+v", users.Users)
	}

	// An API token bob mints outlives the directory.
	bob := bearer(signIn(e, "bob", "bob-pw-1"))
	var tok struct{ Token string }
	e.Do("POST", "/api/v1/users/me/tokens", bob, map[string]any{"name": "ci", "scopes": []string{"repository:read"}}).Want(201).JSON(&tok)

	// The directory takes bob out of developers: his next sign-in says
	// so, and the group's permission no longer applies to him.
	s.RemoveMember("developers", "bob")
	bob = bearer(signIn(e, "bob", "bob-pw-1"))
	e.Do("GET", "/api/v1/repositories/"+repo, bob, nil).WantError(403, "FORBIDDEN")

	// The directory goes down.
	s.Stop()
	r := signIn(e, "alice", "alice-pw-1").WantError(503, "UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "directory") {
		t.Fatalf("a sign-in with the directory down: %s (Retry-After %q)", r.Body, r.Header.Get("Retry-After"))
	}
	bearer(signIn(e, "admin", origintest.AdminPassword)) // local users go on
	e.Do("GET", "/api/v1/users/me", "Bearer "+tok.Token, nil).Want(200)
	s.Restart()
	bearer(signIn(e, "alice", "alice-pw-1"))
}
