package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/format/maven"
	"github.com/depot-registry/depot/shared/format/npm"
	"github.com/depot-registry/depot/shared/format/pypi"
	"github.com/depot-registry/depot/shared/meta"
)

// The data set has the shape of the HTTP scale bench's (bench/cmd/scale):
// the same repository plan, package names, versions per package, file
// names and npm package information, so that figures can be set side by
// side. It is generated deterministically, batch by batch, and the same
// batches feed both engines.

// formats are the repository formats generated, in rotation.
var formats = []string{"generic", "npm", "pypi", "maven", "docker"}

// words make package names and npm descriptions: a search for one word
// matches a few percent of the packages.
var words = []string{"core", "util", "http", "json", "parser", "client", "server", "cache", "auth", "log",
	"config", "test", "stream", "crypto", "image", "queue", "metrics", "cli", "sql", "grpc",
	"yaml", "xml", "csv", "math", "time", "date", "net", "dns", "mail", "file",
	"path", "zip", "tar", "diff", "lint", "build", "deploy", "proxy", "retry", "pool"}

// repoPlan is one generated repository.
type repoPlan struct {
	Index     int
	ID, Name  string
	Format    string
	Public    bool
	Artifacts int
	// Granted: the bench user reads this private repository (directly or
	// through a group, which makes no difference to a search).
	Granted bool
}

// plan lays the repositories out as the scale bench does: one large
// repository per format holds a fifth of all artifacts between them, the
// rest are spread evenly, a quarter are private, and the user is granted
// half of the private ones (the large npm, maven and docker repositories
// are private and granted).
func plan(artifacts, repos int) []repoPlan {
	out := make([]repoPlan, repos)
	large := min(len(formats), repos)
	perLarge := artifacts / 5 / large
	if repos == large {
		perLarge = artifacts / repos
	}
	rest := artifacts - perLarge*large
	for i := range out {
		p := &out[i]
		p.Index, p.Format = i, formats[i%len(formats)]
		p.ID = hexID("repo", i)
		p.Name = fmt.Sprintf("%s-%04d", p.Format, i)
		p.Public = i%4 != 2
		if i < large {
			p.Artifacts = perLarge
			p.Public = p.Format == "generic" || p.Format == "pypi"
			p.Granted = !p.Public
			continue
		}
		n := repos - large
		p.Artifacts = rest / n
		if i-large < rest%n {
			p.Artifacts++
		}
		p.Granted = !p.Public && (i/4)%4 < 2
	}
	return out
}

// hexID is a deterministic id of the shape auth.NewID makes (32 hex digits).
func hexID(kind string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", kind, i)))
	return hex.EncodeToString(sum[:16])
}

// name is a package name from two words and a number, unique in a
// repository (the scale bench's rule).
func name(repo, i int) string {
	a := words[(i*7+repo)%len(words)]
	b := words[(i*13+repo*3+1)%len(words)]
	return fmt.Sprintf("%s-%s-%05d", a, b, i)
}

// npmDescription is the description of the npm packages named after word w.
func npmDescription(w string) string { return fmt.Sprintf("The %s library for bench work", w) }

// pkgDoc is a package as a search engine sees it.
type pkgDoc struct {
	Repo, Name string
	Terms      []string // what meta.PackageInfo.Terms makes of its information
}

// batch is what one command carries: up to batchSize artifacts of one
// repository, the packages whose last file is among them, and what the
// npm ones say of themselves (as the indexer would record it).
type batch struct {
	Repo  *repoPlan
	Put   []meta.Artifact
	Pkgs  []pkgDoc
	Infos []meta.PackageInfo
}

const batchSize = 1000

// samples are queries picked from the generated data.
type samples struct {
	stride    int
	names     []string // package names
	files     []string // file names (lower case)
	checksums []string // sha256 hex
}

func (s *samples) artifact(seq int, a *meta.Artifact) {
	if seq%s.stride != 0 {
		return
	}
	file := a.Path[strings.LastIndex(a.Path, "/")+1:]
	s.files = append(s.files, strings.ToLower(file))
	s.checksums = append(s.checksums, a.Checksums.SHA256)
	s.names = append(s.names, a.PackageName)
}

// generator walks the data set.
type generator struct {
	repos     []repoPlan
	artifacts int
	t0        time.Time
}

// each calls fn with every batch, in order; sm (nil: none) collects
// samples on the way.
func (g *generator) each(sm *samples, fn func(*batch) error) error {
	seq := 0
	for ri := range g.repos {
		p := &g.repos[ri]
		b := &batch{Repo: p}
		flush := func() error {
			if len(b.Put) == 0 {
				return nil
			}
			err := fn(b)
			b = &batch{Repo: p}
			return err
		}
		for i := 0; i < p.Artifacts; i++ {
			a, last, info, err := g.artifact(p, i)
			if err != nil {
				return err
			}
			a.ID = hexID("artifact", seq)
			a.RepositoryID = p.ID
			a.Format = p.Format
			a.UploadedAt = g.t0.Add(time.Duration(seq) * time.Millisecond)
			a.UploadedBy = "admin"
			sum := sha256.Sum256([]byte(a.ID))
			a.Checksums.SHA256 = hex.EncodeToString(sum[:])
			a.Digest = "sha256:" + a.Checksums.SHA256
			a.SizeBytes = int64(1000 + seq%4096)
			if sm != nil {
				sm.artifact(seq, &a)
			}
			seq++
			b.Put = append(b.Put, a)
			if last {
				d := pkgDoc{Repo: p.ID, Name: a.PackageName}
				if info != nil {
					info.RepositoryID, info.Name, info.ArtifactID = p.ID, a.PackageName, a.ID
					d.Terms = info.Terms()
					b.Infos = append(b.Infos, *info)
				}
				b.Pkgs = append(b.Pkgs, d)
			}
			if len(b.Put) >= batchSize {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// artifact is the i-th file of repository p (its path, package and
// version), whether it is its package's last one, and, for npm, what its
// package says of itself.
func (g *generator) artifact(p *repoPlan, i int) (a meta.Artifact, last bool, info *meta.PackageInfo, err error) {
	const perPkg = 10 // files a package, in every format
	last = i%perPkg == perPkg-1 || i == p.Artifacts-1
	j := i / perPkg
	switch p.Format {
	case "generic":
		pkg, v := name(p.Index, j), fmt.Sprintf("1.0.%d", i%perPkg)
		c, err := generic.ParsePath(p.Name + "/" + pkg + "/" + v + "/" + pkg + "-" + v + ".bin")
		if err != nil {
			return a, false, nil, err
		}
		a.Path, a.PackageName, a.Version = c.Path(), c.Package, c.Version
	case "npm":
		raw := name(p.Index, j)
		if j%5 == 4 {
			raw = "@bench/" + raw
		}
		n, err := npm.ParseName(raw)
		if err != nil {
			return a, false, nil, err
		}
		v := fmt.Sprintf("1.%d.0", i%perPkg)
		a.Path, a.PackageName, a.Version = n.Path(v), n.String(), v
		if last {
			// What the indexer reads from the tarball's package.json.
			w1, _, _ := strings.Cut(n.Base, "-")
			info = &meta.PackageInfo{Summary: npmDescription(w1), Licenses: []string{"MIT"}, Keywords: []string{w1, "bench"}}
		}
	case "pypi":
		display := strings.ReplaceAll(name(p.Index, j), "-", "_")
		norm := pypi.Normalize(display)
		v := fmt.Sprintf("2.%d", (i%perPkg)/2)
		stem := strings.ReplaceAll(norm, "-", "_") + "-" + v
		file := stem + ".tar.gz"
		if i%2 == 1 {
			file = stem + "-py3-none-any.whl"
		}
		m := pypi.UploadMeta{Project: norm, Version: v, Filename: file}
		a.Path, a.PackageName, a.Version = m.Path(), norm, v
	case "maven":
		group := "org.bench." + words[j%len(words)]
		id := name(p.Index, j)
		v := fmt.Sprintf("3.%d.0", (i%perPkg)/2)
		ext := "jar"
		if i%2 == 1 {
			ext = "pom"
		}
		c, err := maven.ParsePath(p.Name + "/" + strings.ReplaceAll(group, ".", "/") + "/" + id + "/" + v + "/" + id + "-" + v + "." + ext)
		if err != nil {
			return a, false, nil, err
		}
		a.Path, a.PackageName, a.Version = c.Path(), c.Package(), c.Version
	case "docker":
		image := strings.ReplaceAll(name(p.Index, j), "-", "/")
		tag := fmt.Sprintf("v%d", i%perPkg)
		a.Path, a.PackageName, a.Version = image+":"+tag, image, tag
	}
	return a, last, info, nil
}
