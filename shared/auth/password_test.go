package auth

import (
	"strings"
	"testing"
)

// cheap keeps argon2 fast in tests; production uses DefaultPasswordParams.
var cheap = PasswordParams{Memory: 64, Iterations: 1, Parallelism: 1}

func TestPasswordRoundTrip(t *testing.T) {
	for _, pw := range []string{"correct horse battery", "", "pässwörd✓", strings.Repeat("x", 256)} {
		enc, err := HashPasswordWith(cheap, pw)
		if err != nil {
			t.Fatalf("HashPasswordWith(%q): %v", pw, err)
		}
		if !VerifyPassword(enc, pw) {
			t.Errorf("VerifyPassword(%q) = false, want true", pw)
		}
		if VerifyPassword(enc, pw+"x") {
			t.Errorf("VerifyPassword accepted %q+x", pw)
		}
	}
}

func TestHashPasswordDefault(t *testing.T) {
	enc, err := HashPassword("s3cret-password")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("encoding %q does not carry the default params", enc)
	}
	if !VerifyPassword(enc, "s3cret-password") || VerifyPassword(enc, "S3cret-password") {
		t.Error("default-params hash does not verify correctly")
	}
}

func TestHashPasswordFormatAndSalt(t *testing.T) {
	a, _ := HashPasswordWith(cheap, "same")
	b, _ := HashPasswordWith(cheap, "same")
	if a == b {
		t.Fatal("two hashes of the same password are identical; salt is not random")
	}
	parts := strings.Split(a, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" || parts[3] != "m=64,t=1,p=1" {
		t.Fatalf("unexpected layout %q", a)
	}
	// 16-byte salt and 32-byte key in raw (unpadded) std base64.
	if len(parts[4]) != 22 || len(parts[5]) != 43 || strings.Contains(parts[4]+parts[5], "=") {
		t.Errorf("salt/hash lengths %d/%d, want 22/43", len(parts[4]), len(parts[5]))
	}
	p, salt, key, err := decodePHC(a)
	if err != nil || p != cheap || len(salt) != 16 || len(key) != 32 {
		t.Errorf("decodePHC = %+v, %d, %d, %v", p, len(salt), len(key), err)
	}
}

func TestVerifyReadsParamsFromEncoding(t *testing.T) {
	other := PasswordParams{Memory: 128, Iterations: 3, Parallelism: 2}
	enc, err := HashPasswordWith(other, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(enc, "$m=128,t=3,p=2$") {
		t.Fatalf("params not encoded: %q", enc)
	}
	// Verification must use the encoded params, not the defaults.
	if !VerifyPassword(enc, "pw") {
		t.Fatal("hash with non-default params does not verify")
	}
	// Editing the params changes the derived key, so verification must fail.
	for _, edit := range []string{"m=136,t=3,p=2", "m=128,t=2,p=2", "m=128,t=3,p=1"} {
		tampered := strings.Replace(enc, "m=128,t=3,p=2", edit, 1)
		if VerifyPassword(tampered, "pw") {
			t.Errorf("verification ignored params: %s still verifies", edit)
		}
	}
}

func TestHashPasswordWithRejectsBadParams(t *testing.T) {
	for _, p := range []PasswordParams{
		{Memory: 64, Iterations: 0, Parallelism: 1},
		{Memory: 64, Iterations: 1, Parallelism: 0},
		{Memory: 7, Iterations: 1, Parallelism: 1},
		{Memory: 16, Iterations: 1, Parallelism: 4},
		{Memory: argonMaxMemory + 1, Iterations: 1, Parallelism: 1},
		{Memory: 64, Iterations: argonMaxIterations + 1, Parallelism: 1},
	} {
		if _, err := HashPasswordWith(p, "pw"); err == nil {
			t.Errorf("HashPasswordWith(%+v) succeeded, want error", p)
		}
	}
}

func malformedHashes(t testing.TB) []string {
	good, err := HashPasswordWith(cheap, "pw")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	salt, key := parts[4], parts[5]
	with := func(params string) string { return "$argon2id$v=19$" + params + "$" + salt + "$" + key }
	return []string{
		"",
		"$",
		"$$$$$",
		"argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key,
		"$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + key,
		"$argon2d$v=19$m=64,t=1,p=1$" + salt + "$" + key,
		"$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + key,
		"$argon2id$m=64,t=1,p=1$" + salt + "$" + key,
		"$argon2id$v=19$m=64,t=1,p=1$" + salt,
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key + "$",
		with("m=64,t=1"),
		with("m=64,t=1,p=1,x=2"),
		with("t=1,m=64,p=1"),
		with("m=,t=1,p=1"),
		with("m=abc,t=1,p=1"),
		with("m=-64,t=1,p=1"),
		with("m=+64,t=1,p=1"),
		with("m= 64,t=1,p=1"),
		with("m=64,t=0,p=1"),
		with("m=64,t=1,p=0"),
		with("m=0,t=1,p=1"),
		with("m=64,t=1,p=256"),
		with("m=99999999999,t=1,p=1"),
		with("m=4294967295,t=1,p=1"),
		with("m=64,t=4294967295,p=1"),
		with("m=64,t=1,p=255"),
		"$argon2id$v=19$m=64,t=1,p=1$$" + key,
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$",
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + key,
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key + "=",
		"$argon2id$v=19$m=64,t=1,p=1$!!!!$" + key,
		"$argon2id$v=19$m=64,t=1,p=1$AAAA$" + key,               // 3-byte salt
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$AAAAAAAAAAAA", // 9-byte key
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + strings.Repeat("A", 200),
		" " + good,
		good + "\n",
		strings.Replace(good, "$"+key, "$"+key[:10]+"\r\n"+key[10:], 1), // decoder would skip CR/LF
		"$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key[:42] + "B",    // non-zero trailing bits
	}
}

func TestVerifyPasswordMalformed(t *testing.T) {
	for _, enc := range malformedHashes(t) {
		if VerifyPassword(enc, "pw") {
			t.Errorf("VerifyPassword(%q) = true for malformed encoding", enc)
		}
		if _, _, _, err := decodePHC(enc); err == nil {
			t.Errorf("decodePHC(%q) accepted malformed encoding", enc)
		}
	}
}

func TestValidatePasswordPolicy(t *testing.T) {
	cases := []struct {
		pw string
		ok bool
	}{
		{"", false},
		{"1234567", false},
		{"12345678", true},
		{"ääääääää", true}, // 8 characters, 16 bytes
		{"äääääää", false}, // 7 characters, 14 bytes
		{strings.Repeat("a", 256), true},
		{strings.Repeat("a", 257), false},
		{strings.Repeat("ä", 129), false}, // 258 bytes
		{"abcdefg\xff", false},            // not UTF-8
	}
	for _, c := range cases {
		err := ValidatePasswordPolicy(c.pw)
		if (err == nil) != c.ok {
			t.Errorf("ValidatePasswordPolicy(%q) = %v, want ok=%v", c.pw, err, c.ok)
		}
		if err != nil && err.Error() == "" {
			t.Errorf("empty error message for %q", c.pw)
		}
	}
}

// FuzzVerifyPassword checks that arbitrary encodings never panic. Inputs that
// parse with expensive (but legal) parameters are only decoded, not hashed,
// so the fuzzer does not spend its time inside argon2.
func FuzzVerifyPassword(f *testing.F) {
	good, err := HashPasswordWith(cheap, "pw")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "pw")
	f.Add(good, "wrong")
	for _, enc := range malformedHashes(f) {
		f.Add(enc, "pw")
	}
	f.Fuzz(func(t *testing.T, enc, pw string) {
		p, _, _, err := decodePHC(enc)
		if err == nil && uint64(p.Memory)*uint64(p.Iterations) > 4096 {
			return
		}
		ok := VerifyPassword(enc, pw)
		if ok && err != nil {
			t.Fatalf("VerifyPassword accepted an encoding decodePHC rejects: %q", enc)
		}
	})
}
