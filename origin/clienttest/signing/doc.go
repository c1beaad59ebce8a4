// Package signing tests artifact signatures with the verifiers people
// use: openssl for ed25519, ECDSA and RSA signatures of an artifact's
// digest, gpg for the .asc files served beside signed Maven artifacts.
package signing
