package npm

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
)

// Limits bound what a publish may carry.
type Limits struct {
	MaxTarball  int64 // decoded tarball bytes
	MaxUnpacked int64 // bytes inside the tarball, summed over entries
	MaxEntries  int   // entries inside the tarball
}

// DefaultLimits are generous for npm packages (the public registry caps
// tarballs lower); a publish streams its tarball to disk (ReadDocument),
// so they bound disk and checking time, not memory.
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
// ReadDocument fills it; the attachment's bytes are in Tarball.
type Document struct {
	ID          string
	Name        string
	Description string
	Readme      string
	DistTags    map[string]string
	Versions    map[string]json.RawMessage
	Attachments map[string]Attachment // by file name, without the data
	Tarball     Tarball               // the decoded data; nil when none came
}

// Attachment is what a publish says about its file besides the data.
type Attachment struct {
	ContentType string `json:"content_type"`
	Length      *int64 `json:"length"`
}

// Tarball is the decoded attachment of a publish, kept wherever its Sink
// put it (a scratch file on the origin) rather than in the document.
type Tarball interface {
	Size() int64
	// Sum is the digest of the bytes by an integrity algorithm name
	// (sha1, sha256, sha384, sha512).
	Sum(algo string) ([]byte, error)
	// Reader reads the bytes from the start.
	Reader() io.Reader
	Close() error
}

// ParseDocument decodes a PUT body already in memory (its attachment
// too). The caller bounds the body.
func ParseDocument(body []byte, name Name) (*Document, error) {
	return ReadDocument(bytes.NewReader(body), name, func(data io.Reader) (Tarball, error) {
		b, err := io.ReadAll(data)
		return memTarball(b), err
	})
}

// Publishing reports whether the document carries a tarball (a publish)
// rather than metadata changes.
func (d *Document) Publishing() bool { return len(d.Attachments) > 0 }

// Close releases the tarball.
func (d *Document) Close() error {
	if d == nil || d.Tarball == nil {
		return nil
	}
	return d.Tarball.Close()
}

// memTarball is a tarball held in memory.
type memTarball []byte

func (b memTarball) Size() int64                     { return int64(len(b)) }
func (b memTarball) Sum(algo string) ([]byte, error) { return sum(algo, b.Reader()) }
func (b memTarball) Reader() io.Reader               { return bytes.NewReader(b) }
func (b memTarball) Close() error                    { return nil }

// newHash returns the hash of an integrity algorithm, nil for one not
// supported.
func newHash(algo string) hash.Hash {
	switch algo {
	case "sha1":
		return sha1.New()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return nil
}

// sum hashes r with an integrity algorithm.
func sum(algo string, r io.Reader) ([]byte, error) {
	h := newHash(algo)
	if h == nil {
		return nil, fmt.Errorf("npm: unsupported hash %q", algo)
	}
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// tarballTooLarge refuses a tarball past lim.MaxTarball.
func tarballTooLarge(max int64) error {
	return format.Errorf(apierr.PayloadTooLarge, "tarball exceeds %d bytes", max)
}

// Publish is a validated new version.
type Publish struct {
	Version    string
	Manifest   json.RawMessage // as npm sent it, without dist.tarball, deprecated and readme
	Deprecated string
	Tags       []string // dist-tags to point at Version
	Readme     string
	Tarball    Tarball // owned by the Document
	SHA1       string  // hex, verified
	SHA512     string  // hex, verified
}

// SetPublisher records the publishing account's email in the manifest
// (npm shows it beside the publisher's name and among the maintainers);
// "" records none.
func (p *Publish) SetPublisher(email string) error {
	if email == "" {
		return nil
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(p.Manifest, &m); err != nil {
		return err
	}
	m["_npmUser"] = mustJSON(map[string]string{"email": email})
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p.Manifest = b
	return nil
}

// Publish validates a publish of name: exactly one version and its
// tarball, whose integrity and shasum match the decoded bytes.
func (d *Document) Publish(name Name, lim Limits) (*Publish, error) {
	if len(d.Versions) != 1 || len(d.Attachments) != 1 {
		return nil, errOneTarball()
	}
	var p Publish
	var raw json.RawMessage
	for v, m := range d.Versions {
		p.Version, raw = v, m
	}
	if _, ok := ParseVersion(p.Version); !ok {
		return nil, format.BadRequest("version %q is not valid semver", p.Version)
	}
	var size int64
	if d.Tarball != nil {
		size = d.Tarball.Size()
	}
	for file, a := range d.Attachments {
		if file != name.String()+"-"+p.Version+".tgz" && file != name.File(p.Version) {
			return nil, format.BadRequest("attachment %q is not the tarball of %s@%s", file, name, p.Version)
		}
		if a.Length != nil && *a.Length != size {
			return nil, format.BadRequest("attachment length %d does not match its %d decoded bytes", *a.Length, size)
		}
	}
	if size == 0 {
		return nil, format.BadRequest("the tarball is empty")
	}
	if size > lim.MaxTarball {
		return nil, tarballTooLarge(lim.MaxTarball)
	}
	p.Tarball = d.Tarball
	m, err := d.manifest(name, p.Version, raw)
	if err != nil {
		return nil, err
	}
	if err := p.verify(m); err != nil {
		return nil, err
	}
	if err := CheckTarball(p.Tarball.Reader(), p.Tarball.Size(), lim); err != nil {
		return nil, err
	}
	p.Readme = d.Readme
	if s, ok := takeString(m, "readme"); ok && p.Readme == "" {
		p.Readme = s
	}
	delete(m, "readmeFilename")
	delete(m, "_npmUser") // who published is the registry's to say (SetPublisher)
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
	sum1, err := p.Tarball.Sum("sha1")
	if err != nil {
		return err
	}
	sum512, err := p.Tarball.Sum("sha512")
	if err != nil {
		return err
	}
	p.SHA1, p.SHA512 = hex.EncodeToString(sum1), hex.EncodeToString(sum512)
	shasum, hasShasum := stringField(dist, "shasum")
	integrity, hasIntegrity := stringField(dist, "integrity")
	if !hasShasum && !hasIntegrity {
		return format.BadRequest("dist must carry integrity or shasum")
	}
	if hasShasum && !strings.EqualFold(shasum, p.SHA1) {
		return format.BadRequest("dist.shasum does not match the tarball")
	}
	if hasIntegrity {
		if err := CheckIntegrity(integrity, p.Tarball.Sum); err != nil {
			return err
		}
	}
	delete(dist, "tarball")
	m["dist"], _ = json.Marshal(dist)
	return nil
}

// CheckIntegrity verifies a Subresource Integrity string ("sha512-<b64>",
// several space-separated hashes allowed) against the digests of the
// data, which sum gives by algorithm: every hash of a known algorithm must
// match, and at least one must be known.
func CheckIntegrity(sri string, sum func(algo string) ([]byte, error)) error {
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
		if newHash(algo) == nil {
			continue
		}
		want, err := base64.StdEncoding.DecodeString(digest)
		if err != nil {
			return format.BadRequest("malformed dist.integrity %q", h)
		}
		got, ok := sums[algo]
		if !ok {
			if got, err = sum(algo); err != nil {
				return err
			}
			sums[algo] = got
		}
		if !bytes.Equal(got, want) {
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
