package scan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
)

// Report is what a scan found, and what it could not look at and why.
type Report struct {
	// Advisories names the database matched against.
	Advisories ReportDB `json:"advisories"`
	// Packages are the packages matched: the artifact's own and the
	// dependencies it pins.
	Packages []Scanned `json:"packages"`
	Findings []Finding `json:"findings"`
	// Truncated: more findings than MaxFindings.
	Truncated  bool         `json:"truncated,omitempty"`
	NotScanned []NotScanned `json:"not_scanned"`

	matched   map[[3]string]bool // ecosystem, name, version of Packages
	notListed int                // not_scanned entries beyond maxNotScanned
}

// maxNotScanned bounds a report's not_scanned entries (the rest are
// counted in a last one).
const maxNotScanned = 1000

// ReportDB is the database a report was matched against.
type ReportDB struct {
	Digest     string    `json:"digest,omitempty"`
	Advisories int       `json:"count"`
	LoadedAt   time.Time `json:"loaded_at,omitzero"`
}

// Scanned is one package matched.
type Scanned struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	// Source: "package" (the artifact itself) or "dependency" (with its
	// Kind: runtime, dev, ...).
	Source string `json:"source"`
	Kind   string `json:"kind,omitempty"`
	// Location is the file of an image that says it is installed.
	Location string `json:"location,omitempty"`
}

// Finding is an advisory affecting a package matched.
type Finding struct {
	vuln.Finding
	Source string `json:"source"` // package, dependency, image
	// Location is the file of an image the package was found in.
	Location string `json:"location,omitempty"`
}

// NotScanned is something the scan could not match, and why.
type NotScanned struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// scan matches an artifact's package and pinned dependencies, filling
// the scan's counts.
func (s *Service) scan(ctx context.Context, sc *meta.Scan) (*Report, error) {
	var a *meta.Artifact
	var repo *meta.Repository
	err := s.cfg.Store.View(func(tx *meta.Tx) error {
		var err error
		if a, err = tx.Artifact(sc.ArtifactID); err != nil {
			return err
		}
		repo, err = tx.Repo(a.RepositoryID)
		return err
	})
	if errors.Is(err, meta.ErrNotFound) {
		return nil, fmt.Errorf("the artifact was deleted before it was scanned")
	}
	if err != nil {
		return nil, err
	}
	rep, err := s.Assess(ctx, a, repo)
	if err != nil {
		return nil, err
	}
	sc.Advisories = rep.Advisories.Digest
	s.count(sc, rep)
	return rep, nil
}

// Assess matches an artifact of repo (recorded, or about to be: its blob
// stored) against the advisory database in force, as a scan does: for a
// policy deciding whether its upload may be recorded.
func (s *Service) Assess(ctx context.Context, a *meta.Artifact, repo *meta.Repository) (*Report, error) {
	rep := &Report{Packages: []Scanned{}, Findings: []Finding{}, NotScanned: []NotScanned{}}
	db, rec, err := s.Database(ctx)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		rep.Advisories = ReportDB{Digest: rec.Digest, Advisories: rec.Advisories, LoadedAt: rec.LoadedAt}
	}
	eco := vuln.Ecosystem(repo.Format)
	switch {
	case !scannable(repo.Format):
		rep.notScanned(a.Path, fmt.Sprintf("no advisory data covers %s packages", repo.Format))
	case db.Len() == 0:
		rep.notScanned(a.PackageName+" "+a.Version, "no advisories are loaded (POST /api/v1/security/advisories)")
	case repo.Format == oci.Name:
		if err := s.image(ctx, db, rep, a); err != nil {
			return nil, err
		}
	case !db.Covers(eco):
		rep.notScanned(a.PackageName+" "+a.Version, "no advisory data loaded for "+eco)
	default:
		if !a.Companion {
			s.match(db, rep, eco, Scanned{Ecosystem: eco, Name: a.PackageName, Version: a.Version, Source: "package"})
		}
		s.dependencies(ctx, db, rep, eco, a)
	}
	if rep.notListed > 0 {
		rep.NotScanned = append(rep.NotScanned, NotScanned{What: fmt.Sprintf("%d more", rep.notListed), Reason: "not listed: a report lists at most " + fmt.Sprint(maxNotScanned)})
	}
	return rep, ctx.Err()
}

// dependencies matches the dependencies the artifact's file pins.
func (s *Service) dependencies(ctx context.Context, db *vuln.DB, rep *Report, eco string, a *meta.Artifact) {
	in, ok := s.cfg.Formats[a.Format].(format.Inspector)
	if !ok {
		return
	}
	f, err := s.cfg.Blobs.Open(ctx, a.Digest)
	if err != nil {
		rep.notScanned("dependencies of "+a.Path, "the file could not be read: "+err.Error())
		return
	}
	defer f.Close()
	ictx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	info, err := in.Inspect(ictx, format.Stored{Path: a.Path, File: f, Size: f.Size(), Blobs: s.cfg.Blobs})
	if err != nil {
		rep.notScanned("dependencies of "+a.Path, "the file could not be inspected: "+err.Error())
		return
	}
	ranged := 0
	for _, d := range info.Dependencies {
		if d.Ecosystem != "" && vuln.Ecosystem(d.Ecosystem) != eco {
			continue // a platform requirement (php, ext-*), another ecosystem's
		}
		v, exact := exactVersion(eco, d.Constraint)
		if !exact {
			ranged++
			if ranged <= 100 {
				rep.notScanned(d.Name+" "+d.Constraint, "a version range: the version installed is chosen by the client")
			}
			continue
		}
		s.match(db, rep, eco, Scanned{Ecosystem: eco, Name: d.Name, Version: v, Source: "dependency", Kind: d.Kind})
	}
	if ranged > 100 {
		rep.notScanned(fmt.Sprintf("%d more dependencies", ranged-100), "version ranges: the versions installed are chosen by the client")
	}
	if info.Truncated {
		rep.notScanned("dependencies of "+a.Path+" beyond the first "+
			fmt.Sprint(format.MaxInfoDependencies), "more than a package's information holds")
	}
}

// match adds one package's findings, once per package and version
// (where it was found first).
func (s *Service) match(db *vuln.DB, rep *Report, eco string, p Scanned) {
	k := [3]string{p.Ecosystem, p.Name, p.Version}
	if rep.matched[k] {
		return
	}
	if rep.matched == nil {
		rep.matched = map[[3]string]bool{}
	}
	rep.matched[k] = true
	found, err := db.Match(eco, p.Name, p.Version)
	if err != nil {
		rep.notScanned(p.Name+" "+p.Version, err.Error())
		return
	}
	rep.Packages = append(rep.Packages, p)
	for _, f := range found {
		if len(rep.Findings) >= MaxFindings {
			rep.Truncated = true
			return
		}
		rep.Findings = append(rep.Findings, Finding{Finding: f, Source: p.Source, Location: p.Location})
	}
}

// notScanned notes what could not be matched, and why.
func (rep *Report) notScanned(what, reason string) {
	if len(rep.NotScanned) >= maxNotScanned {
		rep.notListed++
		return
	}
	rep.NotScanned = append(rep.NotScanned, NotScanned{What: what, Reason: reason})
}

// count fills a scan's counts from its report.
func (s *Service) count(sc *meta.Scan, rep *Report) {
	var v meta.Vulnerabilities
	for _, f := range rep.Findings {
		switch f.Severity {
		case vuln.Critical:
			v.Critical++
		case vuln.High:
			v.High++
		case vuln.Medium:
			v.Medium++
		case vuln.Low:
			v.Low++
		default:
			v.Unknown++
		}
	}
	sc.Vulnerabilities, sc.Packages, sc.NotScanned = v, len(rep.Packages), len(rep.NotScanned)
}
