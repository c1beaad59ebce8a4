package pypi

import (
	"bytes"
	"encoding/json"
	"html"
	"strconv"
	"strings"
	"time"
)

// Content types of the simple API (PEP 691).
const (
	TypeJSON     = "application/vnd.pypi.simple.v1+json"
	TypeHTML     = "application/vnd.pypi.simple.v1+html"
	TypeTextHTML = "text/html"
)

// apiVersion is the simple API version served: 1.1 adds size,
// upload-time and versions (PEP 700).
const apiVersion = "1.1"

// Negotiate picks the simple-index content type for an Accept header:
// the highest q among the types served, the earliest listed on a tie,
// "latest" meaning v1. No Accept, */* or nothing acceptable gets
// text/html, the format every pip understands.
func Negotiate(accept string) string {
	best, bestQ := TypeTextHTML, -1.0
	for i, item := range strings.Split(accept, ",") {
		if i >= 32 { // a real client lists three
			break
		}
		mt, params, _ := strings.Cut(strings.TrimSpace(item), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				} else {
					q = 0
				}
			}
		}
		var t string
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case TypeJSON, "application/vnd.pypi.simple.latest+json":
			t = TypeJSON
		case TypeHTML, "application/vnd.pypi.simple.latest+html":
			t = TypeHTML
		case TypeTextHTML, "*/*", "text/*":
			t = TypeTextHTML
		default:
			continue
		}
		if q > 0 && q > bestQ {
			best, bestQ = t, q
		}
	}
	return best
}

// IndexFile is one file on a project page.
type IndexFile struct {
	Filename       string
	URL            string // absolute, without fragment
	SHA256         string
	RequiresPython string
	MetadataSHA256 string // "" when there is no .metadata file
	Size           int64
	UploadTime     time.Time
	Version        string
}

// Project is one entry of the project list.
type Project struct {
	Name string // as uploaded
	URL  string // absolute project page URL, with its trailing slash
}

// RenderProjectList renders the root of the simple index.
func RenderProjectList(contentType string, projects []Project) []byte {
	if contentType == TypeJSON {
		type item struct {
			Name string `json:"name"`
		}
		doc := struct {
			Meta     map[string]string `json:"meta"`
			Projects []item            `json:"projects"`
		}{Meta: map[string]string{"api-version": apiVersion}, Projects: []item{}}
		for _, p := range projects {
			doc.Projects = append(doc.Projects, item{p.Name})
		}
		return mustJSON(doc)
	}
	var b bytes.Buffer
	header(&b, "Simple index")
	for _, p := range projects {
		b.WriteString(`    <a href="` + html.EscapeString(p.URL) + `">` + html.EscapeString(p.Name) + "</a><br/>\n")
	}
	footer(&b)
	return b.Bytes()
}

// RenderProject renders a project page (PEP 503 HTML or PEP 691 JSON).
// Every link carries its sha256 fragment; data-requires-python is
// HTML-escaped (">=" becomes "&gt;="); a wheel's METADATA is announced
// under both PEP 714's data-core-metadata and PEP 658's older
// data-dist-info-metadata, which pips before 23.2 read.
func RenderProject(contentType, name string, files []IndexFile) []byte {
	if contentType == TypeJSON {
		return renderProjectJSON(name, files)
	}
	var b bytes.Buffer
	header(&b, "Links for "+name)
	for _, f := range files {
		b.WriteString(`    <a href="` + html.EscapeString(f.URL+"#sha256="+f.SHA256) + `"`)
		if f.RequiresPython != "" {
			b.WriteString(` data-requires-python="` + html.EscapeString(f.RequiresPython) + `"`)
		}
		if f.MetadataSHA256 != "" {
			v := html.EscapeString("sha256=" + f.MetadataSHA256)
			b.WriteString(` data-dist-info-metadata="` + v + `" data-core-metadata="` + v + `"`)
		}
		b.WriteString(">" + html.EscapeString(f.Filename) + "</a><br/>\n")
	}
	footer(&b)
	return b.Bytes()
}

func renderProjectJSON(name string, files []IndexFile) []byte {
	type jsonFile struct {
		Filename       string            `json:"filename"`
		URL            string            `json:"url"`
		Hashes         map[string]string `json:"hashes"`
		RequiresPython *string           `json:"requires-python,omitempty"`
		CoreMetadata   map[string]string `json:"core-metadata,omitempty"`
		Size           int64             `json:"size"`
		UploadTime     string            `json:"upload-time"`
		Yanked         bool              `json:"yanked"`
	}
	doc := struct {
		Meta     map[string]string `json:"meta"`
		Name     string            `json:"name"`
		Versions []string          `json:"versions"`
		Files    []jsonFile        `json:"files"`
	}{Meta: map[string]string{"api-version": apiVersion}, Name: name, Versions: []string{}, Files: []jsonFile{}}
	seen := map[string]bool{}
	for _, f := range files {
		if !seen[f.Version] {
			seen[f.Version] = true
			doc.Versions = append(doc.Versions, f.Version)
		}
		jf := jsonFile{Filename: f.Filename, URL: f.URL, Hashes: map[string]string{"sha256": f.SHA256},
			Size:       f.Size,
			UploadTime: f.UploadTime.UTC().Format("2006-01-02T15:04:05.000000Z")}
		if f.RequiresPython != "" {
			rp := f.RequiresPython
			jf.RequiresPython = &rp
		}
		// Only PEP 714's key, and absent rather than false: pips 22.3 to
		// 23.1 crash on any value of JSON dist-info-metadata (the reason
		// PEP 714 renamed it), and Debian 12 ships pip 23.0.
		if f.MetadataSHA256 != "" {
			jf.CoreMetadata = map[string]string{"sha256": f.MetadataSHA256}
		}
		doc.Files = append(doc.Files, jf)
	}
	return mustJSON(doc)
}

func header(b *bytes.Buffer, title string) {
	t := html.EscapeString(title)
	b.WriteString("<!DOCTYPE html>\n<html>\n  <head>\n")
	b.WriteString(`    <meta name="pypi:repository-version" content="` + apiVersion + "\">\n")
	b.WriteString("    <title>" + t + "</title>\n  </head>\n  <body>\n    <h1>" + t + "</h1>\n")
}

func footer(b *bytes.Buffer) { b.WriteString("  </body>\n</html>\n") }

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain data only
	}
	return out
}
