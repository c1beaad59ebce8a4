package npm

import (
	"compress/gzip"
	"context"
	"encoding/json"
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

func (f *Format) auditRoute() format.Route {
	return format.Route{Method: http.MethodPost, Path: "/{repo}/-/npm/v1/security/advisories/bulk", Action: meta.ActionRead, Read: f.audit}
}

// audit answers npm's bulk advisory request.
func (f *Format) audit(ctx context.Context, r *format.Request) (*format.Response, error) {
	if f.Env.Advisories == nil {
		return nil, format.ErrUpstream // an edge: an origin has the database
	}
	db, err := f.Env.Advisories(ctx)
	if err != nil {
		return nil, err
	}
	body, err := format.BodyReader(r, maxAuditBody)
	if err != nil {
		return nil, err
	}
	if r.Header != nil && strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, format.BadRequest("the audit request is not gzip: %v", err)
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxAuditBody+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxAuditBody {
		return nil, format.Errorf(apierr.PayloadTooLarge, "an audit request is at most %d bytes", maxAuditBody)
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
