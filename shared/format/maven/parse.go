package maven

import (
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// MaxPath bounds a request path below the prefix; real Maven paths are far
// shorter, and the bound keeps every derived key small.
const MaxPath = 2048

// MetadataFile is the one metadata document a remote repository serves.
const MetadataFile = "maven-metadata.xml"

const snapshotSuffix = "-SNAPSHOT"

// forbidden are the characters Gitea and Windows file systems refuse in a
// Maven path; none appears in a valid coordinate.
const forbidden = `\:"<>|?*`

// Checksum algorithms a sidecar may name, by file suffix.
var checksumAlgs = []string{"md5", "sha1", "sha256", "sha512"}

// Coords are the parts of a Maven repository path.
type Coords struct {
	Repo       string
	GroupID    string // dotted
	ArtifactID string
	// Version is the version directory: "1.0", "1.0-SNAPSHOT"; empty for
	// artifact-level metadata.
	Version string
	// File is the file name without a checksum suffix.
	File string
	// Checksum is the sidecar's algorithm ("md5", "sha1", "sha256",
	// "sha512") when the path names a checksum file, else "".
	Checksum string
	// Metadata is set for maven-metadata.xml (and its sidecars).
	Metadata bool
	// For artifact files: the classifier ("" for the main artifact), the
	// extension ("jar", "pom", "tar.gz", "jar.asc") and, for a unique
	// snapshot file, its timestamp and build number.
	Classifier  string
	Extension   string
	Timestamp   string // yyyyMMdd.HHmmss
	BuildNumber int
}

// Snapshot reports whether the path is under a SNAPSHOT version.
func (c Coords) Snapshot() bool { return IsSnapshot(c.Version) }

// IsSnapshot reports whether v is a SNAPSHOT version.
func IsSnapshot(v string) bool { return strings.HasSuffix(v, snapshotSuffix) }

// Package is the package name artifacts are listed under.
func (c Coords) Package() string { return c.GroupID + ":" + c.ArtifactID }

// ArtifactDir is <group dirs>/<artifactId>, the artifact-level directory.
func (c Coords) ArtifactDir() string {
	return strings.ReplaceAll(c.GroupID, ".", "/") + "/" + c.ArtifactID
}

// Dir is the directory holding the file: the version directory, or the
// artifact directory for artifact-level metadata.
func (c Coords) Dir() string {
	if c.Version == "" {
		return c.ArtifactDir()
	}
	return c.ArtifactDir() + "/" + c.Version
}

// Path is the file's path within the repository (the artifact path).
func (c Coords) Path() string { return c.Dir() + "/" + c.File }

// FileVersion is the version a file name carries: the timestamped
// "1.0-20261121.235031-2" for a unique snapshot file, else Version.
func (c Coords) FileVersion() string {
	if c.Timestamp == "" {
		return c.Version
	}
	return strings.TrimSuffix(c.Version, snapshotSuffix) + "-" + c.Timestamp + "-" + strconv.Itoa(c.BuildNumber)
}

// ParsePath parses "<repo>/<group dirs>/<artifactId>/<version>/<file>" or
// a maven-metadata.xml path (leading slash optional). Following Gitea's
// rule, the parent of maven-metadata.xml is a version only when it ends in
// -SNAPSHOT, else it is the artifactId. Files must follow the Maven naming
// <artifactId>-<version>[-<classifier>].<extension>, so the package and
// version recorded for a file are the ones a client resolves it by.
func ParsePath(p string) (Coords, error) {
	p = strings.TrimPrefix(p, "/")
	if len(p) > MaxPath {
		return Coords{}, format.BadRequest("path is longer than %d bytes", MaxPath)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if err := checkSegment(s); err != nil {
			return Coords{}, err
		}
	}
	if len(segs) < 4 {
		return Coords{}, format.BadRequest("path must be <repository>/<group as dirs>/<artifactId>/<version>/<file>")
	}
	c := Coords{Repo: segs[0], File: segs[len(segs)-1]}
	for _, alg := range checksumAlgs {
		if base, ok := strings.CutSuffix(c.File, "."+alg); ok && base != "" {
			c.File, c.Checksum = base, alg
			break
		}
	}
	var group []string
	switch {
	case strings.HasPrefix(c.File, "maven-metadata"):
		if c.File != MetadataFile {
			return Coords{}, format.BadRequest("%s: only %s is served by a remote repository", c.File, MetadataFile)
		}
		c.Metadata = true
		if parent := segs[len(segs)-2]; IsSnapshot(parent) {
			c.Version, c.ArtifactID, group = parent, segs[len(segs)-3], segs[1:len(segs)-3]
		} else {
			c.ArtifactID, group = parent, segs[1:len(segs)-2]
		}
	default:
		c.Version, c.ArtifactID, group = segs[len(segs)-2], segs[len(segs)-3], segs[1:len(segs)-3]
	}
	if len(group) == 0 {
		return Coords{}, format.BadRequest("path has no groupId: <group as dirs>/<artifactId>/<version>/<file>")
	}
	for _, g := range group {
		// Maven turns every dot of a groupId into a directory, so a dot in
		// a directory would give one package two paths.
		if strings.Contains(g, ".") {
			return Coords{}, format.BadRequest("group directory %q contains a dot", g)
		}
	}
	c.GroupID = strings.Join(group, ".")
	if c.Metadata {
		return c, nil
	}
	if err := parseFileName(&c); err != nil {
		return Coords{}, err
	}
	return c, nil
}

func checkSegment(s string) error {
	if err := format.CheckSegment("path segment", s); err != nil {
		return err
	}
	if i := strings.IndexAny(s, forbidden); i >= 0 {
		return format.BadRequest("path segment %q contains the forbidden character %q", s, s[i])
	}
	return nil
}

// parseFileName splits c.File into classifier and extension (and the
// snapshot timestamp and build number), checking it belongs to c.Version.
func parseFileName(c *Coords) error {
	prefix := c.ArtifactID + "-"
	rest, ok := strings.CutPrefix(c.File, prefix)
	if !ok {
		return badName(c)
	}
	if c.Snapshot() {
		base := strings.TrimSuffix(c.Version, "SNAPSHOT") // keeps the dash: "1.0-"
		if rest, ok = strings.CutPrefix(rest, base); !ok {
			return badName(c)
		}
		if r, ok := strings.CutPrefix(rest, "SNAPSHOT"); ok {
			rest = r // a non-unique snapshot file (Maven 2, Gradle's legacy mode)
		} else {
			ts, n, r, ok := cutTimestamp(rest)
			if !ok {
				return badName(c)
			}
			c.Timestamp, c.BuildNumber, rest = ts, n, r
		}
	} else if rest, ok = strings.CutPrefix(rest, c.Version); !ok {
		return badName(c)
	}
	switch {
	case strings.HasPrefix(rest, "."):
		c.Extension = rest[1:]
	case strings.HasPrefix(rest, "-"):
		cl, ext, found := strings.Cut(rest[1:], ".")
		if !found || cl == "" {
			return badName(c)
		}
		c.Classifier, c.Extension = cl, ext
	default:
		return badName(c)
	}
	if c.Extension == "" || strings.HasPrefix(c.Extension, ".") || strings.HasSuffix(c.Extension, ".") {
		return badName(c)
	}
	return nil
}

func badName(c *Coords) error {
	return format.BadRequest("file name %q does not follow %s-%s[-<classifier>].<extension>", c.File, c.ArtifactID, c.Version)
}

// cutTimestamp reads "yyyyMMdd.HHmmss-N" off the front of s.
func cutTimestamp(s string) (ts string, build int, rest string, ok bool) {
	const tsLen = len("20261121.235031")
	if len(s) < tsLen+2 || s[8] != '.' || s[tsLen] != '-' || !digits(s[:8]) || !digits(s[9:tsLen]) {
		return "", 0, "", false
	}
	ts, s = s[:tsLen], s[tsLen+1:]
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	// No leading zero, so the number rebuilds the same file name.
	if i == 0 || s[0] == '0' || (i < len(s) && s[i] >= '0' && s[i] <= '9') {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 1 {
		return "", 0, "", false
	}
	return ts, n, s[i:], true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
