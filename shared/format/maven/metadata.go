package maven

import (
	"bytes"
	"encoding/xml"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
)

// MaxMetadata bounds a maven-metadata.xml a client uploads; real ones are
// a few KiB even with hundreds of versions.
const MaxMetadata = 1 << 20

// Metadata is maven-metadata.xml, at the artifact level (versions) or at
// the SNAPSHOT-version level (snapshot, snapshotVersions). Field order is
// the order Maven writes.
type Metadata struct {
	XMLName      xml.Name    `xml:"metadata"`
	ModelVersion string      `xml:"modelVersion,attr,omitempty"`
	GroupID      string      `xml:"groupId"`
	ArtifactID   string      `xml:"artifactId"`
	Version      string      `xml:"version,omitempty"`
	Versioning   *Versioning `xml:"versioning"`
}

// Versioning is the <versioning> element.
type Versioning struct {
	Latest      string    `xml:"latest,omitempty"`
	Release     string    `xml:"release,omitempty"`
	Snapshot    *Snapshot `xml:"snapshot"`
	Versions    *Versions `xml:"versions"`
	LastUpdated string    `xml:"lastUpdated,omitempty"`
	// Pointers: encoding/xml writes an empty "a>b" parent for a nil
	// slice, and each level of document has only its own lists.
	SnapshotVersions *SnapshotVersions `xml:"snapshotVersions"`
}

// Versions is the <versions> element.
type Versions struct {
	List []string `xml:"version"`
}

// SnapshotVersions is the <snapshotVersions> element.
type SnapshotVersions struct {
	List []SnapshotVersion `xml:"snapshotVersion"`
}

// Snapshot names the newest build of a SNAPSHOT version.
type Snapshot struct {
	Timestamp   string `xml:"timestamp"`
	BuildNumber int    `xml:"buildNumber"`
}

// SnapshotVersion maps one classifier and extension to the file version
// that resolves it.
type SnapshotVersion struct {
	Classifier string `xml:"classifier,omitempty"`
	Extension  string `xml:"extension"`
	Value      string `xml:"value"`
	Updated    string `xml:"updated"`
}

// File is what metadata generation needs of one stored file.
type File struct {
	Version     string // the version directory
	Classifier  string
	Extension   string
	Timestamp   string // unique snapshot files only
	BuildNumber int
	Updated     time.Time
}

// FileOf describes the file at c, stored at updated.
func FileOf(c Coords, updated time.Time) File {
	return File{Version: c.Version, Classifier: c.Classifier, Extension: c.Extension,
		Timestamp: c.Timestamp, BuildNumber: c.BuildNumber, Updated: updated}
}

// stamp is Maven's lastUpdated/updated format, always UTC.
func stamp(t time.Time) string { return t.UTC().Format("20060102150405") }

// ArtifactMetadata generates the artifact-level document from the stored
// files of groupID:artifactID: every version that has a file, in version
// order; latest is the highest, release the highest non-SNAPSHOT.
func ArtifactMetadata(groupID, artifactID string, files []File) Metadata {
	seen := map[string]bool{}
	var versions []string
	var last time.Time
	for _, f := range files {
		if !seen[f.Version] {
			seen[f.Version] = true
			versions = append(versions, f.Version)
		}
		if f.Updated.After(last) {
			last = f.Updated
		}
	}
	SortVersions(versions)
	v := &Versioning{Versions: &Versions{List: versions}, LastUpdated: stamp(last)}
	if len(versions) > 0 {
		v.Latest = versions[len(versions)-1]
	}
	for i := len(versions) - 1; i >= 0; i-- {
		if !IsSnapshot(versions[i]) {
			v.Release = versions[i]
			break
		}
	}
	return Metadata{GroupID: groupID, ArtifactID: artifactID, Versioning: v}
}

// SnapshotMetadata generates the document of a SNAPSHOT version from its
// stored files: <snapshot> names the newest timestamp and build number, so
// the next deploy numbers its build one higher, and each classifier and
// extension resolves to its newest file.
func SnapshotMetadata(groupID, artifactID, version string, files []File) Metadata {
	type key struct{ classifier, extension string }
	newest := map[key]File{}
	var snap *Snapshot
	var last time.Time
	for _, f := range files {
		if f.Updated.After(last) {
			last = f.Updated
		}
		if f.Timestamp != "" && (snap == nil || newerBuild(f.Timestamp, f.BuildNumber, snap.Timestamp, snap.BuildNumber)) {
			snap = &Snapshot{Timestamp: f.Timestamp, BuildNumber: f.BuildNumber}
		}
		k := key{f.Classifier, f.Extension}
		if old, ok := newest[k]; !ok || newerFile(f, old) {
			newest[k] = f
		}
	}
	keys := make([]key, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].extension != keys[j].extension {
			return keys[i].extension < keys[j].extension
		}
		return keys[i].classifier < keys[j].classifier
	})
	v := &Versioning{Snapshot: snap, LastUpdated: stamp(last), SnapshotVersions: &SnapshotVersions{}}
	base := strings.TrimSuffix(version, snapshotSuffix)
	for _, k := range keys {
		f := newest[k]
		value := version
		if f.Timestamp != "" {
			value = base + "-" + f.Timestamp + "-" + strconv.Itoa(f.BuildNumber)
		}
		v.SnapshotVersions.List = append(v.SnapshotVersions.List, SnapshotVersion{Classifier: k.classifier, Extension: k.extension,
			Value: value, Updated: stamp(f.Updated)})
	}
	return Metadata{ModelVersion: "1.1.0", GroupID: groupID, ArtifactID: artifactID, Version: version, Versioning: v}
}

// newerBuild orders unique snapshot builds by timestamp, then number.
func newerBuild(ts string, n int, ots string, on int) bool {
	if ts != ots {
		return ts > ots // yyyyMMdd.HHmmss sorts as text
	}
	return n > on
}

// newerFile prefers unique (timestamped) files over a non-unique one, then
// the newer build, then the later upload.
func newerFile(f, old File) bool {
	switch {
	case (f.Timestamp != "") != (old.Timestamp != ""):
		return f.Timestamp != ""
	case f.Timestamp != "" && (f.Timestamp != old.Timestamp || f.BuildNumber != old.BuildNumber):
		return newerBuild(f.Timestamp, f.BuildNumber, old.Timestamp, old.BuildNumber)
	}
	return f.Updated.After(old.Updated)
}

// Encode renders m as the document served (XML header, indented).
func Encode(m Metadata) []byte {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	// Metadata holds only strings and ints: encoding cannot fail.
	if err := enc.Encode(m); err != nil {
		panic("maven: encode metadata: " + err.Error())
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// ParseMetadata decodes a client's maven-metadata.xml (bounded), which must
// be a <metadata> document.
func ParseMetadata(data []byte) (Metadata, error) {
	var m Metadata
	if len(data) > MaxMetadata {
		return m, format.BadRequest("maven-metadata.xml is larger than %d bytes", MaxMetadata)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	// encoding/xml expands no DTD entities, so a small document stays small.
	if err := dec.Decode(&m); err != nil {
		return Metadata{}, format.BadRequest("malformed maven-metadata.xml: %v", err)
	}
	// Nothing but whitespace, comments or processing instructions may follow.
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Metadata{}, format.BadRequest("malformed maven-metadata.xml: %v", err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
		case xml.Comment, xml.ProcInst:
			continue
		}
		return Metadata{}, format.BadRequest("malformed maven-metadata.xml: content after </metadata>")
	}
	return m, nil
}
