package origin_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth/ldap/ldaptest"
)

// ldapOrigin starts an origin signing users in with the directory of s:
// members of "admins" are administrators.
func ldapOrigin(t *testing.T, s *ldaptest.Slapd, more ...func(*origin.Config)) *origintest.Env {
	t.Helper()
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.LDAP.URL, c.LDAP.BindDN, c.LDAP.BindPassword = s.URL, ldaptest.ServiceDN, ldaptest.ServicePW
		c.LDAP.BaseDN, c.LDAP.GroupBaseDN = ldaptest.People, ldaptest.Groups
		c.LDAP.UserFilter = "(&(objectClass=inetOrgPerson)(uid={username}))"
		c.LDAP.RoleGroups = "admin=admins"
		c.LDAP.StartTLS, c.LDAP.CAFile = s.CAFile != "", s.CAFile
		for _, f := range more {
			f(c)
		}
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
	if me["source"] != "ldap" || me["role"] != "admin" || me["email"] != "alice@example.org" || me["display_name"] != "Alice Example" {
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

	// An administrator's disabling stands whatever the directory says;
	// enabled again, the directory's password works.
	e.Do("PUT", "/api/v1/users/bob", e.Admin, map[string]any{"disabled": true}).Want(200)
	signIn(e, "bob", "bob-pw-1").WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/repositories", basic("bob", "bob-pw-1"), nil).WantError(401, "UNAUTHORIZED")
	e.Do("PUT", "/api/v1/users/bob", e.Admin, map[string]any{"disabled": false}).Want(200)
	bearer(signIn(e, "bob", "bob-pw-1"))
}

// TestLDAPSync: the leader's sync of directory users, against a real
// slapd, with an edge in front: a user the directory deleted is disabled
// (its session and API token stop, at the origin and at the edge), a
// group the directory takes a user out of is left without a sign-in, a
// directory that goes down disables no one, and the results are in the
// API and the metrics.
func TestLDAPSync(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{})
	s.AddUser("bob", "bob-pw-1", "bob@example.org")
	s.AddUser("carol", "carol-pw-1", "carol@example.org")
	s.AddGroup("developers", "bob", "carol")
	e := ldapOrigin(t, s, func(c *origin.Config) { c.LDAP.SyncInterval = 200 * time.Millisecond })
	clienttest.ThroughEdge(t, e)
	repo := e.CreateRepo("private", "generic", true)
	e.Do("PUT", "/generic/private/tool/1.0/tool.txt", e.Admin, "bytes").Want(201)

	bob := bearer(signIn(e, "bob", "bob-pw-1"))
	var tok struct{ Token string }
	e.Do("POST", "/api/v1/users/me/tokens", bob, map[string]any{"name": "ci", "scopes": []string{"repository:read"}}).Want(201).JSON(&tok)
	carol := bearer(signIn(e, "carol", "carol-pw-1"))
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": repo, "group_id": "developers",
		"permissions": []string{"write"}}).Want(201)
	e.Do("PUT", "/generic/private/tool/1.1/tool.txt", carol, "carol's").Want(201)
	e.Do("GET", "/generic/private/tool/1.0/tool.txt", basic("bob", tok.Token), nil).Want(200) // at the edge

	s.DeleteUser("bob")
	s.RemoveMember("developers", "carol")
	waitUntil(t, "bob's API token refused at the edge", func() bool {
		return e.Do("GET", "/api/v1/users/me", "Bearer "+tok.Token, nil).Status == 401
	})
	e.Do("GET", "/api/v1/users/me", bob, nil).WantError(401, "UNAUTHORIZED")
	signIn(e, "bob", "bob-pw-1").WantError(401, "UNAUTHORIZED")
	waitUntil(t, "carol out of developers", func() bool {
		return e.Do("PUT", "/generic/private/tool/1.2/tool.txt", carol, "x").Status == 403
	})
	var users struct {
		Users []struct {
			Username string
			Disabled bool
		} `json:"users"`
	}
	e.Do("GET", "/api/v1/users", e.Admin, nil).Want(200).JSON(&users)
	for _, u := range users.Users {
		if u.Disabled != (u.Username == "bob") {
			t.Errorf("user %s disabled = %v", u.Username, u.Disabled)
		}
	}
	var status struct {
		LDAP struct {
			LastSync struct {
				Users, Disabled int
				Error           string
			} `json:"last_sync"`
			LastSuccessfulSync *struct{ Disabled int } `json:"last_successful_sync"`
		} `json:"ldap"`
	}
	e.Do("GET", "/api/v1/admin/directory", e.Admin, nil).Want(200).JSON(&status)
	if st := status.LDAP; st.LastSync.Users != 2 || st.LastSync.Error != "" || st.LastSuccessfulSync == nil {
		t.Errorf("directory status: %+v", st)
	}

	// Down: syncs fail and say so; carol is not disabled.
	s.Stop()
	waitUntil(t, "a sync that failed", func() bool {
		e.Do("GET", "/api/v1/admin/directory", e.Admin, nil).Want(200).JSON(&status)
		return status.LDAP.LastSync.Error != ""
	})
	e.Do("GET", "/api/v1/users/me", carol, nil).Want(200)
	resp, err := http.Get(e.Server.URL + "/metrics") // the origin's (e.URL is the edge)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for _, m := range []string{"depot_ldap_sync_failed 1", "depot_ldap_sync_last_success_timestamp_seconds", "depot_ldap_sync_running"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %q", m)
		}
	}
	// Back, with bob: he signs in again, with a new token to make.
	s.Restart()
	s.AddUser("bob", "bob-pw-2", "bob@example.org")
	bearer(signIn(e, "bob", "bob-pw-2"))
	e.Do("GET", "/api/v1/users/me", "Bearer "+tok.Token, nil).WantError(401, "UNAUTHORIZED")
}

// TestLDAPDisabledInDirectory: an account the directory keeps but has
// disabled is one the user filter leaves out (here a marker attribute;
// Active Directory's userAccountControl bit in the README): the sync
// disables it here, its API token stops at the origin and the edge, and
// its password is refused; marked active again, it signs in again.
func TestLDAPDisabledInDirectory(t *testing.T) {
	s := ldaptest.Start(t, ldaptest.Options{})
	s.AddUser("dave", "dave-pw-1", "dave@example.org")
	s.AddUser("erin", "erin-pw-1", "erin@example.org")
	e := ldapOrigin(t, s, func(c *origin.Config) {
		c.LDAP.SyncInterval = 200 * time.Millisecond
		c.LDAP.UserFilter = "(&(objectClass=inetOrgPerson)(uid={username})(!(employeeType=disabled)))"
	})
	clienttest.ThroughEdge(t, e)

	dave := bearer(signIn(e, "dave", "dave-pw-1"))
	erin := bearer(signIn(e, "erin", "erin-pw-1"))
	var tok struct{ Token string }
	e.Do("POST", "/api/v1/users/me/tokens", dave, map[string]any{"name": "ci", "scopes": []string{"repository:read"}}).Want(201).JSON(&tok)
	e.Do("GET", "/api/v1/users/me", "Bearer "+tok.Token, nil).Want(200) // at the edge

	s.SetAttribute("dave", "employeeType", "disabled")
	waitUntil(t, "dave's API token refused at the edge", func() bool {
		return e.Do("GET", "/api/v1/users/me", "Bearer "+tok.Token, nil).Status == 401
	})
	signIn(e, "dave", "dave-pw-1").WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", erin, nil).Want(200) // active: untouched

	s.SetAttribute("dave", "employeeType")
	bearer(signIn(e, "dave", "dave-pw-1"))
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
