// Package pypi serves Python packages the way pip and twine expect:
//
//   - /pypi/<repo>/simple/ and /pypi/<repo>/simple/<project>/: the PEP 503
//     HTML and PEP 691 JSON simple index, chosen by Accept, with #sha256=
//     fragments, data-requires-python and PEP 658/714 core metadata;
//   - /pypi/<repo>/files/<project>/<version>/<filename>[.metadata]: the
//     distributions and the METADATA file read out of each wheel;
//   - POST /pypi/<repo>/: the legacy upload API twine speaks
//     (multipart/form-data, :action=file_upload).
//
// Each uploaded file is one artifact at <normalized>/<version>/<filename>,
// package = PEP 503 normalized project name. The index is derived from
// the artifacts alone (no keyspace state), so a file deleted through the
// REST API disappears from the index too.
//
// The parsers (names.go, multipart.go, wheel.go, index.go) are pure and
// bounded; the handlers (routes.go, read.go, write.go) only wire them to
// the shared machinery of package format.
package pypi
