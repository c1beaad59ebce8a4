package oci

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/blob"
)

// Pure parsers of the distribution API: paths, names, references,
// digests, Content-Range and manifests. Nothing here touches storage.

// Limits of what a client may send.
const (
	MaxManifestSize = 4 << 20 // distribution's limit; larger is 413
	MaxNameLength   = 255     // distribution's limit on a repository name
	maxDescriptors  = 10000   // layers or child manifests in one manifest
)

// Kind is what a path below /v2 addresses.
type Kind int

// Path kinds; the zero value matches nothing.
const (
	KindNone      Kind = iota
	KindTags           // <name>/tags/list
	KindManifest       // <name>/manifests/<reference>
	KindBlob           // <name>/blobs/<digest>
	KindUploads        // <name>/blobs/uploads/
	KindSession        // <name>/blobs/uploads/<id>
	KindReferrers      // <name>/referrers/<digest>
)

// Target is a parsed path: the kind, the name (<repo>/<image>[/...]) and
// the trailing reference (tag, digest or upload id), still unvalidated.
type Target struct {
	Kind Kind
	Name string
	Ref  string
}

// ParsePath classifies a path below /v2 by its last API component, as
// names hold slashes (and may even contain a "blobs" segment). It checks
// shape only; ValidName and friends check the parts.
func ParsePath(p string) (Target, bool) {
	s := strings.Split(strings.Trim(p, "/"), "/")
	n := len(s)
	switch {
	case n >= 3 && s[n-2] == "tags" && s[n-1] == "list":
		return Target{KindTags, join(s[:n-2]), ""}, true
	case n >= 3 && s[n-2] == "manifests":
		return Target{KindManifest, join(s[:n-2]), s[n-1]}, true
	case n >= 3 && s[n-2] == "blobs" && s[n-1] == "uploads":
		return Target{KindUploads, join(s[:n-2]), ""}, true
	case n >= 4 && s[n-3] == "blobs" && s[n-2] == "uploads":
		return Target{KindSession, join(s[:n-3]), s[n-1]}, true
	case n >= 3 && s[n-2] == "blobs":
		return Target{KindBlob, join(s[:n-2]), s[n-1]}, true
	case n >= 3 && s[n-2] == "referrers":
		return Target{KindReferrers, join(s[:n-2]), s[n-1]}, true
	}
	return Target{}, false
}

func join(s []string) string { return strings.Join(s, "/") }

var (
	nameComponent = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	tagRE         = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	uploadIDRE    = regexp.MustCompile(`^[0-9a-f]{32}$`)
	// algorithm grammar of the OCI digest, to tell "unknown algorithm"
	// from "not a digest at all".
	digestRE = regexp.MustCompile(`^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
)

// ImageName is a validated repository name split into the Depot repository
// (first component) and the image within it.
type ImageName struct {
	Repo, Image string
}

// String is the full name.
func (n ImageName) String() string { return n.Repo + "/" + n.Image }

// ParseName validates an OCI repository name that has at least two
// components: the Depot repository and the image.
func ParseName(s string) (ImageName, error) {
	if s == "" || len(s) > MaxNameLength {
		return ImageName{}, errf(http.StatusBadRequest, codeNameInvalid, "repository name must be 1 to %d characters", MaxNameLength)
	}
	parts := strings.Split(s, "/")
	if len(parts) < 2 {
		return ImageName{}, errf(http.StatusBadRequest, codeNameInvalid, "name %q must be <repository>/<image>", s)
	}
	for _, p := range parts {
		if !nameComponent.MatchString(p) {
			return ImageName{}, errf(http.StatusBadRequest, codeNameInvalid, "invalid repository name %q", s)
		}
	}
	parts = unalias(parts)
	return ImageName{Repo: parts[0], Image: join(parts[1:])}, nil
}

// Alias starts the path form other registries use, "<host>/docker/<repo>/<image>"
// (the spec's migration example): a name of three or more components whose
// first is "docker" is read as "<repo>/<image>". Its one ambiguity: a
// Depot repository named "docker" is reached only by two-component names
// ("docker/<image>"); "docker/x/y" means image y of repository x.
const Alias = "docker"

func unalias(parts []string) []string {
	if len(parts) >= 3 && parts[0] == Alias {
		return parts[1:]
	}
	return parts
}

// RepoOf is the Depot repository a name addresses (its first component,
// after the alias).
func RepoOf(name string) string {
	return unalias(strings.SplitN(name, "/", 3))[0]
}

// ValidTag reports whether s is a tag.
func ValidTag(s string) bool { return tagRE.MatchString(s) }

// ValidUploadID reports whether s is an upload session id we hand out;
// only these reach the file system.
func ValidUploadID(s string) bool { return uploadIDRE.MatchString(s) }

// ParseDigest validates a digest: sha256 and sha512 are supported; any
// other (well-formed or not) is DIGEST_INVALID.
func ParseDigest(s string) (algo, hex string, err error) {
	algo, hex, err = blob.ParseDigest(s)
	if err == nil {
		return algo, hex, nil
	}
	if digestRE.MatchString(s) {
		a, _, _ := strings.Cut(s, ":")
		if a != "sha256" && a != "sha512" {
			return "", "", errf(http.StatusBadRequest, codeDigestInvalid, "unsupported digest algorithm %q", a)
		}
	}
	return "", "", errf(http.StatusBadRequest, codeDigestInvalid, "invalid digest %q", s)
}

// Reference is a manifest reference: a tag or a digest.
type Reference struct {
	Tag, Digest string
}

// ParseReference validates a manifest reference.
func ParseReference(s string) (Reference, error) {
	if strings.Contains(s, ":") {
		if _, _, err := ParseDigest(s); err != nil {
			return Reference{}, err
		}
		return Reference{Digest: s}, nil
	}
	if !ValidTag(s) {
		return Reference{}, errf(http.StatusBadRequest, codeManifestInvalid, "invalid tag %q", s)
	}
	return Reference{Tag: s}, nil
}

// ParseContentRange parses a chunk's Content-Range, "<start>-<end>"
// inclusive (docker also sends a "bytes " or "bytes=" prefix, and some
// clients a "/<total>" suffix).
func ParseContentRange(s string) (start, end int64, ok bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "bytes")
	s = strings.TrimLeft(s, " =")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start || a[0] == '+' || b[0] == '+' {
		return 0, 0, false
	}
	return start, end, true
}

// Media types this registry stores as manifests.
const (
	MediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// IsIndex reports whether mt lists other manifests.
func IsIndex(mt string) bool { return mt == MediaOCIIndex || mt == MediaDockerList }

func supportedManifest(mt string) bool {
	return mt == MediaOCIManifest || mt == MediaOCIIndex || mt == MediaDockerManifest || mt == MediaDockerList
}

// Descriptor points at content by digest.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	URLs         []string          `json:"urls,omitempty"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Platform     json.RawMessage   `json:"platform,omitempty"`
}

// Manifest is what the registry needs to know of a pushed manifest.
type Manifest struct {
	MediaType    string
	Config       *Descriptor  // image manifests
	Layers       []Descriptor // image manifests
	Manifests    []Descriptor // indexes
	Subject      *Descriptor
	ArtifactType string
	Annotations  map[string]string
}

// Blobs are the descriptors an image manifest needs in the repository.
func (m *Manifest) Blobs() []Descriptor {
	var out []Descriptor
	if m.Config != nil {
		out = append(out, *m.Config)
	}
	for _, l := range m.Layers {
		if !foreign(l) {
			out = append(out, l)
		}
	}
	return out
}

// RefArtifactType is the artifactType a referrers listing shows: the
// manifest's own, or else its config media type (image manifests).
func (m *Manifest) RefArtifactType() string {
	if m.ArtifactType != "" || m.Config == nil {
		return m.ArtifactType
	}
	return m.Config.MediaType
}

// foreign layers live elsewhere (urls) and are never pushed.
func foreign(d Descriptor) bool {
	return d.MediaType == "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" ||
		strings.HasPrefix(d.MediaType, "application/vnd.oci.image.layer.nondistributable.")
}

type rawManifest struct {
	SchemaVersion *int              `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        *Descriptor       `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Manifests     []Descriptor      `json:"manifests"`
	Subject       *Descriptor       `json:"subject"`
	Annotations   map[string]string `json:"annotations"`
}

// ParseManifest checks a pushed manifest: bounded, JSON, schemaVersion 2,
// one of the four supported media types (from contentType, or from the
// body when contentType says nothing), consistent with the body's own
// mediaType, and every descriptor well-formed.
func ParseManifest(contentType string, body []byte) (*Manifest, error) {
	if len(body) > MaxManifestSize {
		return nil, errf(http.StatusRequestEntityTooLarge, codeManifestInvalid, "manifest is larger than %d bytes", MaxManifestSize)
	}
	var raw rawManifest
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "manifest is not valid JSON: %v", err)
	}
	if raw.SchemaVersion == nil || *raw.SchemaVersion != 2 {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "manifest schemaVersion must be 2")
	}
	mt := mediaTypeOf(contentType)
	if !supportedManifest(mt) {
		mt = raw.MediaType
		if mt == "" && raw.Manifests != nil {
			mt = MediaOCIIndex
		} else if mt == "" && raw.Config != nil {
			mt = MediaOCIManifest
		}
	}
	if !supportedManifest(mt) {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "unsupported manifest media type %q", mt)
	}
	if raw.MediaType != "" && raw.MediaType != mt {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "Content-Type %s does not match the manifest's mediaType %s", mt, raw.MediaType)
	}
	m := &Manifest{MediaType: mt, Subject: raw.Subject, ArtifactType: raw.ArtifactType, Annotations: raw.Annotations}
	if IsIndex(mt) {
		if raw.Config != nil || raw.Layers != nil {
			return nil, errf(http.StatusBadRequest, codeManifestInvalid, "an index has no config or layers")
		}
		m.Manifests = raw.Manifests
	} else {
		if raw.Config == nil {
			return nil, errf(http.StatusBadRequest, codeManifestInvalid, "an image manifest needs a config")
		}
		if raw.Manifests != nil {
			return nil, errf(http.StatusBadRequest, codeManifestInvalid, "an image manifest has no manifests list")
		}
		m.Config, m.Layers = raw.Config, raw.Layers
	}
	if len(m.Layers) > maxDescriptors || len(m.Manifests) > maxDescriptors {
		return nil, errf(http.StatusBadRequest, codeManifestInvalid, "manifest lists more than %d descriptors", maxDescriptors)
	}
	all := append(append([]Descriptor{}, m.Layers...), m.Manifests...)
	if m.Config != nil {
		all = append(all, *m.Config)
	}
	if m.Subject != nil {
		all = append(all, *m.Subject)
	}
	for _, d := range all {
		if err := checkDescriptor(d); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func checkDescriptor(d Descriptor) error {
	if _, _, err := ParseDigest(d.Digest); err != nil {
		return errf(http.StatusBadRequest, codeManifestInvalid, "descriptor digest %q is invalid", d.Digest)
	}
	if d.Size < 0 {
		return errf(http.StatusBadRequest, codeManifestInvalid, "descriptor %s has a negative size", d.Digest)
	}
	if d.MediaType == "" {
		return errf(http.StatusBadRequest, codeManifestInvalid, "descriptor %s has no mediaType", d.Digest)
	}
	return nil
}

// mediaTypeOf drops parameters from a Content-Type.
func mediaTypeOf(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// Page cuts a sorted list for n/last pagination: entries after last
// (exclusive), at most n of them (n < 0: all). more says whether entries
// remain after the page.
func Page(sorted []string, n int, last string) (page []string, more bool) {
	i := 0
	if last != "" {
		for i < len(sorted) && sorted[i] <= last {
			i++
		}
	}
	rest := sorted[i:]
	if n < 0 || n >= len(rest) {
		return rest, false
	}
	return rest[:n], true
}
