// Package abi is the JSON of the plugin host interface, version 1
// ("depot-plugin/1"), shared by the host (package plugin) and by plugins
// written in Go (package plugin/sdk). It imports nothing a WebAssembly
// module could not.
//
// The host calls a module's depot_handle with a Call and reads back:
//
//   - for Call "manifest", a Manifest: what the plugin serves;
//   - for Call "handle", a Response to a request on one of its routes.
//
// A Response renders a document (Body), serves a file of the request's
// repository (File), or, on a write route, publishes a version (Publish:
// the host records it through the same command path as the built-in
// formats, the uploaded body being the file it names as "upload").
package abi

import "encoding/json"

// Version is the interface version.
const Version = 1

// Calls.
const (
	CallManifest = "manifest"
	CallHandle   = "handle"
)

// Actions a route declares on the repository it names (parameter "repo").
const (
	ActionRead   = "read"
	ActionWrite  = "write"
	ActionDelete = "delete"
)

// Manifest is what a plugin serves.
type Manifest struct {
	// ID names the plugin (lowercase letters, digits and dashes); Name
	// and Version describe it.
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Format is the repository format it serves; Prefix its URL prefix
	// ("/terraform"), under which Routes' paths are.
	Format string  `json:"format"`
	Prefix string  `json:"prefix"`
	Routes []Route `json:"routes"`
	// Roots are documents served at fixed paths outside the prefix, read
	// by anyone (service discovery under /.well-known/).
	Roots []string `json:"roots,omitempty"`
	// Setup is how a client is pointed at a repository, shown on its
	// page in the web UI: {base} (the registry's URL), {host}, {repo}
	// and {user} are filled in.
	Setup []Snippet `json:"setup,omitempty"`
}

// Snippet is a piece of client setup to copy: a file's content or
// commands.
type Snippet struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Route is one path the plugin serves, relative to its prefix: segments
// are literals, "{name}" (one segment) or, last, "{name...}" (the rest).
// A route that names a repository names it "{repo}" and declares the
// Action it needs there; the host checks it before the call. A Write
// route changes the repository; the host stores its body (at most the
// registry's upload bound) before the call and hands the plugin its
// digest and size.
//
// A read route whose answer names URLs a client fetches without sending
// its credentials (Terraform's provider packages, checksums and
// signatures; a module's archive) declares Presign: its calls carry
// Presigned, a query that lets whoever holds the URL read the
// repository's files, for a few minutes, as the caller.
type Route struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Action  string `json:"action,omitempty"`
	Write   bool   `json:"write,omitempty"`
	Presign bool   `json:"presign,omitempty"`
}

// Call is what the host hands the module.
type Call struct {
	Call string `json:"call"`
	// Route is the index of the route matched (in Manifest.Routes), or
	// -1 - i for Roots[i].
	Route   int                 `json:"route"`
	Method  string              `json:"method,omitempty"`
	Path    string              `json:"path,omitempty"` // below the prefix
	Params  map[string]string   `json:"params,omitempty"`
	Query   map[string][]string `json:"query,omitempty"`
	Headers map[string]string   `json:"headers,omitempty"` // Accept, Content-Type, User-Agent
	// BaseURL is scheme://host[:port] as the client addressed the
	// registry, Prefix the prefix it used: an absolute URL of the plugin's
	// is BaseURL + Prefix + path.
	BaseURL string      `json:"base_url,omitempty"`
	Prefix  string      `json:"prefix,omitempty"`
	User    string      `json:"user,omitempty"`
	Repo    *Repository `json:"repo,omitempty"`
	// Upload is the stored body of a write route's request.
	Upload *Upload `json:"upload,omitempty"`
	// Presigned, on a route that declares Presign, is a query
	// ("depot_token=...") to append to the URLs of the repository's files
	// the answer names: it grants reading them, as the caller, for
	// PresignTTL ("" when the caller's credential cannot buy one: a
	// presigned one).
	Presigned string `json:"presigned,omitempty"`
}

// PresignParam is the query parameter of a presigned URL; PresignTTL how
// long one lasts, in seconds.
const (
	PresignParam = "depot_token"
	PresignTTL   = 600
)

// Repository is the repository a route names.
type Repository struct {
	Name     string            `json:"name"`
	Format   string            `json:"format"`
	Settings map[string]string `json:"settings,omitempty"`
}

// UploadPath names, to the host function read, the upload of the write
// call under way.
const UploadPath = "@upload"

// Upload is a request body the host stored.
type Upload struct {
	Digest string `json:"digest"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Type is the request's Content-Type.
	Type string `json:"type,omitempty"`
}

// Response is the plugin's answer.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	// Body is a document the plugin rendered.
	Body string `json:"body,omitempty"`
	// File serves the file of the repository at that path (with Range,
	// HEAD and conditional requests, counted as a download).
	File string `json:"file,omitempty"`
	// Publish records the upload as a version's file.
	Publish *Publish `json:"publish,omitempty"`
	// Delete removes the file of the repository at that path (a Write
	// route's answer), with what its version keeps beside it.
	Delete string `json:"delete,omitempty"`
	// Error, with a 4xx or 5xx Status, is said to the client in the
	// plugin's error shape ({"errors": [Error]}).
	Error string `json:"error,omitempty"`
}

// Publish records a request's upload as the file at Path of a package's
// version, with the plugin's record of it (Attrs, JSON); Overwrite says
// whether a file at that path is replaced (else the write is a 409).
type Publish struct {
	Path      string          `json:"path"`
	Package   string          `json:"package"`
	Version   string          `json:"version"`
	Type      string          `json:"type,omitempty"`
	Attrs     json.RawMessage `json:"attrs,omitempty"`
	Overwrite bool            `json:"overwrite,omitempty"`
}

// Artifact is a stored file as the host functions artifact and list
// answer it.
type Artifact struct {
	Path      string          `json:"path"`
	Package   string          `json:"package"`
	Version   string          `json:"version"`
	Size      int64           `json:"size"`
	SHA256    string          `json:"sha256"`
	Type      string          `json:"type,omitempty"`
	Uploaded  string          `json:"uploaded_at"`
	Attrs     json.RawMessage `json:"attrs,omitempty"`
	Companion bool            `json:"companion,omitempty"`
}
