package npm

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Limits bound what a publish may carry.
type Limits struct {
	MaxTarball  int64 // decoded tarball bytes
	MaxUnpacked int64 // bytes inside the tarball, summed over entries
	MaxEntries  int   // entries inside the tarball
}

// DefaultLimits are generous for npm packages (the public registry caps
// tarballs lower) while keeping a publish, which arrives as one JSON
// document, within memory.
var DefaultLimits = Limits{MaxTarball: 128 << 20, MaxUnpacked: 1 << 30, MaxEntries: 100_000}

// maxMetadata bounds everything in a document besides the tarball
// (readme, manifests, a packument sent back by deprecate or unpublish).
const maxMetadata = 32 << 20

// maxManifest bounds one stored version manifest (it is kept in the
// artifact record and so in every replica's log).
const maxManifest = 1 << 20

// MaxBody is the largest document accepted: the base64 tarball plus
// metadata.
func (l Limits) MaxBody() int64 { return (l.MaxTarball+2)/3*4 + maxMetadata }

// Document is the JSON body of PUT /<name>: a publish (with
// _attachments) or the packument sent back by deprecate and unpublish.
type Document struct {
	ID          string                     `json:"_id"`
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Readme      string                     `json:"readme"`
	DistTags    map[string]string          `json:"dist-tags"`
	Versions    map[string]json.RawMessage `json:"versions"`
	Attachments map[string]Attachment      `json:"_attachments"`
}

// Attachment is one base64 file of a publish; encoding/json decodes the
// base64 straight into Data.
type Attachment struct {
	ContentType string `json:"content_type"`
	Data        []byte `json:"data"`
	Length      *int64 `json:"length"`
}

// ParseDocument decodes a PUT body for package name. The caller bounds
// the body (Limits.MaxBody).
func ParseDocument(body []byte, name Name) (*Document, error) {
	var d Document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, format.BadRequest("invalid package document: %v", jsonMessage(err))
	}
	full := name.String()
	if d.Name != "" && d.Name != full || d.ID != "" && d.ID != full {
		return nil, format.BadRequest("document names %q, the URL %q", firstNonEmpty(d.Name, d.ID), full)
	}
	return &d, nil
}

// Publishing reports whether the document carries a tarball (a publish)
// rather than metadata changes.
func (d *Document) Publishing() bool { return len(d.Attachments) > 0 }

// Publish is a validated new version.
type Publish struct {
	Version    string
	Manifest   json.RawMessage // as npm sent it, without dist.tarball, deprecated and readme
	Deprecated string
	Tags       []string // dist-tags to point at Version
	Readme     string
	Tarball    []byte
	SHA1       string // hex, verified
	SHA512     string // hex, verified
}

// Publish validates a publish of name: exactly one version and its
// tarball, whose integrity and shasum match the decoded bytes.
func (d *Document) Publish(name Name, lim Limits) (*Publish, error) {
	if len(d.Versions) != 1 || len(d.Attachments) != 1 {
		return nil, format.BadRequest("a publish must carry exactly one version and its tarball (provenance is not supported)")
	}
	var p Publish
	var raw json.RawMessage
	for v, m := range d.Versions {
		p.Version, raw = v, m
	}
	if _, ok := ParseVersion(p.Version); !ok {
		return nil, format.BadRequest("version %q is not valid semver", p.Version)
	}
	for file, a := range d.Attachments {
		if file != name.String()+"-"+p.Version+".tgz" && file != name.File(p.Version) {
			return nil, format.BadRequest("attachment %q is not the tarball of %s@%s", file, name, p.Version)
		}
		p.Tarball = a.Data
		if a.Length != nil && *a.Length != int64(len(a.Data)) {
			return nil, format.BadRequest("attachment length %d does not match its %d decoded bytes", *a.Length, len(a.Data))
		}
	}
	if len(p.Tarball) == 0 {
		return nil, format.BadRequest("the tarball is empty")
	}
	if int64(len(p.Tarball)) > lim.MaxTarball {
		return nil, format.Errorf(413, "PAYLOAD_TOO_LARGE", "tarball exceeds %d bytes", lim.MaxTarball)
	}
	m, err := d.manifest(name, p.Version, raw)
	if err != nil {
		return nil, err
	}
	if err := p.verify(m); err != nil {
		return nil, err
	}
	if err := CheckTarball(p.Tarball, lim); err != nil {
		return nil, err
	}
	p.Readme = d.Readme
	if s, ok := takeString(m, "readme"); ok && p.Readme == "" {
		p.Readme = s
	}
	delete(m, "readmeFilename")
	p.Deprecated, _ = takeString(m, "deprecated")
	for tag, v := range d.DistTags {
		if v != p.Version {
			return nil, format.BadRequest("dist-tag %q must point at the published version %s", tag, p.Version)
		}
		if err := CheckTag(tag); err != nil {
			return nil, err
		}
		p.Tags = append(p.Tags, tag)
	}
	if p.Manifest, err = json.Marshal(m); err != nil {
		return nil, format.BadRequest("invalid manifest: %v", err)
	}
	if len(p.Manifest) > maxManifest {
		return nil, format.BadRequest("version manifest exceeds %d bytes", maxManifest)
	}
	return &p, nil
}

// manifest decodes and checks one version manifest.
func (d *Document) manifest(name Name, version string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, format.BadRequest("version %s is not a JSON object", version)
	}
	if s, _ := stringField(m, "name"); s != name.String() {
		return nil, format.BadRequest("manifest name %q does not match %q", s, name)
	}
	if s, _ := stringField(m, "version"); s != version {
		return nil, format.BadRequest("manifest version %q does not match %q", s, version)
	}
	m["_id"], _ = json.Marshal(name.String() + "@" + version)
	return m, nil
}

// verify checks dist.integrity and dist.shasum against the tarball and
// drops dist.tarball (the registry renders its own URL).
func (p *Publish) verify(m map[string]json.RawMessage) error {
	var dist map[string]json.RawMessage
	if err := json.Unmarshal(m["dist"], &dist); err != nil || dist == nil {
		return format.BadRequest("manifest has no dist object")
	}
	sum1 := sha1.Sum(p.Tarball)
	sum512 := sha512.Sum512(p.Tarball)
	p.SHA1, p.SHA512 = hex.EncodeToString(sum1[:]), hex.EncodeToString(sum512[:])
	shasum, hasShasum := stringField(dist, "shasum")
	integrity, hasIntegrity := stringField(dist, "integrity")
	if !hasShasum && !hasIntegrity {
		return format.BadRequest("dist must carry integrity or shasum")
	}
	if hasShasum && !strings.EqualFold(shasum, p.SHA1) {
		return format.BadRequest("dist.shasum does not match the tarball")
	}
	if hasIntegrity {
		if err := CheckIntegrity(integrity, p.Tarball); err != nil {
			return err
		}
	}
	delete(dist, "tarball")
	m["dist"], _ = json.Marshal(dist)
	return nil
}

// CheckIntegrity verifies a Subresource Integrity string ("sha512-<b64>",
// several space-separated hashes allowed): every hash of a known
// algorithm must match data, and at least one must be known.
func CheckIntegrity(sri string, data []byte) error {
	if len(sri) > 4096 {
		return format.BadRequest("dist.integrity is too long")
	}
	known := 0
	sums := map[string][]byte{} // each algorithm hashes the tarball once
	for _, h := range strings.Fields(sri) {
		algo, digest, ok := strings.Cut(h, "-")
		if !ok {
			return format.BadRequest("malformed dist.integrity %q", h)
		}
		digest, _, _ = strings.Cut(digest, "?")
		var hf hash.Hash
		switch algo {
		case "sha1":
			hf = sha1.New()
		case "sha256":
			hf = sha256.New()
		case "sha384":
			hf = sha512.New384()
		case "sha512":
			hf = sha512.New()
		default:
			continue
		}
		want, err := base64.StdEncoding.DecodeString(digest)
		if err != nil {
			return format.BadRequest("malformed dist.integrity %q", h)
		}
		sum, ok := sums[algo]
		if !ok {
			hf.Write(data)
			sum = hf.Sum(nil)
			sums[algo] = sum
		}
		if !bytes.Equal(sum, want) {
			return format.BadRequest("dist.integrity (%s) does not match the tarball", algo)
		}
		known++
	}
	if known == 0 {
		return format.BadRequest("dist.integrity has no supported hash")
	}
	return nil
}

// Update is what a document without attachments may change: the
// deprecation message of each version it lists ("" = not deprecated),
// and, on unpublish, which versions remain.
type Update struct {
	Versions map[string]string
	Latest   string
}

// Update reads the versions and deprecations of a document sent back by
// deprecate or unpublish.
func (d *Document) Update() (*Update, error) {
	if d.Versions == nil {
		return nil, format.BadRequest("document has no versions")
	}
	u := &Update{Versions: map[string]string{}, Latest: d.DistTags["latest"]}
	for v, raw := range d.Versions {
		if _, ok := ParseVersion(v); !ok {
			return nil, format.BadRequest("version %q is not valid semver", v)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return nil, format.BadRequest("version %s is not a JSON object", v)
		}
		u.Versions[v], _ = stringField(m, "deprecated")
	}
	return u, nil
}

// stringField reads a string field; a missing or non-string field is "".
func stringField(m map[string]json.RawMessage, k string) (string, bool) {
	raw, ok := m[k]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// takeString reads and removes a string field.
func takeString(m map[string]json.RawMessage, k string) (string, bool) {
	s, ok := stringField(m, k)
	delete(m, k)
	return s, ok
}

// jsonMessage shortens a decoding error (a base64 error names the offset,
// not the data).
func jsonMessage(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
