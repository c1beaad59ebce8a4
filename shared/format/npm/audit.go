package npm

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/vuln"
)

// npm audit against the registry: npm posts the packages and versions of
// a project's tree to -/npm/v1/security/advisories/bulk and is answered,
// per package, the advisories of the registry's own database with the
// versions they affect as a semver range, which npm matches against the
// tree. No internet: the database is what the administrators loaded.

const (
	// maxAuditBody bounds an audit request, unpacked: a tree of tens of
	// thousands of packages.
	maxAuditBody = 16 << 20
	maxAuditPkgs = 50_000
)

// auditAdvisory is one advisory as npm's bulk audit answers it.
type auditAdvisory struct {
	ID                 uint32   `json:"id"`
	URL                string   `json:"url"`
	Title              string   `json:"title"`
	Severity           string   `json:"severity"` // critical, high, moderate, low, info
	VulnerableVersions string   `json:"vulnerable_versions"`
	CWE                []string `json:"cwe"`
	CVSS               struct {
		Score        float64 `json:"score"`
		VectorString *string `json:"vectorString"`
	} `json:"cvss"`
}

func (f *Format) auditRoutes() []format.Route {
	return []format.Route{
		{Method: http.MethodPost, Path: "/{repo}/-/npm/v1/security/advisories/bulk", Action: meta.ActionRead, Read: f.audit},
		{Method: http.MethodPost, Path: "/{repo}/-/npm/v1/security/audits/quick", Action: meta.ActionRead, Read: f.quickAudit},
	}
}

// auditRequest reads an audit request's body (gzip'd or not, within
// maxAuditBody) and the database it is answered from.
func (f *Format) auditRequest(ctx context.Context, r *format.Request) (*vuln.DB, []byte, error) {
	if f.Env.Advisories == nil {
		return nil, nil, format.ErrUpstream // an edge: an origin has the database
	}
	db, err := f.Env.Advisories(ctx)
	if err != nil {
		return nil, nil, err
	}
	body, err := format.BodyReader(r, maxAuditBody)
	if err != nil {
		return nil, nil, err
	}
	if r.Header != nil && strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, nil, format.BadRequest("the audit request is not gzip: %v", err)
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxAuditBody+1))
	if err != nil {
		return nil, nil, err
	}
	if len(raw) > maxAuditBody {
		return nil, nil, format.Errorf(apierr.PayloadTooLarge, "an audit request is at most %d bytes", maxAuditBody)
	}
	return db, raw, nil
}

// audit answers npm's bulk advisory request.
func (f *Format) audit(ctx context.Context, r *format.Request) (*format.Response, error) {
	db, raw, err := f.auditRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	var tree map[string][]string
	if err := json.Unmarshal(raw, &tree); err != nil || len(tree) > maxAuditPkgs {
		return nil, format.BadRequest("an audit request is a JSON object of at most %d package names to their versions", maxAuditPkgs)
	}
	out := map[string][]auditAdvisory{}
	for name := range tree {
		for _, n := range db.Named(vuln.NPM, name) {
			a := n.Advisory
			adv := auditAdvisory{ID: numericID(a.ID), URL: "https://osv.dev/vulnerability/" + a.ID, Title: a.Summary,
				Severity: npmSeverity(a.SeverityLevel()), VulnerableVersions: vuln.SemverRange(n.Affected), CWE: []string{}}
			if len(a.References) > 0 {
				adv.URL = a.References[0].URL
			}
			if adv.Title == "" {
				adv.Title = a.ID
			}
			out[name] = append(out[name], adv)
		}
		slices.SortFunc(out[name], func(x, y auditAdvisory) int { return strings.Compare(x.URL, y.URL) })
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, err = json.Marshal(out)
	return resp, err
}

// numericID is a stable number for an advisory id (npm keys advisories
// by a number).
func numericID(id string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return h.Sum32()
}

// npmSeverity is a severity in npm's words.
func npmSeverity(s string) string {
	switch s {
	case vuln.Medium:
		return "moderate"
	case vuln.Unknown:
		return "info"
	}
	return s
}

// The quick audit: what npm falls back to when the bulk request fails
// (and what npm 6 sent): the project's whole tree, nested as npm's old
// lockfile nests it, answered with each advisory that affects a version
// in the tree and where it was found (findings, by path), in npm 6's
// shape, which npm turns back into the bulk one.

// quickNode is a package of the tree, as npm's quick audit sends it.
type quickNode struct {
	Version      string                `json:"version"`
	Dev          bool                  `json:"dev"`
	Optional     bool                  `json:"optional"`
	Dependencies map[string]*quickNode `json:"dependencies"`
}

// quickAdvisory is an advisory as npm 6's audit answered it.
type quickAdvisory struct {
	ID                 uint32         `json:"id"`
	Title              string         `json:"title"`
	ModuleName         string         `json:"module_name"`
	URL                string         `json:"url"`
	Severity           string         `json:"severity"`
	VulnerableVersions string         `json:"vulnerable_versions"`
	PatchedVersions    string         `json:"patched_versions"`
	Overview           string         `json:"overview"`
	Recommendation     string         `json:"recommendation"`
	CVEs               []string       `json:"cves"`
	CWE                string         `json:"cwe"`
	Findings           []quickFinding `json:"findings"`
}

type quickFinding struct {
	Version string   `json:"version"`
	Paths   []string `json:"paths"`
}

// maxQuickDepth bounds how deep a tree is walked.
const maxQuickDepth = 64

// quickAudit answers npm's quick audit request.
func (f *Format) quickAudit(ctx context.Context, r *format.Request) (*format.Response, error) {
	db, raw, err := f.auditRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	var root struct {
		Dependencies map[string]*quickNode `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, format.BadRequest("a quick audit request is a project's tree: {\"dependencies\": {name: {version, dependencies}}}")
	}
	type seen struct{ name, version string }
	paths := map[seen][]string{} // each package version of the tree, where it is
	counts := map[string]int{"dependencies": 0, "devDependencies": 0, "optionalDependencies": 0}
	total := 0
	var walk func(deps map[string]*quickNode, at string, depth int) error
	walk = func(deps map[string]*quickNode, at string, depth int) error {
		if depth > maxQuickDepth {
			return format.BadRequest("the tree is deeper than %d packages", maxQuickDepth)
		}
		for name, n := range deps {
			if n == nil {
				continue
			}
			if total++; total > maxAuditPkgs {
				return format.BadRequest("an audit request names at most %d packages", maxAuditPkgs)
			}
			switch {
			case n.Dev:
				counts["devDependencies"]++
			case n.Optional:
				counts["optionalDependencies"]++
			default:
				counts["dependencies"]++
			}
			path := name
			if at != "" {
				path = at + ">" + name
			}
			k := seen{name, n.Version}
			if len(paths[k]) < 100 {
				paths[k] = append(paths[k], path)
			}
			if err := walk(n.Dependencies, path, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root.Dependencies, "", 0); err != nil {
		return nil, err
	}
	advisories := map[string]*quickAdvisory{}
	levels := map[string]int{"info": 0, "low": 0, "moderate": 0, "high": 0, "critical": 0}
	for k, where := range paths {
		found, err := db.Match(vuln.NPM, k.name, k.version)
		if err != nil {
			continue // not a version npm orders (a URL, a tag): nothing to say of it
		}
		for _, fd := range found {
			key := fmt.Sprint(numericID(fd.ID))
			adv := advisories[key]
			if adv == nil {
				adv = &quickAdvisory{ID: numericID(fd.ID), Title: cmp.Or(fd.Summary, fd.ID), ModuleName: k.name,
					URL: "https://osv.dev/vulnerability/" + fd.ID, Severity: npmSeverity(fd.Severity), CVEs: []string{}, Findings: []quickFinding{}}
				if len(fd.References) > 0 {
					adv.URL = fd.References[0]
				}
				for _, alias := range fd.Aliases {
					if strings.HasPrefix(alias, "CVE-") {
						adv.CVEs = append(adv.CVEs, alias)
					}
				}
				for _, named := range db.Named(vuln.NPM, k.name) {
					if named.Advisory.ID == fd.ID {
						adv.VulnerableVersions = vuln.SemverRange(named.Affected)
					}
				}
				if len(fd.Fixed) > 0 {
					adv.PatchedVersions = ">=" + fd.Fixed[0]
					adv.Recommendation = "Upgrade to version " + fd.Fixed[0] + " or later"
				}
				advisories[key] = adv
			}
			adv.Findings = append(adv.Findings, quickFinding{Version: k.version, Paths: where})
			levels[npmSeverity(fd.Severity)] += len(where)
		}
	}
	out := map[string]any{"actions": []any{}, "advisories": advisories, "muted": []any{},
		"metadata": map[string]any{"vulnerabilities": levels, "dependencies": counts["dependencies"],
			"devDependencies": counts["devDependencies"], "optionalDependencies": counts["optionalDependencies"], "totalDependencies": total}}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/json")
	resp.Body, err = json.Marshal(out)
	return resp, err
}
