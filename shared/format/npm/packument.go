package npm

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
)

// Packument media types: npm install asks for the abbreviated form.
const (
	mediaJSON        = "application/json"
	mediaAbbreviated = "application/vnd.npm.install-v1+json"
)

// abbreviatedFields are the version fields the install-v1 form keeps.
var abbreviatedFields = []string{"name", "version", "dependencies", "optionalDependencies", "devDependencies",
	"peerDependencies", "peerDependenciesMeta", "bundleDependencies", "bundledDependencies", "bin", "directories",
	"engines", "os", "cpu", "dist", "deprecated", "_hasShrinkwrap", "hasInstallScript", "funding", "license"}

// wantsAbbreviated reports whether the Accept header asks for install-v1.
func wantsAbbreviated(accept string) bool { return strings.Contains(accept, mediaAbbreviated) }

// npmTime is the timestamp form npm writes (millisecond ISO 8601, UTC).
func npmTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// tarballURL is the absolute, stable URL of a tarball: under the
// registry URL, so npm sends its credentials with it.
func tarballURL(r *format.Request, repo string, n Name, file string) string {
	segs := []string{repo}
	if n.Scope != "" {
		segs = append(segs, "@"+n.Scope)
	}
	return format.URL(r, r.Prefix, append(segs, n.Base, "-", file)...)
}

// versionDoc renders one version manifest as served.
func versionDoc(r *format.Request, repo string, st *pkgState, v *version) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(v.A.Attrs, &m) // written by Publish; an unreadable record still serves name and dist
	dist := map[string]json.RawMessage{}
	_ = json.Unmarshal(m["dist"], &dist)
	dist["tarball"] = mustJSON(tarballURL(r, repo, st.Name, st.Name.File(v.Raw)))
	dist["shasum"] = mustJSON(v.A.Checksums.SHA1)
	if sri := integrity(&v.A); sri != "" {
		dist["integrity"] = mustJSON(sri)
	}
	m["dist"] = mustJSON(dist)
	m["name"] = mustJSON(st.Name.String())
	m["version"] = mustJSON(v.Raw)
	m["_id"] = mustJSON(st.Name.String() + "@" + v.Raw)
	m["_npmUser"] = mustJSON(publisher(m, v))
	if msg := st.Deprecated[v.Raw]; msg != "" {
		m["deprecated"] = mustJSON(msg)
	}
	return m
}

// publisher is who published v, as npm shows a person: the uploader's
// name, and the email their account had then (recorded at publish; none
// for versions published before it was).
func publisher(m map[string]json.RawMessage, v *version) map[string]string {
	var stored struct {
		Email string `json:"email"`
	}
	_ = json.Unmarshal(m["_npmUser"], &stored)
	p := map[string]string{"name": v.A.UploadedBy}
	if stored.Email != "" {
		p["email"] = stored.Email
	}
	return p
}

// packument renders the full document (npm view, publish, unpublish) or
// the abbreviated one (npm install).
func packument(r *format.Request, repo string, st *pkgState, abbreviated bool) map[string]any {
	versions := map[string]any{}
	times := map[string]string{"created": npmTime(st.Meta.Created), "modified": npmTime(st.Meta.Modified)}
	maintainers := []map[string]string{}
	seen := map[string]bool{}
	for i := range st.Versions {
		v := &st.Versions[i]
		m := versionDoc(r, repo, st, v)
		times[v.Raw] = npmTime(v.A.UploadedAt)
		if !seen[v.A.UploadedBy] {
			seen[v.A.UploadedBy] = true
			maintainers = append(maintainers, publisher(m, v))
		}
		if abbreviated {
			versions[v.Raw] = abbreviate(m)
			continue
		}
		versions[v.Raw] = m
	}
	if abbreviated {
		return map[string]any{"name": st.Name.String(), "modified": times["modified"], "dist-tags": st.distTags(), "versions": versions}
	}
	doc := map[string]any{
		"_id": st.Name.String(), "_rev": st.rev(), "name": st.Name.String(), "dist-tags": st.distTags(),
		"versions": versions, "time": times, "maintainers": maintainers,
	}
	if st.Meta.Description != "" {
		doc["description"] = st.Meta.Description
	}
	if st.Meta.Readme != "" {
		doc["readme"] = st.Meta.Readme
	}
	if len(st.Meta.Keywords) > 0 {
		doc["keywords"] = st.Meta.Keywords
	}
	return doc
}

// abbreviate keeps the install-v1 fields of a version manifest.
func abbreviate(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, k := range abbreviatedFields {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	var scripts map[string]json.RawMessage
	if json.Unmarshal(m["scripts"], &scripts) == nil {
		for _, s := range []string{"preinstall", "install", "postinstall"} {
			if _, ok := scripts[s]; ok {
				out["hasInstallScript"] = json.RawMessage("true")
			}
		}
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain data is rendered
	}
	return b
}
