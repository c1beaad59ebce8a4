package rubygems

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/depot-registry/depot/shared/format"
)

const maxMetadata = 4 << 20 // metadata.gz unpacked

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9A-Za-z]+)*$`)
	reqRE     = regexp.MustCompile(`^(=|!=|>|<|>=|<=|~>) ?[0-9]+(\.[0-9A-Za-z]+)*$`)
)

// push stores a gem: a tar whose metadata.gz is its gemspec in YAML.
func (f *Format) push(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	tmp, size, remove, err := w.SpillUpload(r, "rubygems", 0)
	if err != nil {
		return nil, err
	}
	defer remove()
	s, err := readGem(io.NewSectionReader(tmp, 0, size))
	if err != nil {
		return nil, err
	}
	attrs, _ := json.Marshal(s)
	_, idx, err := w.Store(ctx, r, format.Upload{Repo: r.Repo, Path: "gems/" + s.file(), Package: s.Name, Version: s.full(),
		ContentType: "application/octet-stream", Body: io.NewSectionReader(tmp, 0, size), Overwrite: format.OverwriteNever, Attrs: attrs})
	if err != nil {
		return nil, err
	}
	resp := text("Successfully registered gem: " + s.Name + " (" + s.full() + ")")
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// readGem reads the gemspec out of a .gem.
func readGem(gem io.Reader) (spec, error) {
	bad := func(why string, args ...any) error { return format.BadRequest("not a gem: "+why, args...) }
	tr := tar.NewReader(gem)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return spec{}, bad("no metadata.gz")
		}
		if err != nil {
			return spec{}, bad("%v", err)
		}
		if h.Name != "metadata.gz" {
			continue
		}
		zr, err := gzip.NewReader(tr)
		if err != nil {
			return spec{}, bad("metadata.gz: %v", err)
		}
		raw, err := io.ReadAll(io.LimitReader(zr, maxMetadata+1))
		if err != nil || len(raw) > maxMetadata {
			return spec{}, bad("metadata.gz is unreadable or unpacks to more than %d bytes", maxMetadata)
		}
		return parseSpec(raw)
	}
}

// parseSpec reads the YAML gemspec (Ruby's tags are read as plain maps).
func parseSpec(raw []byte) (spec, error) {
	var g struct {
		Name    string `yaml:"name"`
		Version struct {
			Version string `yaml:"version"`
		} `yaml:"version"`
		Platform     string   `yaml:"platform"`
		Summary      string   `yaml:"summary"`
		Authors      []string `yaml:"authors"`
		Licenses     []string `yaml:"licenses"`
		Dependencies []struct {
			Name        string    `yaml:"name"`
			Type        string    `yaml:"type"`
			Requirement yaml.Node `yaml:"requirement"`
		} `yaml:"dependencies"`
		RequiredRuby     yaml.Node `yaml:"required_ruby_version"`
		RequiredRubyGems yaml.Node `yaml:"required_rubygems_version"`
	}
	if err := yaml.Unmarshal(raw, &g); err != nil {
		return spec{}, format.BadRequest("the gemspec is not YAML: %v", err)
	}
	s := spec{Name: g.Name, Version: g.Version.Version, Platform: g.Platform, Summary: g.Summary, Authors: g.Authors, Licenses: g.Licenses}
	if s.Platform == "" {
		s.Platform = "ruby"
	}
	if !nameRE.MatchString(s.Name) || !versionRE.MatchString(s.Version) || strings.ContainsAny(s.Platform, "/\\ ") {
		return spec{}, format.BadRequest("the gemspec's name %q, version %q or platform %q is not valid", s.Name, s.Version, s.Platform)
	}
	var err error
	for _, d := range g.Dependencies {
		if d.Type == ":development" || d.Type == "development" {
			continue
		}
		req, rerr := requirement(&d.Requirement)
		if rerr != nil || !nameRE.MatchString(d.Name) {
			err = format.BadRequest("dependency %q: %v", d.Name, rerr)
			break
		}
		s.Deps = append(s.Deps, [2]string{d.Name, req})
	}
	if err == nil {
		s.Ruby, err = requirement(&g.RequiredRuby)
	}
	if err == nil {
		s.RubyGems, err = requirement(&g.RequiredRubyGems)
	}
	if s.Ruby == ">= 0" {
		s.Ruby = ""
	}
	if s.RubyGems == ">= 0" {
		s.RubyGems = ""
	}
	return s, err
}

// requirement turns a Gem::Requirement ({requirements: [[op, {version}]]})
// into the compact index's "op v&op v".
func requirement(n *yaml.Node) (string, error) {
	if n.Kind == 0 {
		return "", nil
	}
	var req struct {
		Requirements [][]yaml.Node `yaml:"requirements"`
	}
	if err := n.Decode(&req); err != nil {
		return "", err
	}
	var parts []string
	for _, pair := range req.Requirements {
		if len(pair) != 2 {
			return "", errors.New("a requirement is an operator and a version")
		}
		var op string
		var v struct {
			Version string `yaml:"version"`
		}
		if pair[0].Decode(&op) != nil || pair[1].Decode(&v) != nil {
			return "", errors.New("unreadable requirement")
		}
		p := op + " " + v.Version
		if !reqRE.MatchString(p) {
			return "", errors.New("unreadable requirement " + strconv.Quote(p))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "&"), nil
}

// parseForm reads the yank form from the body or the query.
func parseForm(raw []byte, r *format.Request) (url.Values, error) {
	form := r.Query
	if len(raw) > 0 {
		v, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, format.BadRequest("the form: %v", err)
		}
		form = v
	}
	if form.Get("gem_name") == "" || form.Get("version") == "" {
		return nil, format.BadRequest("gem_name and version are required")
	}
	return form, nil
}
