package webui_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestSigningPage: an administrator makes a key on the signing page (a
// bad name refused with the field marked), signs a file from its
// version's page and sees the signature verify there, retires the key
// (no longer offered to sign with; the signature still verifies) and
// deletes it (the signature no longer verifies); a user reads the keys
// but may not make one.
func TestSigningPage(t *testing.T) {
	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.SigningKEK = strings.Repeat("cd", 32) }})
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/tool/1.0/a.bin", e.Admin, "abc").Want(201)
	p := newForm(t, e.URL)
	p.signIn("admin", origintest.AdminPassword)
	if a := p.get("/ui/signing"); a.status != 200 || !strings.Contains(a.body, "No signing key yet") {
		t.Fatalf("the page: %d\n%.2000s", a.status, a.body)
	}
	if a := p.post("/ui/signing", url.Values{"name": {"../bad"}, "algorithm": {"ed25519"}}); a.status != 400 || !strings.Contains(a.body, `aria-invalid="true"`) {
		t.Fatalf("a bad name: %d\n%.2000s", a.status, a.body)
	}
	if a := p.post("/ui/signing", url.Values{"name": {"release"}, "algorithm": {"ecdsa-p256"}}); a.status != 303 {
		t.Fatalf("make a key: %d %s", a.status, a.body)
	}
	page := p.get("/ui/signing")
	if !strings.Contains(page.body, "release") || !strings.Contains(page.body, "ecdsa-p256") || !strings.Contains(page.body, "BEGIN PUBLIC KEY") {
		t.Fatalf("the key is not listed:\n%.3000s", page.body)
	}
	var keys struct{ Keys []struct{ ID string } }
	e.Do("GET", "/api/v1/signing/keys", "", nil).Want(200).JSON(&keys)
	keyID := keys.Keys[0].ID
	version := "/ui/repositories/files/version?name=tool&version=1.0"
	v := p.get(version)
	if !strings.Contains(v.body, `name="key_id"`) || strings.Contains(v.body, "Signatures") {
		t.Fatalf("the version page offers no key to sign with:\n%.3000s", v.body)
	}
	start := strings.Index(v.body, `name="artifact_id" value="`) + len(`name="artifact_id" value="`)
	artID := v.body[start : start+strings.Index(v.body[start:], `"`)]
	if a := p.post("/ui/signing/sign", url.Values{"artifact_id": {artID}, "key_id": {keyID}, "back": {version}}); a.status != 303 || a.location != version {
		t.Fatalf("sign: %d %s", a.status, a.location)
	}
	if v := p.get(version); !strings.Contains(v.body, "✔ verifies") || !strings.Contains(v.body, "signed by admin") {
		t.Fatalf("the signature is not shown:\n%.3000s", v.body)
	}
	// A policy requiring a signature by the key, made on the policy form.
	if a := p.get("/ui/security/policies/new"); !strings.Contains(a.body, `name="require_signature"`) || !strings.Contains(a.body, `value="`+keyID+`"`) {
		t.Fatalf("the policy form offers no signature rule:\n%.3000s", a.body)
	}
	if a := p.post("/ui/security/policies/new", url.Values{"name": {"signed"}, "enabled": {"on"}, "severity_threshold": {"high"},
		"require_signature": {"on"}, "signing_keys": {keyID}}); a.status != 303 {
		t.Fatalf("saving the policy: %d\n%.2000s", a.status, a.body)
	}
	var pols struct {
		Policies []struct {
			Rules struct {
				RequireSignature bool     `json:"require_signature"`
				SigningKeys      []string `json:"signing_keys"`
			}
		}
	}
	e.Do("GET", "/api/v1/security/policies", e.Admin, nil).Want(200).JSON(&pols)
	if len(pols.Policies) != 1 || !pols.Policies[0].Rules.RequireSignature || len(pols.Policies[0].Rules.SigningKeys) != 1 {
		t.Fatalf("the policy: %+v", pols)
	}
	p.post("/ui/signing/"+keyID+"/retire", nil)
	if v := p.get(version); !strings.Contains(v.body, "✔ verifies") || !strings.Contains(v.body, "retired") || strings.Contains(v.body, `name="key_id"`) {
		t.Fatalf("with the key retired:\n%.3000s", v.body)
	}
	p.post("/ui/signing/"+keyID+"/delete", nil)
	if v := p.get(version); !strings.Contains(v.body, "✘ does not verify") {
		t.Fatalf("with the key deleted:\n%.3000s", v.body)
	}

	e.Do("POST", "/api/v1/users", e.Admin, map[string]string{"username": "uma", "email": "uma@example.com", "password": "uma-password-1", "role": "user"}).Want(201)
	u := newForm(t, e.URL)
	u.signIn("uma", "uma-password-1")
	if a := u.get("/ui/signing"); a.status != 200 || strings.Contains(a.body, "Make a key") {
		t.Errorf("a user's signing page: %d", a.status)
	}
	if a := u.post("/ui/signing", url.Values{"name": {"mine"}}); a.status != 403 {
		t.Errorf("a user making a key: %d", a.status)
	}
}
