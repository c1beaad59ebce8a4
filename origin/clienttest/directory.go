package clienttest

import (
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/auth/ldap/ldaptest"
)

// The directory user of StartWithDirectory: a member of the directory
// group "developers", whose Depot group of that name the test grants.
const (
	DirectoryUser     = "dana"
	DirectoryPassword = "dana-directory-pw"
	DirectoryGroup    = "developers"
)

// StartWithDirectory runs a real slapd holding DirectoryUser in
// DirectoryGroup and an origin that checks passwords with it; the Depot
// group DirectoryGroup exists (empty) for the test to grant.
func StartWithDirectory(t *testing.T) *origintest.Env {
	t.Helper()
	s := ldaptest.Start(t, ldaptest.Options{})
	s.AddUser(DirectoryUser, DirectoryPassword, DirectoryUser+"@example.org")
	s.AddGroup(DirectoryGroup, DirectoryUser)
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.LDAP.URL, c.LDAP.BindDN, c.LDAP.BindPassword = s.URL, ldaptest.ServiceDN, ldaptest.ServicePW
		c.LDAP.BaseDN, c.LDAP.GroupBaseDN = ldaptest.People, ldaptest.Groups
	}})
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]string{"name": DirectoryGroup}).Want(201)
	return e
}
