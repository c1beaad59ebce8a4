package npm

import (
	"net/http"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// Kind is what an npm request asks for.
type Kind int

// The npm endpoints.
const (
	KindPing          Kind = iota + 1 // GET  -/ping
	KindWhoami                        // GET  -/whoami
	KindSearch                        // GET  -/v1/search
	KindTags                          // GET  -/package/<name>/dist-tags
	KindTagPut                        // PUT  -/package/<name>/dist-tags/<tag>
	KindTagDelete                     // DELETE -/package/<name>/dist-tags/<tag>
	KindPackument                     // GET  <name>
	KindPublish                       // PUT  <name> (publish, or deprecate without attachments)
	KindVersion                       // GET  <name>/<version or tag>
	KindTarball                       // GET  <name>/-/<file>
	KindRevPut                        // PUT  <name>/-rev/<rev> (unpublish step 2)
	KindPackageDelete                 // DELETE <name>/-rev/<rev>
	KindTarballDelete                 // DELETE <name>/-/<file>/-rev/<rev>
)

// Endpoint is a routed npm request.
type Endpoint struct {
	Kind Kind
	Repo string
	Name Name
	// Spec is the version or tag (KindVersion) or the dist-tag (KindTag*).
	Spec string
	File string // tarball file name
	Rev  string
}

// maxPath bounds the paths the router looks at.
const maxPath = 2048

// ParseRoute routes a request path below the format prefix
// ("/<repo>/..."; percent-decoded, so npm's "@scope%2fname" arrives as
// "@scope/name"). Names, tags and files are validated here, so handlers
// only see safe values.
func ParseRoute(method, path string) (Endpoint, error) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if len(path) > maxPath {
		return Endpoint{}, format.BadRequest("path too long")
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 2 || segs[len(segs)-1] == "" && len(segs) == 2 {
		return Endpoint{}, notServed(method, path)
	}
	e := Endpoint{Repo: segs[0]}
	if err := format.CheckSegment("repository", e.Repo); err != nil {
		return Endpoint{}, err
	}
	rest := segs[1:]
	if rest[0] == "-" {
		return e.special(method, path, rest[1:])
	}
	name, rest, err := splitName(rest)
	if err != nil {
		return Endpoint{}, err
	}
	e.Name = name
	switch {
	case len(rest) == 0 && method == http.MethodGet:
		e.Kind = KindPackument
	case len(rest) == 0 && method == http.MethodPut:
		e.Kind = KindPublish
	case len(rest) == 1 && method == http.MethodGet && rest[0] != "-" && rest[0] != "-rev":
		e.Kind, e.Spec = KindVersion, rest[0]
		if err := format.CheckSegment("version", e.Spec); err != nil {
			return Endpoint{}, err
		}
	case len(rest) == 2 && rest[0] == "-" && method == http.MethodGet:
		e.Kind, e.File = KindTarball, rest[1]
	case len(rest) == 2 && rest[0] == "-rev" && method == http.MethodPut:
		e.Kind, e.Rev = KindRevPut, rest[1]
	case len(rest) == 2 && rest[0] == "-rev" && method == http.MethodDelete:
		e.Kind, e.Rev = KindPackageDelete, rest[1]
	case len(rest) == 4 && rest[0] == "-" && rest[2] == "-rev" && method == http.MethodDelete:
		e.Kind, e.File, e.Rev = KindTarballDelete, rest[1], rest[3]
	default:
		return Endpoint{}, notServed(method, path)
	}
	if e.Kind == KindTarball || e.Kind == KindTarballDelete {
		if err := format.CheckSegment("file name", e.File); err != nil {
			return Endpoint{}, err
		}
	}
	if e.Kind == KindRevPut || e.Kind == KindPackageDelete || e.Kind == KindTarballDelete {
		if err := format.CheckSegment("revision", e.Rev); err != nil {
			return Endpoint{}, err
		}
	}
	return e, nil
}

// special routes the registry's own paths under "-/".
func (e Endpoint) special(method, path string, rest []string) (Endpoint, error) {
	switch {
	case len(rest) == 1 && rest[0] == "ping" && method == http.MethodGet:
		e.Kind = KindPing
		return e, nil
	case len(rest) == 1 && rest[0] == "whoami" && method == http.MethodGet:
		e.Kind = KindWhoami
		return e, nil
	case len(rest) == 2 && rest[0] == "v1" && rest[1] == "search" && method == http.MethodGet:
		e.Kind = KindSearch
		return e, nil
	case len(rest) >= 3 && rest[0] == "package":
		name, tail, err := splitName(rest[1:])
		if err != nil {
			return Endpoint{}, err
		}
		e.Name = name
		switch {
		case len(tail) == 1 && tail[0] == "dist-tags" && method == http.MethodGet:
			e.Kind = KindTags
			return e, nil
		case len(tail) == 2 && tail[0] == "dist-tags" && (method == http.MethodPut || method == http.MethodDelete):
			e.Kind, e.Spec = KindTagPut, tail[1]
			if method == http.MethodDelete {
				e.Kind = KindTagDelete
			}
			return e, CheckTag(e.Spec)
		}
	}
	return Endpoint{}, notServed(method, path)
}

// splitName takes the package name off the front of segs: one segment,
// or two for "@scope/name".
func splitName(segs []string) (Name, []string, error) {
	n := 1
	if strings.HasPrefix(segs[0], "@") {
		if len(segs) < 2 {
			return Name{}, nil, format.BadRequest("scoped package name %q must be @scope/name", segs[0])
		}
		n = 2
	}
	name, err := ParseName(strings.Join(segs[:n], "/"))
	return name, segs[n:], err
}

func notServed(method, path string) error {
	return format.NotFound("%s %s is not an npm registry path", method, path)
}
