//go:build wasip1

// Command terraform is an example plugin: a Terraform module registry
// (the module registry protocol, version 1) as a Depot format handler,
// written in Go and compiled to WebAssembly:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o terraform.wasm .
//
// A module's address is <registry host>/<repository>/<name>/<system>:
// the namespace of the address is a Depot repository of format
// "terraform". Terraform finds the registry's paths by service
// discovery (/.well-known/terraform.json), lists a module's versions and
// asks where to download one; the answer points at the archive, which
// the registry serves as any other file. An archive (.tar.gz) is
// published with
//
//	PUT /terraform/modules/v1/<repository>/<name>/<system>/<version>
//
// and removed with DELETE at the same path.
package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/format/plugin/sdk"
)

const base = "/modules/v1/{repo}/{name}/{system}"

// Routes, in the manifest's order.
const (
	routeVersions = iota
	routeDownload
	routeArchive
	routePublish
	routeDelete
)

func init() {
	sdk.Register(abi.Manifest{
		ID: "terraform", Name: "Terraform module registry", Version: "1.0.0", Format: "terraform", Prefix: "/terraform",
		Routes: []abi.Route{
			routeVersions: {Method: http.MethodGet, Path: base + "/versions", Action: abi.ActionRead},
			routeDownload: {Method: http.MethodGet, Path: base + "/{version}/download", Action: abi.ActionRead},
			routeArchive:  {Method: http.MethodGet, Path: base + "/{version}/{file}", Action: abi.ActionRead},
			routePublish:  {Method: http.MethodPut, Path: base + "/{version}", Action: abi.ActionWrite, Write: true},
			routeDelete:   {Method: http.MethodDelete, Path: base + "/{version}", Action: abi.ActionDelete, Write: true},
		},
		Roots: []string{"/.well-known/terraform.json"},
	}, handle)
}

var (
	nameRE    = regexp.MustCompile(`^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$`)
	systemRE  = regexp.MustCompile(`^[0-9a-z]{1,64}$`)
	versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)
)

func handle(c *abi.Call) abi.Response {
	if c.Route < 0 { // the service discovery document
		return abi.Response{Status: 200, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"modules.v1":"/terraform/modules/v1/"}`}
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
	dir := name + "/" + system + "/"
	file := name + "-" + system + "-" + version + ".tar.gz"
	switch c.Route {
	case routeVersions:
		return versions(c, dir)
	case routeDownload:
		a, err := sdk.Artifact(dir + version + "/" + file)
		if err != nil {
			return fail(500, "%v", err)
		}
		if a == nil {
			return fail(404, "module %s/%s/%s has no version %s", c.Repo.Name, name, system, version)
		}
		// Relative to this URL; ?archive= tells Terraform how to unpack it.
		return abi.Response{Status: 204, Headers: map[string]string{"X-Terraform-Get": "./" + file + "?archive=tar.gz"}}
	case routeArchive:
		if c.Params["file"] != file {
			return fail(404, "%s is not an archive of this module", c.Params["file"])
		}
		return abi.Response{File: dir + version + "/" + file}
	case routePublish:
		if err := gzipped(); err != nil {
			return fail(400, "%v", err)
		}
		return abi.Response{Status: 201, Headers: map[string]string{"Content-Type": "application/json"},
			Body:    fmt.Sprintf(`{"module":%q,"version":%q}`, c.Repo.Name+"/"+name+"/"+system, version),
			Publish: &abi.Publish{Path: dir + version + "/" + file, Package: name + "/" + system, Version: version, Type: "application/gzip"}}
	case routeDelete:
		return abi.Response{Delete: dir + version + "/" + file}
	}
	return fail(404, "not found")
}

// versions lists a module's versions, newest first.
func versions(c *abi.Call, dir string) abi.Response {
	files, err := sdk.List(dir)
	if err != nil {
		return fail(500, "%v", err)
	}
	var vs []semver
	seen := map[string]bool{}
	for _, f := range files {
		if v, ok := parse(f.Version); ok && !seen[f.Version] {
			seen[f.Version] = true
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return fail(404, "no module %s/%s", c.Repo.Name, strings.TrimSuffix(dir, "/"))
	}
	slices.SortFunc(vs, func(a, b semver) int { return b.compare(a) })
	var b strings.Builder
	b.WriteString(`{"modules":[{"versions":[`)
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"version":%q}`, v.text)
	}
	b.WriteString(`]}]}`)
	return abi.Response{Status: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: b.String()}
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

// gzipped checks the upload starts as a gzip stream does.
func gzipped() error {
	head := make([]byte, 2)
	n, err := sdk.Read(abi.UploadPath, 0, head)
	if err != nil {
		return err
	}
	if n < 2 || head[0] != 0x1f || head[1] != 0x8b {
		return fmt.Errorf("a module is published as a .tar.gz archive")
	}
	return nil
}

func fail(status int, format string, args ...any) abi.Response {
	return abi.Response{Status: status, Error: fmt.Sprintf(format, args...)}
}

func main() {}
