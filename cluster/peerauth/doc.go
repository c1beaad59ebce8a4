// Package peerauth is how origin peers prove to each other that they
// belong to the same cluster: a shared 32-byte cluster key, from which
// every peer derives the same ed25519 identity, and a TLS 1.3
// configuration that accepts only a peer presenting that identity.
//
// TLS gives mutual authentication (each side signs the handshake with the
// derived key, so only a holder of the cluster key completes it) and
// confidentiality and integrity for what follows, with no certificate
// authority to run: possession of the key is the only credential.
// Edges never hold the key.
package peerauth
