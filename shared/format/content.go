package format

import (
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/depot-registry/depot/shared/meta"
)

// octetStream is the type of bytes a browser only saves.
const octetStream = "application/octet-stream"

// ServeType is the Content-Type an uploaded file is served with, from the
// type it was uploaded with (or, without one, its name's extension), and
// whether it must be an attachment. A type a browser would render or run
// (HTML, SVG and other XML, scripts, CSS, PDF, multipart, a charset other
// than UTF-8, or a type that does not parse) is served as
// application/octet-stream in an attachment: the uploader chose it, and
// the registry's origin holds its users' credentials. nosniff and the
// sandbox CSP (SetContentSafety) stay as a second line.
func ServeType(contentType, name string) (ct string, attach bool) {
	if contentType == "" {
		contentType = mime.TypeByExtension(path.Ext(name))
	}
	if contentType == "" {
		return octetStream, false
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || activeType(mt, params) {
		return octetStream, true
	}
	if ct = mime.FormatMediaType(mt, params); ct == "" {
		return octetStream, true
	}
	return ct, false
}

// activeType reports whether a browser could render or run a (parsed,
// lower-case) media type inline.
func activeType(mt string, params map[string]string) bool {
	if cs, ok := params["charset"]; ok {
		// Another charset (utf-7, utf-16...) can make bytes that look
		// inert to a filter decode as markup.
		if cs = strings.ToLower(cs); cs != "utf-8" && cs != "us-ascii" {
			return true
		}
	}
	top, sub, _ := strings.Cut(mt, "/")
	switch {
	case top == "multipart", top == "message": // may render as a web archive (MHTML)
		return true
	case sub == "xml", strings.HasSuffix(sub, "+xml"), strings.HasPrefix(sub, "xml-"): // any XML, image/svg+xml
		return true
	}
	for _, s := range []string{"html", "svg", "xsl", "script", "css", "pdf"} {
		// html: text/html, xhtml; script: javascript, ecmascript, jscript,
		// livescript, vbscript.
		if strings.Contains(sub, s) {
			return true
		}
	}
	return false
}

// SetFileHeaders sets the headers of an artifact's bytes: its type (see
// ServeType), Content-Disposition (attachment when the type is active or
// attach is set), ETag, checksums and the content safety headers. Every
// download of an artifact goes through it (format paths and the API).
func SetFileHeaders(h http.Header, a *meta.Artifact, attach bool) {
	name := path.Base(a.Path)
	ct, active := ServeType(a.ContentType, name)
	h.Set("Content-Type", ct)
	if attach || active {
		h.Set("Content-Disposition", Attachment(name))
	}
	h.Set("ETag", `"`+a.Checksums.SHA256+`"`)
	SetChecksumHeaders(h, a.Checksums)
	SetContentSafety(h)
}

// Attachment is a Content-Disposition value that makes a browser save the
// bytes as name (RFC 6266; a name beyond ASCII goes in filename*).
func Attachment(name string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}
