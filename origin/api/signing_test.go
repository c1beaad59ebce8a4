package api_test

import (
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/origintest"
)

// TestSigningKeysAndSignatures: keys are made by administrators only,
// with a key-encryption key configured (else 503 naming the variable);
// their public parts are anyone's to read and no answer carries a
// private key; a writer signs (a reader may not), anyone who may read
// the artifact verifies; a retired key signs no more and its signatures
// still verify; a deleted key's signatures no longer do; an artifact
// uploaded again at its path starts unsigned.
func TestSigningKeysAndSignatures(t *testing.T) {
	t.Parallel()
	off := origintest.Start(t, origintest.Options{})
	off.Do("POST", "/api/v1/signing/keys", off.Admin, map[string]string{"name": "release"}).WantError(503, "UNAVAILABLE")
	if r := off.Do("POST", "/api/v1/signing/keys", off.Admin, map[string]string{"name": "release"}); !strings.Contains(string(r.Body), "DEPOT_SIGNING_KEK") {
		t.Fatalf("the refusal does not say what to set: %s", r.Body)
	}

	e := origintest.Start(t, origintest.Options{Config: func(c *origin.Config) { c.SigningKEK = strings.Repeat("ab", 32) }})
	repoID := e.CreateRepo("files", "generic", false)
	writer, reader := newUser(e, "writer", "user"), newUser(e, "reader", "user")
	e.Grant(repoID, writer.id, false, "write")
	e.Grant(repoID, reader.id, false, "read")

	e.Do("POST", "/api/v1/signing/keys", writer.token, map[string]string{"name": "mine"}).WantError(403, "FORBIDDEN")
	for _, bad := range []map[string]string{{"name": ""}, {"name": "x", "algorithm": "dsa"}, {"name": "../x"}, {"name": "x", "algorithm": "openpgp", "email": "nope"}} {
		field := "name"
		if bad["algorithm"] == "dsa" {
			field = "algorithm"
		} else if bad["email"] != "" {
			field = "email"
		}
		e.Do("POST", "/api/v1/signing/keys", e.Admin, bad).WantError(400, "VALIDATION_FAILED").WantField(field)
	}
	var k struct {
		ID, Name, Algorithm, Fingerprint, Status string
		PublicKey                                string `json:"public_key"`
	}
	r := e.Do("POST", "/api/v1/signing/keys", e.Admin, map[string]string{"name": "release"}).Want(201)
	r.JSON(&k)
	if k.Algorithm != "ed25519" || k.Status != "active" || len(k.Fingerprint) != 64 || !strings.Contains(k.PublicKey, "PUBLIC KEY") {
		t.Fatalf("the key: %+v", k)
	}
	e.Do("POST", "/api/v1/signing/keys", e.Admin, map[string]string{"name": "Release"}).WantError(409, "CONFLICT")
	list := e.Do("GET", "/api/v1/signing/keys", "", nil).Want(200)
	if b := string(list.Body); !strings.Contains(b, k.ID) || strings.Contains(b, "PRIVATE") || strings.Contains(b, "sealed") || strings.Contains(string(r.Body), "PRIVATE") {
		t.Fatalf("the key list: %s", b)
	}

	a := put(e, writer.token, "files/tool/1.0/tool.bin", "signed bytes")
	e.Do("POST", "/api/v1/signing/sign", reader.token, map[string]string{"artifact_id": a.ID, "key_id": k.ID}).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/signing/sign", writer.token, map[string]string{"artifact_id": a.ID}).WantError(400, "VALIDATION_FAILED").WantField("key_id")
	e.Do("POST", "/api/v1/signing/sign", writer.token, map[string]string{"artifact_id": a.ID, "key_id": "nope"}).WantError(404, "NOT_FOUND")
	var sig struct {
		KeyID                     string `json:"key_id"`
		Signer, Digest, Signature string
	}
	e.Do("POST", "/api/v1/signing/sign", writer.token, map[string]string{"artifact_id": a.ID, "key_id": k.ID}).Want(201).JSON(&sig)
	if sig.KeyID != k.ID || sig.Signer != "writer" || sig.Digest != a.Checksums.SHA256 || sig.Signature == "" {
		t.Fatalf("the signature: %+v", sig)
	}
	type verification struct {
		Verified   bool
		KeyID      string `json:"key_id"`
		Signer     string
		Signatures []struct {
			Valid     bool
			KeyStatus string `json:"key_status"`
			Reason    string
		}
	}
	verify := func(id string) verification {
		var v verification
		e.Do("GET", "/api/v1/signing/verify/"+id, reader.token, nil).Want(200).JSON(&v)
		return v
	}
	if v := verify(a.ID); !v.Verified || v.KeyID != k.ID || v.Signer != "writer" || len(v.Signatures) != 1 {
		t.Fatalf("verify: %+v", v)
	}
	e.Do("GET", "/api/v1/signing/verify/"+a.ID, "", nil).WantError(401, "UNAUTHORIZED")

	e.Do("POST", "/api/v1/signing/keys/"+k.ID+"/retire", writer.token, nil).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/signing/keys/"+k.ID+"/retire", e.Admin, nil).Want(200)
	e.Do("POST", "/api/v1/signing/sign", writer.token, map[string]string{"artifact_id": a.ID, "key_id": k.ID}).WantError(409, "CONFLICT")
	if v := verify(a.ID); !v.Verified || v.Signatures[0].KeyStatus != "retired" {
		t.Fatalf("verify with the key retired: %+v", v)
	}
	e.Do("DELETE", "/api/v1/signing/keys/"+k.ID, e.Admin, nil).Want(204)
	if v := verify(a.ID); v.Verified || v.Signatures[0].Valid || !strings.Contains(v.Signatures[0].Reason, "deleted") {
		t.Fatalf("verify with the key deleted: %+v", v)
	}

	// Uploaded again at its path, the file is a new artifact, unsigned.
	var k2 struct{ ID string }
	e.Do("POST", "/api/v1/signing/keys", e.Admin, map[string]string{"name": "next", "algorithm": "ecdsa-p256"}).Want(201).JSON(&k2)
	b := put(e, writer.token, "files/tool/2.0/tool.bin", "first bytes")
	e.Do("POST", "/api/v1/signing/sign", writer.token, map[string]string{"artifact_id": b.ID, "key_id": k2.ID}).Want(201)
	e.Do("DELETE", "/api/v1/artifacts/"+b.ID, e.Admin, nil).Want(204)
	c := put(e, writer.token, "files/tool/2.0/tool.bin", "other bytes")
	if v := verify(c.ID); v.Verified || len(v.Signatures) != 0 {
		t.Fatalf("the file uploaded again: %+v", v)
	}
}
