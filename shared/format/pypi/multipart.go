package pypi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Limits bound the legacy upload form. The file itself is bounded by the
// blob store's upload limit; everything else is held in memory, so it
// gets its own, much smaller bounds.
type Limits struct {
	MaxParts      int   // form fields and files together
	MaxFieldBytes int64 // one text field (a long description is the big one)
	MaxFormBytes  int64 // all text fields and ignored files together
}

// DefaultLimits fit twine uploads with long READMEs.
var DefaultLimits = Limits{MaxParts: 1000, MaxFieldBytes: 4 << 20, MaxFormBytes: 8 << 20}

// Form is the text of a legacy upload: fields by name, repeated fields
// (classifiers, requires_dist) in order.
type Form struct {
	Fields map[string][]string
	// Filename is the file name of the "content" part, once seen.
	Filename string
}

// Get returns the first value of a field, "" when absent.
func (f *Form) Get(key string) string {
	if v := f.Fields[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// FileSink receives the "content" part: the form as read so far, the
// part's file name (unchecked) and its bytes. It must consume body or
// return an error.
type FileSink func(form *Form, filename string, body io.Reader) error

// ParseUpload reads a multipart/form-data upload as twine sends it. Text
// fields are collected within lim; the one "content" file part is
// streamed to sink rather than buffered, so a large wheel never sits in
// memory. Other file parts (twine's gpg_signature) are read and dropped.
func ParseUpload(body io.Reader, contentType string, lim Limits, sink FileSink) (*Form, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, format.BadRequest("upload must be multipart/form-data with a boundary")
	}
	mr := multipart.NewReader(body, params["boundary"])
	form := &Form{Fields: map[string][]string{}}
	var used int64
	seenFile := false
	for parts := 0; ; parts++ {
		// NextRawPart: a Content-Transfer-Encoding must not rewrite what
		// the client sent (the digests are of the raw bytes).
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, format.BadRequest("malformed multipart body: %v", err)
		}
		if parts >= lim.MaxParts {
			return nil, format.BadRequest("too many form parts (limit %d)", lim.MaxParts)
		}
		name, filename, isFile, err := disposition(p.Header.Get("Content-Disposition"))
		if err != nil {
			return nil, err
		}
		switch {
		case isFile && name == "content":
			if seenFile {
				return nil, format.BadRequest("more than one file in the upload")
			}
			seenFile = true
			form.Filename = filename
			if err := sink(form, filename, p); err != nil {
				return nil, err
			}
			// A sink that stopped early must not leave bytes unaccounted.
			if n, err := io.Copy(io.Discard, io.LimitReader(p, 1)); n != 0 || err != nil {
				return nil, format.BadRequest("malformed multipart body: file part not fully read")
			}
		case isFile:
			n, err := io.Copy(io.Discard, io.LimitReader(p, lim.MaxFormBytes-used+1))
			if err != nil {
				return nil, format.BadRequest("malformed multipart body: %v", err)
			}
			if used += n; used > lim.MaxFormBytes {
				return nil, format.BadRequest("form fields exceed %d bytes", lim.MaxFormBytes)
			}
		default:
			max := min(lim.MaxFieldBytes, lim.MaxFormBytes-used)
			v, err := io.ReadAll(io.LimitReader(p, max+1))
			if err != nil {
				return nil, format.BadRequest("malformed multipart body: %v", err)
			}
			if int64(len(v)) > max {
				return nil, format.BadRequest("form field %q is too large", name)
			}
			used += int64(len(v))
			form.Fields[name] = append(form.Fields[name], string(v))
		}
	}
	return form, nil
}

// disposition reads a part's form-data Content-Disposition. The file name
// is returned as sent (multipart's FileName would silently take the base
// of "../x.whl"; a bad name must be refused, not repaired).
func disposition(cd string) (name, filename string, isFile bool, err error) {
	mt, params, perr := mime.ParseMediaType(cd)
	if perr != nil || mt != "form-data" {
		return "", "", false, format.BadRequest("form part without a form-data Content-Disposition")
	}
	name = params["name"]
	if name == "" || len(name) > 256 || strings.ContainsAny(name, "\x00\r\n") {
		return "", "", false, format.BadRequest("form part with an invalid name")
	}
	filename, isFile = params["filename"]
	return name, filename, isFile, nil
}
