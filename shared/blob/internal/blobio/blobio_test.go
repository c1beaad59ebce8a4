package blobio

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
)

func sumsOf(s string) blob.Checksums {
	h := NewHasher()
	h.Write([]byte(s))
	return h.Sums()
}

func TestHasherKnownValues(t *testing.T) {
	got := sumsOf("")
	want := blob.Checksums{
		MD5:    "d41d8cd98f00b204e9800998ecf8427e",
		SHA1:   "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		SHA512: "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
	}
	if got != want {
		t.Fatalf("Sums of nothing = %+v", got)
	}
}

// TestHasherResume: a saved state continues exactly where it stopped, and
// a clone does not share the original's state.
func TestHasherResume(t *testing.T) {
	h := NewHasher()
	h.Write([]byte("hello, "))
	saved, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Clone()
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("somebody else"))
	r := NewHasher()
	if err := r.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("world"))
	h.Write([]byte("world"))
	want := sumsOf("hello, world")
	if r.Sums() != want || h.Sums() != want {
		t.Fatalf("resumed %+v, original %+v, want %+v", r.Sums(), h.Sums(), want)
	}
	if c.Sums() != sumsOf("hello, somebody else") {
		t.Fatal("clone hashed the wrong bytes")
	}
}

func TestHasherDamagedState(t *testing.T) {
	h := NewHasher()
	h.Write([]byte("x"))
	saved, _ := h.MarshalBinary()
	flipped := bytes.Clone(saved)
	flipped[2] ^= 0xff // inside md5's magic
	for name, b := range map[string][]byte{
		"empty": nil, "truncated": saved[:len(saved)-1], "trailing": append(bytes.Clone(saved), 0),
		"zeros": make([]byte, len(saved)), "flipped": flipped,
	} {
		r := NewHasher()
		r.Write([]byte("kept"))
		if err := r.UnmarshalBinary(b); err == nil {
			t.Errorf("%s state accepted", name)
		}
		if r.Sums() != sumsOf("kept") {
			t.Errorf("%s state changed the hasher it was refused by", name)
		}
	}
}

func TestCopy(t *testing.T) {
	var buf bytes.Buffer
	if n, err := Copy(t.Context(), &buf, strings.NewReader("12345"), 5); n != 5 || err != nil {
		t.Fatalf("Copy of exactly room = %d, %v", n, err)
	}
	if _, err := Copy(t.Context(), &buf, strings.NewReader("123456"), 5); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Copy past room: err = %v", err)
	}
	if n, err := Copy(t.Context(), &buf, strings.NewReader("123456"), -1); n != 6 || err != nil {
		t.Fatalf("unlimited Copy = %d, %v", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Copy(ctx, &buf, strings.NewReader("x"), -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Copy with a cancelled ctx: err = %v", err)
	}
}

func TestUploadID(t *testing.T) {
	a, b := NewUploadID(), NewUploadID()
	if a == b || !ValidUploadID(a) || !ValidUploadID(b) {
		t.Fatalf("ids %q, %q", a, b)
	}
	for _, bad := range []string{"", a[:31], a + "0", strings.ToUpper(a), "../" + a[3:], a[:31] + "g"} {
		if ValidUploadID(bad) {
			t.Errorf("ValidUploadID(%q) = true", bad)
		}
	}
}
