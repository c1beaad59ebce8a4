package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
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

// generic is the registry code (apierr) each of the distribution's codes
// stands for, which is what the rest of Depot (the REST API deleting
// through this format, logs) sees.
var generic = map[string]apierr.Code{
	codeBlobUnknown:         apierr.NotFound,
	codeBlobUploadInvalid:   apierr.BadRequest,
	codeBlobUploadUnknown:   apierr.NotFound,
	codeDigestInvalid:       apierr.ValidationFailed,
	codeManifestBlobUnknown: apierr.ValidationFailed,
	codeManifestInvalid:     apierr.ValidationFailed,
	codeManifestUnknown:     apierr.NotFound,
	codeNameInvalid:         apierr.ValidationFailed,
	codeNameUnknown:         apierr.NotFound,
	codeSizeInvalid:         apierr.ValidationFailed,
	codeUnauthorized:        apierr.Unauthorized,
	codeDenied:              apierr.Forbidden,
	codeUnsupported:         apierr.MethodNotAllowed,
	codeTooManyRequests:     apierr.RateLimited,
	codePaginationInvalid:   apierr.ValidationFailed,
}

// native is the distribution's code for each registry code that reaches
// this format from the shared machinery.
var native = map[apierr.Code]string{
	apierr.NotFound:               codeNameUnknown,
	apierr.Unauthorized:           codeUnauthorized,
	apierr.Forbidden:              codeDenied,
	apierr.DemoMode:               codeDenied,
	apierr.PasswordChangeRequired: codeDenied,
	apierr.PayloadTooLarge:        codeSizeInvalid,
	apierr.RateLimited:            codeTooManyRequests,
	apierr.MethodNotAllowed:       codeUnsupported,
}

// ociError is a client error with the distribution's own code, the
// spec's optional detail and headers; Unwrap gives format.Classify the
// registry's error, whose status is the one the spec wants.
type ociError struct {
	err    *format.Error
	code   string // the distribution's
	detail any
	header []string // name, value pairs the error response carries
}

func (e *ociError) Error() string { return e.err.Message }
func (e *ociError) Unwrap() error { return e.err }

func errf(status int, code, msg string, args ...any) error {
	return &ociError{err: format.Errorf(generic[code], msg, args...).WithStatus(status), code: code}
}

// withDetail attaches the spec's detail object (e.g. the missing digest).
func withDetail(err error, detail any) error {
	var e *ociError
	if errors.As(err, &e) {
		return &ociError{err: e.err, code: e.code, detail: detail, header: e.header}
	}
	return err
}

// withHeader adds response headers to an error (a 416 says where the
// upload stands).
func withHeader(err error, kv ...string) error {
	var e *ociError
	if errors.As(err, &e) {
		return &ociError{err: e.err, code: e.code, detail: e.detail, header: append(append([]string{}, e.header...), kv...)}
	}
	return err
}

// nativeCode is the distribution's code for err, whose client error is e.
func nativeCode(err error, e *format.Error) string {
	if oe := (*ociError)(nil); errors.As(err, &oe) {
		return oe.code
	}
	if ns := (*format.NotServedError)(nil); errors.As(err, &ns) {
		return codeUnsupported
	}
	if c, ok := native[e.Code]; ok {
		return c
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
	var fe *format.Error
	if errors.As(err, &oe) && oe.detail != nil {
		detail = oe.detail
	} else if errors.As(err, &fe) && len(fe.Details) > 0 {
		detail = fe.Details // a policy's name and advisories
	}
	resp := format.ErrorResponse(err, challenge(r), func(e *format.Error) (string, []byte) {
		b, _ := json.Marshal(errorBody{Errors: []errorItem{{Code: nativeCode(err, e), Message: e.Message, Detail: detail}}})
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

// scopeOf is the scope a request needs: the action its route requires
// (pull to read, pull,push to write, an upload session's status
// included, delete to delete) on its image, and pull on the source of a
// cross-repository mount. A client asks for a token with exactly this,
// and a token carries only what it asked for.
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
	action := r.Action
	if action == "" {
		// No route matched (yet): what the method would need.
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			action = meta.ActionRead
		case http.MethodDelete:
			action = meta.ActionDelete
		default:
			action = meta.ActionWrite
		}
	}
	scope := "repository:" + t.Name + ":" + tokenAction(action)
	if action == meta.ActionWrite {
		scope = "repository:" + t.Name + ":" + actionPull + "," + actionPush
	}
	if t.Kind == KindUploads && r.Method == http.MethodPost && r.Query.Get("mount") != "" {
		if from, err := ParseName(r.Query.Get("from")); err == nil && from.String() != t.Name {
			scope += " repository:" + from.String() + ":" + actionPull
		}
	}
	return scope
}
