// Package composer drives a real origin serving the composer format with
// the real composer (Debian's, PHP 8.2): package zips uploaded, then
// required in a fresh project with http-basic credentials and run,
// against the origin and through an edge.
package composer
