// Package all is the one list of package formats. Adding a format is one
// package under shared/format and one line here.
package all

import (
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/composer"
	"github.com/depot-registry/depot/shared/format/conda"
	"github.com/depot-registry/depot/shared/format/crates"
	"github.com/depot-registry/depot/shared/format/generic"
	"github.com/depot-registry/depot/shared/format/goproxy"
	"github.com/depot-registry/depot/shared/format/helm"
	"github.com/depot-registry/depot/shared/format/maven"
	"github.com/depot-registry/depot/shared/format/npm"
	"github.com/depot-registry/depot/shared/format/nuget"
	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/format/pypi"
	"github.com/depot-registry/depot/shared/format/rubygems"
)

// Entry is one format identifier and, once it has client paths, its
// constructor.
type Entry struct {
	Name string
	New  func(*format.Env) format.Format
}

// entries lists every format identifier a repository may have. Formats
// without a constructor are accepted for repositories before their client
// paths exist.
var entries = []Entry{
	{Name: "docker", New: func(e *format.Env) format.Format { return oci.New(e) }},
	{Name: "maven", New: func(e *format.Env) format.Format { return maven.New(e) }}, // serves gradle too
	{Name: "gradle"},
	{Name: "npm", New: func(e *format.Env) format.Format { return npm.New(e) }},
	{Name: "pypi", New: func(e *format.Env) format.Format { return pypi.New(e) }},
	{Name: "crates", New: func(e *format.Env) format.Format { return crates.New(e) }},
	{Name: "helm", New: func(e *format.Env) format.Format { return helm.New(e) }},
	{Name: "go", New: func(e *format.Env) format.Format { return goproxy.New(e) }},
	{Name: "nuget", New: func(e *format.Env) format.Format { return nuget.New(e) }},
	{Name: "rubygems", New: func(e *format.Env) format.Format { return rubygems.New(e) }},
	{Name: "composer", New: func(e *format.Env) format.Format { return composer.New(e) }},
	{Name: "conda", New: func(e *format.Env) format.Format { return conda.New(e) }},
	{Name: generic.Name, New: func(e *format.Env) format.Format { return generic.New(e) }},
}

// Known reports whether name is a format identifier.
func Known(name string) bool {
	for _, e := range entries {
		if e.Name == name {
			return true
		}
	}
	return false
}

// Names lists the format identifiers.
func Names() []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}

// Build constructs every format that has client paths.
func Build(env *format.Env) []format.Format {
	var out []format.Format
	for _, e := range entries {
		if e.New != nil {
			out = append(out, e.New(env))
		}
	}
	return out
}
