package nuget

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// The v2 feed: an OData/Atom service over the same versions, enough for
// nuget 2.x to install and list (service document, $metadata,
// Packages(Id,Version), Packages(), FindPackagesById(), Search(), with
// the query options of odata.go).

var packagesRE = regexp.MustCompile(`^Packages\(Id='([^']+)',Version='([^']+)'\)$`)

func atom(body string) *format.Response {
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/atom+xml;type=feed;charset=utf-8")
	resp.Body = []byte(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + body)
	return resp
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (f *Format) v2Service(ctx context.Context, r *format.Request) (*format.Response, error) {
	b := base(r, r.Repo.Name) + "/"
	resp := atom(`<service xml:base="` + esc(b) + `" xmlns="http://www.w3.org/2007/app" xmlns:atom="http://www.w3.org/2005/Atom">` +
		`<workspace><atom:title type="text">Default</atom:title><collection href="Packages"><atom:title type="text">Packages</atom:title></collection></workspace></service>`)
	resp.Header.Set("Content-Type", "application/atomsvc+xml;charset=utf-8")
	return resp, nil
}

func (f *Format) v2(ctx context.Context, r *format.Request) (*format.Response, error) {
	q := r.Param("query")
	switch {
	case q == "$metadata":
		resp := format.NewResponse(http.StatusOK)
		resp.Header.Set("Content-Type", "application/xml;charset=utf-8")
		resp.Body = []byte(metadataEDMX)
		return resp, nil
	case packagesRE.MatchString(q):
		m := packagesRE.FindStringSubmatch(q)
		vs, err := f.versions(r.Repo, m[1])
		if err != nil {
			return nil, err
		}
		for _, e := range flag(vs) {
			if e.norm == normalize(m[2]) {
				return atom(f.entry(r, e, true)), nil
			}
		}
		return nil, format.NotFound("%s %s is not in repository %s", m[1], m[2], r.Repo.Name)
	case q == "FindPackagesById()" || q == "Packages()" || q == "Packages" || q == "Search()":
		return f.feed(r, q)
	}
	return nil, format.NotFound("not found: %s", q)
}

// unquote is an OData string parameter's value: 'x' is x, and a doubled
// quote in it is one quote.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

// feed answers a collection: FindPackagesById()'s versions of a package,
// Packages()'s of every package (or of one, given id as well), Search()'s
// of the packages whose id or description holds searchTerm; then the
// query options (see parseQuery).
func (f *Format) feed(r *format.Request, q string) (*format.Response, error) {
	fq, err := parseQuery(r.Query.Get)
	if err != nil {
		return nil, err
	}
	id := unquote(r.Query.Get("id"))
	var vs []version
	switch {
	case id != "":
		vs, err = f.versions(r.Repo, id)
	case q == "FindPackagesById()":
		return nil, format.NotFound("give the package id: FindPackagesById()?id='<id>'")
	default:
		vs, err = f.stored(r.Repo, "")
	}
	if err != nil {
		return nil, err
	}
	es := flag(vs)
	if q == "Search()" {
		term := strings.ToLower(unquote(r.Query.Get("searchTerm")))
		pre := r.Query.Get("includePrerelease") == "true"
		es = slices.DeleteFunc(es, func(e feedEntry) bool {
			return !pre && prerelease(e.norm) ||
				!strings.Contains(strings.ToLower(e.ID), term) && !strings.Contains(strings.ToLower(e.Description), term)
		})
	}
	page, more := fq.apply(es)
	b := base(r, r.Repo.Name) + "/"
	var body strings.Builder
	body.WriteString(`<feed xml:base="` + esc(b) + `" xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" ` +
		`xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>` + esc(b+q) + `</id><title type="text">Packages</title>`)
	for _, e := range page {
		body.WriteString(f.entry(r, e, false))
	}
	if more {
		// The next page: the same query, past this one.
		next := url.Values{}
		for k, v := range r.Query {
			next[k] = v
		}
		next.Set("$skip", strconv.Itoa(fq.skip+len(page)))
		if fq.top >= 0 {
			next.Set("$top", strconv.Itoa(fq.top-len(page)))
		}
		body.WriteString(`<link rel="next" href="` + esc(b+q+"?"+next.Encode()) + `"/>`)
	}
	body.WriteString(`</feed>`)
	return atom(body.String()), nil
}

// entry is a version's Atom entry; content's src is the flat container's
// .nupkg (a self-closing element, as NuGet's reader wants).
func (f *Format) entry(r *format.Request, v feedEntry, root bool) string {
	b := base(r, r.Repo.Name)
	id := strings.ToLower(v.ID)
	self := b + "/Packages(Id='" + v.ID + "',Version='" + v.norm + "')"
	var deps []string
	for _, g := range v.Groups {
		for _, d := range g.Deps {
			deps = append(deps, d.ID+":"+d.Version+":"+g.TargetFramework)
		}
	}
	ns := ""
	if root {
		ns = ` xml:base="` + esc(b+"/") + `" xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" ` +
			`xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"`
	}
	hash := ""
	if raw, err := hex.DecodeString(v.art.Checksums.SHA512); err == nil && len(raw) > 0 {
		hash = base64.StdEncoding.EncodeToString(raw)
	}
	published := v.art.UploadedAt.UTC().Format("2006-01-02T15:04:05Z")
	return fmt.Sprintf(`<entry%s><id>%s</id>`+
		`<category term="NuGetGallery.OData.V2FeedPackage" scheme="http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"/>`+
		`<link rel="edit" href="%s"/><link rel="self" href="%s"/><title type="text">%s</title><updated>%s</updated>`+
		`<author><name>%s</name></author><content type="application/zip" src="%s"/><m:properties>`+
		`<d:Id>%s</d:Id><d:Version>%s</d:Version><d:NormalizedVersion>%s</d:NormalizedVersion><d:Description>%s</d:Description>`+
		`<d:Authors>%s</d:Authors><d:Dependencies>%s</d:Dependencies><d:PackageHash>%s</d:PackageHash><d:PackageHashAlgorithm>SHA512</d:PackageHashAlgorithm>`+
		`<d:PackageSize m:type="Edm.Int64">%d</d:PackageSize><d:Published m:type="Edm.DateTime">%s</d:Published>`+
		`<d:IsLatestVersion m:type="Edm.Boolean">%t</d:IsLatestVersion><d:IsAbsoluteLatestVersion m:type="Edm.Boolean">%t</d:IsAbsoluteLatestVersion>`+
		`<d:IsPrerelease m:type="Edm.Boolean">%t</d:IsPrerelease><d:Listed m:type="Edm.Boolean">true</d:Listed>`+
		`<d:DownloadCount m:type="Edm.Int32">0</d:DownloadCount></m:properties></entry>`,
		ns, esc(self), esc(self), esc(self), esc(v.ID), published, esc(v.Authors),
		esc(b+"/v3/package/"+id+"/"+v.norm+"/"+id+"."+v.norm+".nupkg"),
		esc(v.ID), esc(v.norm), esc(v.norm), esc(v.Description), esc(v.Authors), esc(strings.Join(deps, "|")), hash,
		v.art.SizeBytes, published, v.latest, v.absLatest, prerelease(v.norm))
}

// compareVersions orders normalized versions as NuGet does (SemVer 2):
// numbers part by part, a prerelease before its release, prerelease
// labels dot by dot, numeric ones as numbers and before the others,
// which compare without regard to case, and more labels after fewer
// (1.0.0-beta.2 < 1.0.0-beta.10 < 1.0.0-rc.1 < 1.0.0).
func compareVersions(a, b string) int {
	ca, pa, _ := strings.Cut(a, "-")
	cb, pb, _ := strings.Cut(b, "-")
	xa, xb := strings.Split(ca, "."), strings.Split(cb, ".")
	for i := 0; i < len(xa) || i < len(xb); i++ {
		var na, nb int
		if i < len(xa) {
			na, _ = strconv.Atoi(xa[i])
		}
		if i < len(xb) {
			nb, _ = strconv.Atoi(xb[i])
		}
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
	}
	switch {
	case pa == pb:
		return 0
	case pa == "":
		return 1
	case pb == "":
		return -1
	}
	la, lb := strings.Split(pa, "."), strings.Split(pb, ".")
	for i := range min(len(la), len(lb)) {
		na, ea := strconv.ParseUint(la[i], 10, 64)
		nb, eb := strconv.ParseUint(lb[i], 10, 64)
		var c int
		switch {
		case ea == nil && eb == nil:
			c = cmp.Compare(na, nb)
		case ea == nil:
			c = -1
		case eb == nil:
			c = 1
		default:
			c = strings.Compare(strings.ToLower(la[i]), strings.ToLower(lb[i]))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(la), len(lb))
}

const metadataEDMX = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"><edmx:DataServices m:DataServiceVersion="2.0" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><Schema Namespace="NuGetGallery.OData" xmlns="http://schemas.microsoft.com/ado/2006/04/edm"><EntityType Name="V2FeedPackage" m:HasStream="true"><Key><PropertyRef Name="Id"/><PropertyRef Name="Version"/></Key><Property Name="Id" Type="Edm.String" Nullable="false"/><Property Name="Version" Type="Edm.String" Nullable="false"/><Property Name="NormalizedVersion" Type="Edm.String"/><Property Name="Authors" Type="Edm.String"/><Property Name="Dependencies" Type="Edm.String"/><Property Name="Description" Type="Edm.String"/><Property Name="DownloadCount" Type="Edm.Int32" Nullable="false"/><Property Name="IsLatestVersion" Type="Edm.Boolean" Nullable="false"/><Property Name="IsAbsoluteLatestVersion" Type="Edm.Boolean" Nullable="false"/><Property Name="IsPrerelease" Type="Edm.Boolean" Nullable="false"/><Property Name="Listed" Type="Edm.Boolean" Nullable="false"/><Property Name="PackageHash" Type="Edm.String"/><Property Name="PackageHashAlgorithm" Type="Edm.String"/><Property Name="PackageSize" Type="Edm.Int64" Nullable="false"/><Property Name="Published" Type="Edm.DateTime" Nullable="false"/></EntityType></Schema><Schema Namespace="NuGetGallery" xmlns="http://schemas.microsoft.com/ado/2006/04/edm"><EntityContainer Name="V2FeedContext" m:IsDefaultEntityContainer="true"><EntitySet Name="Packages" EntityType="NuGetGallery.OData.V2FeedPackage"/><FunctionImport Name="FindPackagesById" ReturnType="Collection(NuGetGallery.OData.V2FeedPackage)" EntitySet="Packages"><Parameter Name="id" Type="Edm.String" FromQuery="true"/></FunctionImport><FunctionImport Name="Search" ReturnType="Collection(NuGetGallery.OData.V2FeedPackage)" EntitySet="Packages"><Parameter Name="searchTerm" Type="Edm.String" FromQuery="true"/><Parameter Name="targetFramework" Type="Edm.String" FromQuery="true"/><Parameter Name="includePrerelease" Type="Edm.Boolean" FromQuery="true"/></FunctionImport></EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`
