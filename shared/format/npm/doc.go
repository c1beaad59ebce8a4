// Package npm serves npm registries at /npm/<repo>/: packuments (full and
// abbreviated), tarballs, publish, dist-tags, deprecate, unpublish,
// whoami, ping and search, as the npm CLI speaks them.
//
// Each published version is one artifact: path "<name>/-/<file>.tgz"
// (the npm tarball path, so lookups need no index), package = the full
// name (with scope), version = the semver version, Attrs = the version
// manifest npm sent (without dist.tarball, which is rendered from the
// request's base URL). What npm keeps beside the versions lives in the
// repository's format keyspace (see state.go): package-level fields,
// dist-tags and deprecations, each version or tag under its own key so
// that concurrent writes to different versions never overwrite each other.
//
// The parsers (name.go, route.go, stream.go, publish.go, tarball.go) are
// pure and bounded; the handlers (read.go, write.go) only resolve the
// repository, check access and commit one command per write, after the
// tarball is durable. A publish streams: its tarball is decoded from the
// document as it arrives into a scratch file (spill.go), so memory holds
// only the metadata, and nothing shared is held while a client sends.
package npm
