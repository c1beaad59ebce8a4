//go:build wasip1

// Command terraform is an example plugin: a Terraform registry (the
// module registry protocol and the provider registry protocol, version
// 1) as a Depot format handler, written in Go and compiled to
// WebAssembly:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o terraform.wasm .
//
// The namespace of an address is a Depot repository of format
// "terraform": a module is <host>/<repository>/<name>/<system>, a
// provider <host>/<repository>/<type>. Terraform finds the registry's
// paths by service discovery (/.well-known/terraform.json).
//
// A module's archive (.tar.gz) is published with
//
//	PUT /terraform/modules/v1/<repository>/<name>/<system>/<version>
//
// and removed with DELETE at the same path. A provider's release is what
// its release tooling makes: the zips, the SHA256SUMS file and its
// detached signature (and, optionally, the manifest naming its protocol
// versions), each published with
//
//	PUT /terraform/providers/v1/<repository>/<type>/<version>/<file name>
//
// and the public key that signed the sums with
//
//	PUT /terraform/providers/v1/<repository>/gpg-keys/<key id>
//
// Terraform checks a provider's zip against the sums, and the sums'
// signature against the repository's keys.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/format/plugin/sdk"
)

const (
	modules   = "/modules/v1/{repo}/{name}/{system}"
	providers = "/providers/v1/{repo}/{type}"
)

// Routes, in the manifest's order.
const (
	routeVersions = iota
	routeDownload
	routeArchive
	routePublish
	routeDelete
	routeProviderVersions
	routeProviderDownload
	routeProviderFile
	routeProviderPublish
	routeProviderKey
)

func init() {
	sdk.Register(abi.Manifest{
		ID: "terraform", Name: "Terraform registry", Version: "1.1.0", Format: "terraform", Prefix: "/terraform",
		Routes: []abi.Route{
			routeVersions:         {Method: http.MethodGet, Path: modules + "/versions", Action: abi.ActionRead},
			routeDownload:         {Method: http.MethodGet, Path: modules + "/{version}/download", Action: abi.ActionRead, Presign: true},
			routeArchive:          {Method: http.MethodGet, Path: modules + "/{version}/{file}", Action: abi.ActionRead},
			routePublish:          {Method: http.MethodPut, Path: modules + "/{version}", Action: abi.ActionWrite, Write: true},
			routeDelete:           {Method: http.MethodDelete, Path: modules + "/{version}", Action: abi.ActionDelete, Write: true},
			routeProviderVersions: {Method: http.MethodGet, Path: providers + "/versions", Action: abi.ActionRead},
			routeProviderDownload: {Method: http.MethodGet, Path: providers + "/{version}/download/{os}/{arch}", Action: abi.ActionRead, Presign: true},
			routeProviderFile:     {Method: http.MethodGet, Path: providers + "/{version}/{file}", Action: abi.ActionRead},
			routeProviderPublish:  {Method: http.MethodPut, Path: providers + "/{version}/{file}", Action: abi.ActionWrite, Write: true},
			routeProviderKey:      {Method: http.MethodPut, Path: "/providers/v1/{repo}/gpg-keys/{key}", Action: abi.ActionWrite, Write: true},
		},
		Roots: []string{"/.well-known/terraform.json"},
		Setup: []abi.Snippet{
			{Title: "~/.terraformrc (Terraform's credentials for this registry)", Text: "credentials \"{host}\" {\n  token = \"<API token>\"\n}"},
			{Title: "A module", Text: "module \"greet\" {\n  source  = \"{host}/{repo}/greet/aws\"\n  version = \"~> 1.0\"\n}"},
			{Title: "A provider", Text: "terraform {\n  required_providers {\n    greet = { source = \"{host}/{repo}/greet\", version = \"~> 1.0\" }\n  }\n}"},
			{Title: "Publish a module (a .tar.gz)", Text: "curl -u {user}:<API token> -T greet.tar.gz {base}/terraform/modules/v1/{repo}/greet/aws/1.0.0"},
			{Title: "Publish a provider release (each file its release tooling made, and the signing key)",
				Text: "curl -u {user}:<API token> -T key.asc {base}/terraform/providers/v1/{repo}/gpg-keys/<key id>\n" +
					"for f in terraform-provider-greet_1.0.0_*; do\n" +
					"  curl -u {user}:<API token> -T $f {base}/terraform/providers/v1/{repo}/greet/1.0.0/$f\ndone"},
		},
	}, handle)
}

var (
	nameRE    = regexp.MustCompile(`^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$`)
	systemRE  = regexp.MustCompile(`^[0-9a-z]{1,64}$`)
	versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)
	keyRE     = regexp.MustCompile(`^[0-9A-F]{16}$`)
)

func handle(c *abi.Call) abi.Response {
	switch {
	case c.Route < 0: // the service discovery document
		return document(`{"modules.v1":"/terraform/modules/v1/","providers.v1":"/terraform/providers/v1/"}`)
	case c.Route >= routeProviderVersions:
		return provider(c)
	}
	name, system, version := c.Params["name"], c.Params["system"], c.Params["version"]
	switch {
	case !nameRE.MatchString(name):
		return fail(400, "module name %q is 1 to 64 letters, digits, dashes and underscores", name)
	case !systemRE.MatchString(system):
		return fail(400, "target system %q is 1 to 64 lowercase letters and digits", system)
	case c.Route != routeVersions && !versionRE.MatchString(version):
		return fail(400, "version %q is not a semantic version", version)
	}
	dir := "modules/" + name + "/" + system + "/"
	file := name + "-" + system + "-" + version + ".tar.gz"
	switch c.Route {
	case routeVersions:
		vs, err := versions(dir)
		if err != nil {
			return fail(500, "%v", err)
		}
		if len(vs) == 0 {
			return fail(404, "no module %s/%s/%s", c.Repo.Name, name, system)
		}
		var b strings.Builder
		b.WriteString(`{"modules":[{"versions":[`)
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"version":%q}`, v.text)
		}
		b.WriteString(`]}]}`)
		return document(b.String())
	case routeDownload:
		a, err := sdk.Artifact(dir + version + "/" + file)
		if err != nil {
			return fail(500, "%v", err)
		}
		if a == nil {
			return fail(404, "module %s/%s/%s has no version %s", c.Repo.Name, name, system, version)
		}
		// Relative to this URL; ?archive= tells Terraform how to unpack it.
		// Terraform sends no credentials for the archive: the URL is
		// presigned.
		return abi.Response{Status: 204, Headers: map[string]string{"X-Terraform-Get": "./" + file + "?archive=tar.gz" + and(c.Presigned)}}
	case routeArchive:
		if c.Params["file"] != file {
			return fail(404, "%s is not an archive of this module", c.Params["file"])
		}
		return abi.Response{File: dir + version + "/" + file}
	case routePublish:
		if err := starts([]byte{0x1f, 0x8b}); err != nil {
			return fail(400, "a module is published as a .tar.gz archive")
		}
		return abi.Response{Status: 201, Headers: map[string]string{"Content-Type": "application/json"},
			Body:    fmt.Sprintf(`{"module":%q,"version":%q}`, c.Repo.Name+"/"+name+"/"+system, version),
			Publish: &abi.Publish{Path: dir + version + "/" + file, Package: name + "/" + system, Version: version, Type: "application/gzip"}}
	case routeDelete:
		return abi.Response{Delete: dir + version + "/" + file}
	}
	return fail(404, "not found")
}

// provider serves the provider registry protocol's routes.
func provider(c *abi.Call) abi.Response {
	if c.Route == routeProviderKey {
		id := strings.ToUpper(c.Params["key"])
		if !keyRE.MatchString(id) {
			return fail(400, "a key is named by its id: 16 hexadecimal digits")
		}
		if err := starts([]byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")); err != nil {
			return fail(400, "a key is published as an ASCII-armored OpenPGP public key")
		}
		return abi.Response{Status: 201, Publish: &abi.Publish{Path: "gpg-keys/" + id + ".asc", Package: "gpg-keys", Version: id,
			Type: "application/pgp-keys", Overwrite: true}}
	}
	typ, version := c.Params["type"], c.Params["version"]
	switch {
	case !systemRE.MatchString(typ):
		return fail(400, "provider type %q is 1 to 64 lowercase letters and digits", typ)
	case c.Route != routeProviderVersions && !versionRE.MatchString(version):
		return fail(400, "version %q is not a semantic version", version)
	}
	dir := "providers/" + typ + "/"
	prefix := "terraform-provider-" + typ + "_" + version + "_"
	switch c.Route {
	case routeProviderVersions:
		return providerVersions(c, typ, dir)
	case routeProviderDownload:
		return providerDownload(c, typ, version, dir+version+"/", prefix)
	case routeProviderFile:
		return abi.Response{File: dir + version + "/" + c.Params["file"]}
	case routeProviderPublish:
		file := c.Params["file"]
		kind, ok := strings.CutPrefix(file, prefix)
		if !ok {
			return fail(400, "a file of %s %s is named %s...", typ, version, prefix)
		}
		switch {
		case kind == "SHA256SUMS", kind == "SHA256SUMS.sig", kind == "manifest.json":
		case strings.HasSuffix(kind, ".zip") && strings.Count(kind, "_") == 1:
			if err := starts([]byte("PK\x03\x04")); err != nil {
				return fail(400, "%s is not a zip", file)
			}
		default:
			return fail(400, "a release holds %s<os>_<arch>.zip, %sSHA256SUMS, %sSHA256SUMS.sig and %smanifest.json", prefix, prefix, prefix, prefix)
		}
		return abi.Response{Status: 201, Publish: &abi.Publish{Path: dir + version + "/" + file, Package: "provider/" + typ, Version: version}}
	}
	return fail(404, "not found")
}

// providerVersions lists a provider's versions with their protocols and
// platforms, newest first.
func providerVersions(c *abi.Call, typ, dir string) abi.Response {
	vs, err := versions(dir)
	if err != nil {
		return fail(500, "%v", err)
	}
	type platform struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	type entry struct {
		Version   string     `json:"version"`
		Protocols []string   `json:"protocols"`
		Platforms []platform `json:"platforms"`
	}
	var out struct {
		Versions []entry `json:"versions"`
	}
	for _, v := range vs {
		e := entry{Version: v.text, Protocols: protocols(dir + v.text + "/terraform-provider-" + typ + "_" + v.text + "_manifest.json"), Platforms: []platform{}}
		for _, f := range v.files {
			name := f.Path[strings.LastIndexByte(f.Path, '/')+1:]
			if osArch, ok := strings.CutSuffix(strings.TrimPrefix(name, "terraform-provider-"+typ+"_"+v.text+"_"), ".zip"); ok && osArch != name {
				if os, arch, ok := strings.Cut(osArch, "_"); ok {
					e.Platforms = append(e.Platforms, platform{os, arch})
				}
			}
		}
		if len(e.Platforms) > 0 {
			out.Versions = append(out.Versions, e)
		}
	}
	if len(out.Versions) == 0 {
		return fail(404, "no provider %s/%s", c.Repo.Name, typ)
	}
	b, _ := json.Marshal(out)
	return document(string(b))
}

// providerDownload says where a platform's package is, with its sums,
// their signature and the keys that may have made it.
func providerDownload(c *abi.Call, typ, version, dir, prefix string) abi.Response {
	zip := prefix + c.Params["os"] + "_" + c.Params["arch"] + ".zip"
	a, err := sdk.Artifact(dir + zip)
	if err != nil {
		return fail(500, "%v", err)
	}
	if a == nil {
		return fail(404, "provider %s/%s %s has no package for %s_%s", c.Repo.Name, typ, version, c.Params["os"], c.Params["arch"])
	}
	for _, f := range []string{"SHA256SUMS", "SHA256SUMS.sig"} {
		if s, err := sdk.Artifact(dir + prefix + f); err != nil || s == nil {
			return fail(404, "provider %s/%s %s has no %s%s: Terraform installs only signed releases", c.Repo.Name, typ, version, prefix, f)
		}
	}
	keys, err := sdk.List("gpg-keys/")
	if err != nil {
		return fail(500, "%v", err)
	}
	type key struct {
		KeyID      string `json:"key_id"`
		ASCIIArmor string `json:"ascii_armor"`
	}
	var gpg []key
	for _, k := range keys {
		armor, err := readAll(k.Path, 64<<10)
		if err != nil {
			return fail(500, "%v", err)
		}
		gpg = append(gpg, key{KeyID: k.Version, ASCIIArmor: string(armor)})
	}
	// Terraform sends no credentials for these: the URLs are presigned.
	base := c.BaseURL + c.Prefix + "/providers/v1/" + c.Repo.Name + "/" + typ + "/" + version + "/"
	query := ""
	if c.Presigned != "" {
		query = "?" + c.Presigned
	}
	b, _ := json.Marshal(map[string]any{
		"protocols": protocols(dir + prefix + "manifest.json"), "os": c.Params["os"], "arch": c.Params["arch"],
		"filename": zip, "download_url": base + zip + query, "shasum": a.SHA256,
		"shasums_url": base + prefix + "SHA256SUMS" + query, "shasums_signature_url": base + prefix + "SHA256SUMS.sig" + query,
		"signing_keys": map[string]any{"gpg_public_keys": gpg},
	})
	return document(string(b))
}

// protocols are the plugin protocol versions a release's manifest names
// (5.0 when it has none).
func protocols(manifest string) []string {
	b, err := readAll(manifest, 64<<10)
	var m struct {
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err != nil || json.Unmarshal(b, &m) != nil || len(m.Metadata.ProtocolVersions) == 0 {
		return []string{"5.0"}
	}
	return m.Metadata.ProtocolVersions
}

// release is a version and its files.
type release struct {
	semver
	files []abi.Artifact
}

// versions lists the versions of the files under dir, newest first.
func versions(dir string) ([]release, error) {
	files, err := sdk.List(dir)
	if err != nil {
		return nil, err
	}
	var vs []release
	for _, f := range files {
		i := slices.IndexFunc(vs, func(r release) bool { return r.text == f.Version })
		if i < 0 {
			v, ok := parse(f.Version)
			if !ok {
				continue
			}
			vs = append(vs, release{semver: v})
			i = len(vs) - 1
		}
		vs[i].files = append(vs[i].files, f)
	}
	slices.SortFunc(vs, func(a, b release) int { return b.compare(a.semver) })
	return vs, nil
}

// semver is a parsed semantic version.
type semver struct {
	text    string
	nums    [3]int
	pre     string
	release bool
}

func parse(s string) (semver, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return semver{}, false
	}
	v := semver{text: s, pre: m[4], release: m[4] == ""}
	for i := range 3 {
		v.nums[i], _ = strconv.Atoi(m[i+1])
	}
	return v, true
}

// compare orders versions, a release after its pre-releases.
func (a semver) compare(b semver) int {
	for i := range 3 {
		if a.nums[i] != b.nums[i] {
			return a.nums[i] - b.nums[i]
		}
	}
	switch {
	case a.release == b.release:
		return strings.Compare(a.pre, b.pre)
	case a.release:
		return 1
	}
	return -1
}

// starts checks the upload starts with magic.
func starts(magic []byte) error {
	head := make([]byte, len(magic))
	n, err := sdk.Read(abi.UploadPath, 0, head)
	if err != nil {
		return err
	}
	if n < len(magic) || !bytes.Equal(head, magic) {
		return fmt.Errorf("not the expected file")
	}
	return nil
}

// readAll reads a file of the repository whole, up to max bytes.
func readAll(path string, max int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 32<<10)
	for len(out) < max {
		n, err := sdk.Read(path, int64(len(out)), buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
	return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
}

// and is "&" + query, or "" for none.
func and(query string) string {
	if query == "" {
		return ""
	}
	return "&" + query
}

func document(body string) abi.Response {
	return abi.Response{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: body}
}

func fail(status int, format string, args ...any) abi.Response {
	return abi.Response{Status: status, Error: fmt.Sprintf(format, args...)}
}

func main() {}
