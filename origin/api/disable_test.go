package api_test

import (
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestDisableUser: an administrator disables a user (by name or id): the
// user's session and API token stop at once and the password is refused;
// enabled again, the password works and the old token stays revoked. No
// one disables themselves, and the last administrator is not disabled.
func TestDisableUser(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	bob := newUser(e, "bob", "user")
	tok := e.Token("Bearer "+bob.token, []string{"repository:read"}, nil)
	e.Do("GET", "/api/v1/users/me", tok, nil).Want(200)

	var got struct {
		Disabled   bool   `json:"disabled"`
		DisabledBy string `json:"disabled_by"`
	}
	e.Do("PUT", "/api/v1/users/bob", e.Admin, map[string]any{"disabled": true}).Want(200).JSON(&got)
	if !got.Disabled || got.DisabledBy != "admin" {
		t.Fatalf("the answer does not say disabled by an administrator: %+v", got)
	}
	e.Do("GET", "/api/v1/users/me", "Bearer "+bob.token, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", tok, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", basic("bob", userPW), nil).WantError(401, "UNAUTHORIZED")
	e.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": "bob", "password": userPW}).WantError(401, "UNAUTHORIZED")

	e.Do("PUT", "/api/v1/users/"+bob.id, e.Admin, map[string]any{"disabled": false}).Want(200)
	e.Do("GET", "/api/v1/users/me", basic("bob", userPW), nil).Want(200)
	e.Do("GET", "/api/v1/users/me", tok, nil).WantError(401, "UNAUTHORIZED")

	e.Do("PUT", "/api/v1/users/admin", e.Admin, map[string]any{"disabled": true}).WantError(409, "CONFLICT")
	other := newUser(e, "root2", "admin")
	e.Do("PUT", "/api/v1/users/bob", "Bearer "+bob.token, map[string]any{"disabled": true}).WantError(401, "UNAUTHORIZED")
	e.Do("PUT", "/api/v1/users/admin", "Bearer "+other.token, map[string]any{"disabled": true}).Want(200)
	e.Do("PUT", "/api/v1/users/root2", "Bearer "+other.token, map[string]any{"disabled": true}).WantError(409, "CONFLICT")
	e.Do("PUT", "/api/v1/users/bob", "Bearer "+other.token, map[string]any{}).WantError(400, "VALIDATION_FAILED")
}
