package peerauth

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseKey(t *testing.T) {
	k := NewKey()
	got, err := ParseKey(k.Encode() + "\n")
	if err != nil || got != k {
		t.Fatalf("round trip: %v", err)
	}
	if NewKey() == k {
		t.Fatal("two new keys are equal")
	}
	for name, s := range map[string]string{
		"not base64": "not base64!",
		"16 bytes":   base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"33 bytes":   base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"url base64": strings.NewReplacer("+", "-", "/", "_").Replace(keyWithURLChars(t).Encode()),
		"all zero":   base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"empty":      "",
	} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("%s: ParseKey accepted %q", name, s)
		}
	}
}

// keyWithURLChars is a key whose standard base64 has '+' or '/', so its
// URL-alphabet spelling is not standard base64.
func keyWithURLChars(t *testing.T) Key {
	for {
		k := NewKey()
		if strings.ContainsAny(k.Encode(), "+/") {
			return k
		}
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	k := NewKey()
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		s := fmt.Sprintf(f, k)
		if strings.Contains(s, k.Encode()) || strings.Contains(s, fmt.Sprintf("%x", k[:])) {
			t.Errorf("%s shows the key: %s", f, s)
		}
	}
}

// handshake runs both ends of a TLS handshake over loopback TCP (whose
// buffers, unlike net.Pipe, let each side send its alert) and returns each
// side's error.
func handshake(t *testing.T, client, server *tls.Config) (cerr, serr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(b, server)
		err := s.HandshakeContext(ctx)
		if err == nil {
			// A TLS 1.3 client finishes before the server has judged its
			// certificate: the first byte the server sends settles it.
			_, err = s.Write([]byte{1})
		}
		b.Close()
		done <- err
	}()
	c := tls.Client(a, client)
	cerr = c.HandshakeContext(ctx)
	if cerr == nil {
		_, cerr = c.Read(make([]byte, 1))
	}
	a.Close()
	return cerr, <-done
}

func config(t *testing.T, k Key) *tls.Config {
	t.Helper()
	c, err := k.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTLSAcceptsOnlyHoldersOfTheKey(t *testing.T) {
	k, other := NewKey(), NewKey()
	if cerr, serr := handshake(t, config(t, k), config(t, k)); cerr != nil || serr != nil {
		t.Fatalf("same key: client %v, server %v", cerr, serr)
	}
	// Both directions of a wrong key: each side refuses the other.
	if cerr, serr := handshake(t, config(t, other), config(t, k)); cerr == nil || serr == nil {
		t.Fatalf("client with another key: client %v, server %v", cerr, serr)
	} else if !errors.Is(cerr, ErrNotAPeer) {
		t.Errorf("client did not refuse the server's identity: %v", cerr)
	}
	// A client that presents no certificate, or one of its own making,
	// does not get past the server.
	anon := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	if _, serr := handshake(t, anon, config(t, k)); serr == nil {
		t.Fatal("server accepted a client without a certificate")
	}
	forged := config(t, other)
	forged.VerifyConnection = nil // trusts any server, presents the wrong identity
	if _, serr := handshake(t, forged, config(t, k)); !errors.Is(serr, ErrNotAPeer) {
		t.Fatalf("server accepted a client with another identity: %v", serr)
	}
	if _, err := (Key{}).TLSConfig(); err == nil {
		t.Fatal("zero key made a TLS config")
	}
}
