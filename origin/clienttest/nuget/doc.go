// Package nuget drives a real origin serving the nuget format with
// Debian's nuget 2.8 (mono) for push and a v2 install, and walks the v3
// API in Go the way the dotnet client does (service index, flat
// container, registration, search), against the origin and through an
// edge.
package nuget
