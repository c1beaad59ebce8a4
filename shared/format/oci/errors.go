package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/depot-registry/depot/shared/format"
)

// Error codes of the distribution spec.
const (
	codeBlobUnknown         = "BLOB_UNKNOWN"
	codeBlobUploadInvalid   = "BLOB_UPLOAD_INVALID"
	codeBlobUploadUnknown   = "BLOB_UPLOAD_UNKNOWN"
	codeDigestInvalid       = "DIGEST_INVALID"
	codeManifestBlobUnknown = "MANIFEST_BLOB_UNKNOWN"
	codeManifestInvalid     = "MANIFEST_INVALID"
	codeManifestUnknown     = "MANIFEST_UNKNOWN"
	codeNameInvalid         = "NAME_INVALID"
	codeNameUnknown         = "NAME_UNKNOWN"
	codeSizeInvalid         = "SIZE_INVALID"
	codeUnauthorized        = "UNAUTHORIZED"
	codeDenied              = "DENIED"
	codeUnsupported         = "UNSUPPORTED"
	codeTooManyRequests     = "TOOMANYREQUESTS"
	codePaginationInvalid   = "PAGINATION_NUMBER_INVALID"
	codeUnknown             = "UNKNOWN" // distribution's code for anything else
)

// ociError is a format.Error with the spec's optional detail; Unwrap lets
// format.Classify see the status and code.
type ociError struct {
	err    *format.Error
	detail any
	header []string // name, value pairs the error response carries
}

func (e *ociError) Error() string { return e.err.Message }
func (e *ociError) Unwrap() error { return e.err }

func errf(status int, code, msg string, args ...any) error {
	return &ociError{err: format.Errorf(status, code, msg, args...)}
}

// withDetail attaches the spec's detail object (e.g. the missing digest).
func withDetail(err error, detail any) error {
	var e *ociError
	if errors.As(err, &e) {
		return &ociError{err: e.err, detail: detail, header: e.header}
	}
	return err
}

// withHeader adds response headers to an error (a 416 says where the
// upload stands).
func withHeader(err error, kv ...string) error {
	var e *ociError
	if errors.As(err, &e) {
		return &ociError{err: e.err, detail: e.detail, header: append(append([]string{}, e.header...), kv...)}
	}
	return err
}

// nativeCode maps the shared machinery's codes to the distribution's.
func nativeCode(e *format.Error) string {
	switch e.Code {
	case "NOT_FOUND":
		return codeNameUnknown
	case "UNAUTHORIZED":
		return codeUnauthorized
	case "FORBIDDEN", "DEMO_MODE":
		return codeDenied
	case "PAYLOAD_TOO_LARGE":
		return codeSizeInvalid
	case "TOO_MANY_REQUESTS", "RATE_LIMITED":
		return codeTooManyRequests
	case "UNSUPPORTED":
		return codeUnsupported
	}
	for _, c := range []string{codeBlobUnknown, codeBlobUploadInvalid, codeBlobUploadUnknown, codeDigestInvalid,
		codeManifestBlobUnknown, codeManifestInvalid, codeManifestUnknown, codeNameInvalid, codeNameUnknown,
		codeSizeInvalid, codeUnauthorized, codeDenied, codeUnsupported, codeTooManyRequests, codePaginationInvalid} {
		if e.Code == c {
			return c
		}
	}
	return codeUnknown
}

type errorBody struct {
	Errors []errorItem `json:"errors"`
}

type errorItem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Detail  any    `json:"detail"`
}

// Error renders err as {"errors":[{code,message,detail}]}; a 401 carries
// exactly one Bearer challenge pointing at our token endpoint.
func (f *Format) Error(r *format.Request, err error) *format.Response {
	if rnf := (*format.RepoNotFoundError)(nil); errors.As(err, &rnf) {
		err = nameUnknown(r.Param("name"))
	}
	var detail any = map[string]any{}
	var oe *ociError
	if errors.As(err, &oe) && oe.detail != nil {
		detail = oe.detail
	}
	resp := format.ErrorResponse(err, challenge(r), func(e *format.Error) (string, []byte) {
		b, _ := json.Marshal(errorBody{Errors: []errorItem{{Code: nativeCode(e), Message: e.Message, Detail: detail}}})
		return "application/json", b
	})
	resp.Header.Set(apiVersionHeader, apiVersion)
	if oe != nil {
		for i := 0; i+1 < len(oe.header); i += 2 {
			resp.Header.Set(oe.header[i], oe.header[i+1])
		}
	}
	return resp
}

const (
	apiVersionHeader = "Docker-Distribution-API-Version"
	apiVersion       = "registry/2.0"
)

// challenge is the Bearer challenge: the realm is our absolute token URL,
// the service our host, and the scope the one this request needs (docker
// asks for it by name when it got none from the ping).
func challenge(r *format.Request) string {
	c := fmt.Sprintf(`Bearer realm=%q,service=%q`, format.URL(r, Prefix, "token"), service(r))
	if sc := scopeOf(r); sc != "" {
		c += fmt.Sprintf(`,scope=%q`, sc)
	}
	return c
}

func scopeOf(r *format.Request) string {
	if r.Path == "/_catalog" {
		return "registry:catalog:*"
	}
	t, ok := ParsePath(r.Path)
	if !ok {
		return ""
	}
	if _, err := ParseName(t.Name); err != nil {
		return ""
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return "repository:" + t.Name + ":pull"
	}
	return "repository:" + t.Name + ":pull,push"
}
