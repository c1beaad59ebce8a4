package pypi

import (
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Bounds on the fields kept in an artifact's Attrs (they travel in a Raft
// command). PyPI caps the summary at 512 characters too.
const (
	maxSummary        = 512
	maxRequiresPython = 256
	maxShortField     = 64
)

// UploadMeta is a validated legacy upload form.
type UploadMeta struct {
	Name            string // as the client wrote it (shown in the index)
	Project         string // normalized
	Version         string
	Filename        string
	Dist            Dist
	SHA256, MD5     string // announced digests, lowercase hex ("" when absent)
	RequiresPython  string
	Summary         string
	PyVersion       string
	MetadataVersion string
}

// Path is the artifact path of the file.
func (m *UploadMeta) Path() string { return m.Project + "/" + m.Version + "/" + m.Filename }

// CheckUpload validates a complete upload form: the action, the project
// name and version, a file name that belongs to them and agrees with
// filetype, and well-formed digests (at least one, so the bytes can be
// verified).
func CheckUpload(f *Form) (*UploadMeta, error) {
	switch a := f.Get(":action"); a {
	case "file_upload":
	case "":
		return nil, format.BadRequest(":action is missing; only file_upload is supported")
	default:
		return nil, format.BadRequest("unsupported :action %q; only file_upload is supported", trunc(a))
	}
	if v := f.Get("protocol_version"); v != "" && v != "1" {
		return nil, format.BadRequest("unsupported protocol_version %q", trunc(v))
	}
	m := &UploadMeta{Name: strings.TrimSpace(f.Get("name")), Version: strings.TrimSpace(f.Get("version")), Filename: f.Filename}
	if err := CheckName(m.Name); err != nil {
		return nil, err
	}
	if err := CheckVersion(m.Version); err != nil {
		return nil, err
	}
	m.Project = Normalize(m.Name)
	if m.Filename == "" {
		return nil, format.BadRequest("the upload has no file: send it as the form part \"content\"")
	}
	d, err := CheckFilename(m.Name, m.Version, m.Filename)
	if err != nil {
		return nil, err
	}
	m.Dist = d
	if ft := f.Get("filetype"); ft != "" && ft != d.Kind {
		return nil, format.BadRequest("filetype %q does not match file %q (a %s)", trunc(ft), m.Filename, d.Kind)
	}
	m.SHA256 = strings.ToLower(strings.TrimSpace(f.Get("sha256_digest")))
	m.MD5 = strings.ToLower(strings.TrimSpace(f.Get("md5_digest")))
	if m.SHA256 == "" && m.MD5 == "" {
		return nil, format.BadRequest("include at least one message digest: sha256_digest or md5_digest")
	}
	if m.SHA256 != "" && !isHex(m.SHA256, 64) {
		return nil, format.BadRequest("sha256_digest is not 64 hex digits")
	}
	if m.MD5 != "" && !isHex(m.MD5, 32) {
		return nil, format.BadRequest("md5_digest is not 32 hex digits")
	}
	m.RequiresPython = strings.TrimSpace(f.Get("requires_python"))
	m.Summary = strings.TrimSpace(f.Get("summary"))
	m.PyVersion = f.Get("pyversion")
	m.MetadataVersion = f.Get("metadata_version")
	switch {
	case len(m.RequiresPython) > maxRequiresPython:
		return nil, format.BadRequest("requires_python is longer than %d bytes", maxRequiresPython)
	case len(m.Summary) > maxSummary:
		return nil, format.BadRequest("summary is longer than %d bytes", maxSummary)
	case strings.ContainsAny(m.Summary, "\r\n"):
		return nil, format.BadRequest("summary must be a single line")
	case len(m.PyVersion) > maxShortField || len(m.MetadataVersion) > maxShortField:
		return nil, format.BadRequest("pyversion or metadata_version is too long")
	}
	return m, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

// trunc keeps client-supplied values in error messages short.
func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
