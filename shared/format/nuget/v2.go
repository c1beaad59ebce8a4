package nuget

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// The v2 feed: an OData/Atom service over the same versions, enough for
// nuget 2.x to install (service document, $metadata, Packages(Id,Version),
// FindPackagesById).

var (
	packagesRE = regexp.MustCompile(`^Packages\(Id='([^']+)',Version='([^']+)'\)$`)
	quotedRE   = regexp.MustCompile(`^'([^']*)'$`)
)

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
		for _, v := range vs {
			if v.norm == normalize(m[2]) {
				return atom(f.entry(r, v, true)), nil
			}
		}
		return nil, format.NotFound("%s %s is not in repository %s", m[1], m[2], r.Repo.Name)
	case q == "FindPackagesById()" || q == "Packages()" || q == "Packages":
		id := r.Query.Get("id")
		if m := quotedRE.FindStringSubmatch(id); m != nil {
			id = m[1]
		}
		if id == "" {
			return nil, format.NotFound("give the package id: FindPackagesById()?id='<id>'")
		}
		vs, err := f.versions(r.Repo, id)
		if err != nil {
			return nil, err
		}
		b := base(r, r.Repo.Name) + "/"
		var body strings.Builder
		body.WriteString(`<feed xml:base="` + esc(b) + `" xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" ` +
			`xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>` + esc(b+q) + `</id><title type="text">Packages</title>`)
		for _, v := range vs {
			body.WriteString(f.entry(r, v, false))
		}
		body.WriteString(`</feed>`)
		return atom(body.String()), nil
	}
	return nil, format.NotFound("not found: %s", q)
}

// entry is a version's Atom entry; content's src is the flat container's
// .nupkg (a self-closing element, as NuGet's reader wants).
func (f *Format) entry(r *format.Request, v version, root bool) string {
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
		`<d:IsLatestVersion m:type="Edm.Boolean">false</d:IsLatestVersion><d:IsAbsoluteLatestVersion m:type="Edm.Boolean">false</d:IsAbsoluteLatestVersion>`+
		`<d:IsPrerelease m:type="Edm.Boolean">%t</d:IsPrerelease><d:Listed m:type="Edm.Boolean">true</d:Listed>`+
		`<d:DownloadCount m:type="Edm.Int32">0</d:DownloadCount></m:properties></entry>`,
		ns, esc(self), esc(self), esc(self), esc(v.ID), published, esc(v.Authors),
		esc(b+"/v3/package/"+id+"/"+v.norm+"/"+id+"."+v.norm+".nupkg"),
		esc(v.ID), esc(v.norm), esc(v.norm), esc(v.Description), esc(v.Authors), esc(strings.Join(deps, "|")), hash,
		v.art.SizeBytes, published, strings.Contains(v.norm, "-"))
}

// compareVersions orders normalized versions: numbers part by part, a
// prerelease before its release.
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
		if na != nb {
			if na < nb {
				return -1
			}
			return 1
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
	return strings.Compare(pa, pb)
}

const metadataEDMX = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"><edmx:DataServices m:DataServiceVersion="2.0" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><Schema Namespace="NuGetGallery.OData" xmlns="http://schemas.microsoft.com/ado/2006/04/edm"><EntityType Name="V2FeedPackage" m:HasStream="true"><Key><PropertyRef Name="Id"/><PropertyRef Name="Version"/></Key><Property Name="Id" Type="Edm.String" Nullable="false"/><Property Name="Version" Type="Edm.String" Nullable="false"/><Property Name="NormalizedVersion" Type="Edm.String"/><Property Name="Authors" Type="Edm.String"/><Property Name="Dependencies" Type="Edm.String"/><Property Name="Description" Type="Edm.String"/><Property Name="DownloadCount" Type="Edm.Int32" Nullable="false"/><Property Name="IsLatestVersion" Type="Edm.Boolean" Nullable="false"/><Property Name="IsAbsoluteLatestVersion" Type="Edm.Boolean" Nullable="false"/><Property Name="IsPrerelease" Type="Edm.Boolean" Nullable="false"/><Property Name="Listed" Type="Edm.Boolean" Nullable="false"/><Property Name="PackageHash" Type="Edm.String"/><Property Name="PackageHashAlgorithm" Type="Edm.String"/><Property Name="PackageSize" Type="Edm.Int64" Nullable="false"/><Property Name="Published" Type="Edm.DateTime" Nullable="false"/></EntityType></Schema><Schema Namespace="NuGetGallery" xmlns="http://schemas.microsoft.com/ado/2006/04/edm"><EntityContainer Name="V2FeedContext" m:IsDefaultEntityContainer="true"><EntitySet Name="Packages" EntityType="NuGetGallery.OData.V2FeedPackage"/><FunctionImport Name="FindPackagesById" ReturnType="Collection(NuGetGallery.OData.V2FeedPackage)" EntitySet="Packages"><Parameter Name="id" Type="Edm.String" FromQuery="true"/></FunctionImport></EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`
