package maven

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

var _ format.Inspector = (*Format)(nil)

// zipped are the extensions of files that are zips (a jar and its kin).
var zipped = []string{"jar", "war", "ear", "aar", "rar", "zip", "hpi", "jpi", "nbm"}

// Inspect reads a stored Maven file. Its coordinates are its path's,
// parsed as a deploy parses them (ParsePath); a POM is read with
// ParsePOM, and a jar (or any zip) is listed, with the POM Maven packs
// under META-INF/maven/<groupId>/<artifactId>/ read the same way. What a
// POM says wins over the path, which a deploy takes on the client's word;
// other files (a tarball, a signature, Gradle's module metadata) are
// their coordinates only. A deploy stores files as they come and never
// reads a POM: one the inspector cannot read may be stored.
func (f *Format) Inspect(ctx context.Context, s format.Stored) (format.PackageInfo, error) {
	c, pathErr := ParsePath("repo/" + s.Path)
	info := format.PackageInfo{Format: Name, Name: c.Package(), Version: c.Version}
	ext := c.Extension
	if pathErr != nil {
		// A file outside a repository's layout (an import) has no
		// coordinates: only what it carries says what it is.
		info, ext = format.PackageInfo{Format: Name}, ""
		for _, e := range append([]string{"pom"}, zipped...) {
			if strings.HasSuffix(s.Path, "."+e) {
				ext = e
			}
		}
	}
	var pom []byte
	switch {
	case ext == "pom":
		if s.Size > MaxPOM {
			return format.PackageInfo{}, format.BadRequest("the POM is larger than %d bytes", MaxPOM)
		}
		pom = make([]byte, s.Size)
		if _, err := s.File.ReadAt(pom, 0); err != nil && !errors.Is(err, io.EOF) {
			return format.PackageInfo{}, err
		}
	case slices.Contains(zipped, ext):
		files := &format.FileList{}
		poms, err := format.ReadZip(ctx, s.File, s.Size, format.ArchiveRules{What: "a jar", All: true, Check: files.Check(nil),
			Limits: format.ArchiveLimits{Member: MaxPOM}, Want: func(name string) bool {
				parts := strings.Split(name, "/")
				return len(parts) == 5 && parts[0] == "META-INF" && parts[1] == "maven" && parts[4] == "pom.xml" &&
					(pathErr != nil || parts[2] == c.GroupID && parts[3] == c.ArtifactID)
			}})
		if err != nil {
			return format.PackageInfo{}, err
		}
		files.Fill(&info)
		if len(poms) == 1 { // a shaded jar packs its dependencies' POMs too
			pom = poms[0].Data
		}
	}
	if pom != nil {
		p, err := ParsePOM(pom)
		if err != nil {
			return format.PackageInfo{}, err
		}
		pi := p.Info()
		pi.Files, pi.FileCount = info.Files, info.FileCount
		if pi.Version == "" {
			pi.Version = info.Version
		}
		info = pi
	}
	if info.Name == "" {
		return format.PackageInfo{}, pathErr
	}
	info.Size = s.Size
	return info.Bounded(), nil
}
