// Package blob defines a content-addressed blob store for the artifact
// registry.
//
// Blobs are addressed by their SHA-256 digest in the form "sha256:<hex>".
// On Put every implementation also computes MD5, SHA-1 and SHA-512 in the
// same pass, because repository formats such as Maven and npm publish those
// checksums next to the artifact.
//
// An Ingester holds uploads that arrive in pieces over several requests
// (OCI chunked uploads): it hashes bytes as they arrive and keeps that
// state with the data, so an upload survives a restart and its commit
// moves the data into place without reading it again.
//
// Implementations live in sub-packages (package fs on disk, package mem
// in memory for tests); package blobtest holds the conformance suite they
// must pass.
package blob
