// Package version holds the one version of the depot binary, origin and
// edge alike, set at build time:
//
//	go build -ldflags '-X github.com/depot-registry/depot/shared/version.Version=v1.2.3' ./cmd/depot
package version

// Version is the build's version ("dev" for a plain go build).
var Version = "dev"
