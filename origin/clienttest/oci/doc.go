// Package oci holds the end-to-end tests of the docker/OCI format: a real
// origin driven by go-containerregistry in process and by the crane,
// skopeo and regctl command-line clients, plus HTTP-level tests of the
// error paths, authorization and REST bookkeeping.
package oci
