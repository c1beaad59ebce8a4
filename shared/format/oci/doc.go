// Package oci serves the OCI distribution API (v1.1, docker registry v2)
// at the host root /v2/, for repositories of format "docker". A name is
// <repo>/<image>[/...]: the first component is the Depot repository, the
// rest the image within it.
//
// Files: parse.go holds the pure, bounded parsers (paths, names,
// references, digests, Content-Range, manifests); auth.go the ping and
// the docker token endpoint; blobs.go blob reads and uploads, whose
// sessions (uploads of the blob ingester) are in session.go; manifests.go
// manifests and tags; discovery.go tag lists, the catalog and referrers;
// store.go the keys and records kept in the repository's format keyspace;
// errors.go the native error body and the Bearer challenge.
//
// Writes follow the house rule: bytes are durable in the blob store
// first, then one command records them (a blob link, or a manifest with
// its tag artifact). See store.go for how images map onto artifacts.
package oci
