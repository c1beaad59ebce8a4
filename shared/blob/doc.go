// Package blob defines a content-addressed blob store for the artifact
// registry.
//
// Blobs are addressed by their SHA-256 digest in the form "sha256:<hex>".
// On Put every implementation also computes MD5, SHA-1 and SHA-512 in the
// same pass, because repository formats such as Maven and npm publish those
// checksums next to the artifact. Implementations live in sub-packages (see
// package fs); package blobtest holds the conformance suite they must pass.
package blob
