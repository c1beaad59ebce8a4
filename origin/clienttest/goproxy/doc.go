// Package goproxy drives a real origin serving the go format with the real
// go command, over HTTPS with credentials (the go command sends them only
// over HTTPS): module zips made with golang.org/x/mod/zip are uploaded,
// then listed, downloaded and built against through GOPROXY, against the
// origin and through an edge.
package goproxy
