package maven

import (
	"bytes"
	"encoding/xml"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// MaxPOM bounds a POM read for inspection; real ones are a few KiB, the
// largest (aggregators with long dependency management) some hundreds.
const MaxPOM = 1 << 20

// POM is what is read of a project object model. Values are as written:
// properties (${project.version}) are not resolved, nor is a parent's
// dependency management, which a POM in a repository does not carry.
type POM struct {
	Parent struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
	} `xml:"parent"`
	GroupID     string `xml:"groupId"`
	ArtifactID  string `xml:"artifactId"`
	Version     string `xml:"version"`
	Packaging   string `xml:"packaging"`
	Name        string `xml:"name"`
	Description string `xml:"description"`
	URL         string `xml:"url"`
	Licenses    []struct {
		Name string `xml:"name"`
		URL  string `xml:"url"`
	} `xml:"licenses>license"`
	SCM struct {
		URL string `xml:"url"`
	} `xml:"scm"`
	Dependencies []struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
		Scope      string `xml:"scope"`
		Optional   string `xml:"optional"`
	} `xml:"dependencies>dependency"`
}

// ParsePOM decodes a POM (bounded): a <project> document that names its
// artifact, its group and version given or inherited from its parent.
func ParsePOM(data []byte) (POM, error) {
	var p POM
	if len(data) > MaxPOM {
		return p, format.BadRequest("the POM is larger than %d bytes", MaxPOM)
	}
	var root struct {
		XMLName xml.Name
		POM
	}
	// encoding/xml expands no DTD entities, so a small document stays small.
	if err := xml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		return p, format.BadRequest("malformed POM: %v", err)
	}
	if root.XMLName.Local != "project" {
		return p, format.BadRequest("a POM is a <project> document, not <%s>", root.XMLName.Local)
	}
	p = root.POM
	trim := func(s ...*string) {
		for _, v := range s {
			*v = strings.TrimSpace(*v)
		}
	}
	trim(&p.GroupID, &p.ArtifactID, &p.Version, &p.Parent.GroupID, &p.Parent.Version, &p.Description, &p.URL, &p.SCM.URL)
	if p.GroupID == "" {
		p.GroupID = p.Parent.GroupID
	}
	if p.Version == "" {
		p.Version = p.Parent.Version
	}
	if p.GroupID == "" || p.ArtifactID == "" {
		return p, format.BadRequest("the POM names no groupId or no artifactId")
	}
	return p, nil
}

// Info is what the POM says of its artifact: groupId:artifactId, version,
// description, url, licences (names, else URLs), scm url and dependencies
// (groupId:artifactId, the version as written, the scope, compile when
// none is given, and <optional>).
func (p POM) Info() format.PackageInfo {
	info := format.PackageInfo{Format: Name, Name: p.GroupID + ":" + p.ArtifactID, Version: p.Version, Summary: p.Description,
		Homepage: p.URL, Repository: p.SCM.URL}
	if info.Summary == "" {
		info.Summary = strings.TrimSpace(p.Name)
	}
	for _, l := range p.Licenses {
		if n := strings.TrimSpace(l.Name); n != "" {
			info.Licenses = append(info.Licenses, n)
		} else if u := strings.TrimSpace(l.URL); u != "" {
			info.Licenses = append(info.Licenses, u)
		}
	}
	for _, d := range p.Dependencies {
		scope := strings.TrimSpace(d.Scope)
		if scope == "" {
			scope = "compile"
		}
		info.Dependencies = append(info.Dependencies, format.Dependency{
			Name: strings.TrimSpace(d.GroupID) + ":" + strings.TrimSpace(d.ArtifactID), Constraint: strings.TrimSpace(d.Version),
			Kind: scope, Optional: strings.TrimSpace(d.Optional) == "true", Ecosystem: Name})
	}
	return info
}
