package oci_test

import (
	"encoding/json"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestRegistryTokenCannotRenewItself: the token realm hands tokens to
// Basic credentials, but a registry token cannot buy its successor (it
// would outlive a logout or password change forever).
func TestRegistryTokenCannotRenewItself(t *testing.T) {
	e := start(t)
	e.CreateRepo("imgs", "docker", false)
	r := e.Do("GET", "/v2/token?service=x&scope=repository:imgs/app:pull", basic("admin", origintest.AdminPassword), nil).Want(200)
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(r.Body, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token answer %s", r.Body)
	}
	e.Do("GET", "/v2/", "Bearer "+tok.Token, nil).Want(200)
	e.Do("GET", "/v2/token?service=x", "Bearer "+tok.Token, nil).Want(401)
	// A login session may still get one.
	e.Do("GET", "/v2/token?service=x", "Bearer "+e.Admin, nil).Want(200)
}
