package peerauth

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"time"
)

// identityLabel separates the TLS identity from anything else derived
// from the cluster key later (a memberlist keyring, say).
const identityLabel = "depot cluster peer identity: ed25519 v1"

// ErrNotAPeer is the handshake error for a peer that does not hold the
// cluster key.
var ErrNotAPeer = errors.New("peerauth: peer does not hold the cluster key")

// TLSConfig is a TLS 1.3 configuration for both ends of a connection
// between peers: each presents the certificate derived from k and accepts
// only a peer whose certificate carries the same public key. TLS checks
// that the peer signed the handshake with the matching private key, which
// only a holder of k can derive.
func (k Key) TLSConfig() (*tls.Config, error) {
	if k.IsZero() {
		return nil, errors.New("peerauth: no cluster key")
	}
	seed, err := hkdf.Key(sha256.New, k[:], nil, identityLabel, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	// The certificate only carries the public key: nobody checks its
	// names, dates or chain, so they are fixed (and the DER deterministic).
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "depot cluster peer"},
		NotBefore:    time.Unix(0, 0).UTC(),
		NotAfter:     time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}},
		// Server side: demand the peer's certificate; VerifyConnection
		// judges it instead of a chain.
		ClientAuth: tls.RequireAnyClientCert,
		// Client side: there is no chain or name to verify, only the key,
		// which VerifyConnection checks (it runs despite this setting).
		InsecureSkipVerify: true, //nolint:gosec // see VerifyConnection
		// No resumption: every connection proves the key afresh.
		SessionTicketsDisabled: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !pub.Equal(cs.PeerCertificates[0].PublicKey) {
				return ErrNotAPeer
			}
			return nil
		},
	}, nil
}
