package rubygems

import (
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

const (
	maxMetadata = 512 << 10 // metadata.gz unpacked
	maxDeps     = 1000
)

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
	s, err := readGem(ctx, io.NewSectionReader(tmp, 0, size), size)
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

// readGem reads the gemspec out of a .gem: a tar whose metadata.gz is
// the gemspec, gzip'd YAML.
func readGem(ctx context.Context, gem io.Reader, size int64) (spec, error) {
	s, _, err := readGemFile(ctx, gem, size, nil)
	return s, err
}

// readGemFile is the one reading of a .gem, for uploads (readGem) and
// inspections: with files, it also lists the files of data.tar.gz, the
// gem's contents, and reads on past metadata.gz to them.
func readGemFile(ctx context.Context, gem io.Reader, size int64, files *format.FileList) (spec, format.PackageInfo, error) {
	rules := format.ArchiveRules{What: "a gem", Want: func(name string) bool { return name == "metadata.gz" }}
	if files != nil {
		rules.Want = func(name string) bool { return name == "metadata.gz" || name == "data.tar.gz" }
		rules.All = true
		rules.Done = func(got []format.Member) bool { return len(got) == 2 }
		rules.Stream = func(ctx context.Context, name string, r io.Reader, packed int64) ([]format.Member, error) {
			if name == "metadata.gz" {
				data, err := io.ReadAll(io.LimitReader(r, maxMetadata+1))
				if err != nil || len(data) > maxMetadata {
					return nil, format.BadRequest("not a gem: metadata.gz is unreadable or larger than %d bytes", maxMetadata)
				}
				return []format.Member{{Name: name, Data: data}}, nil
			}
			_, err := format.ReadTar(ctx, r, packed, format.Gzip, format.ArchiveRules{What: "a gem's data.tar.gz", All: true,
				Check: files.Check(nil), Want: func(string) bool { return false }})
			return []format.Member{{Name: name}}, err
		}
	}
	ms, err := format.ReadTar(ctx, gem, size, format.Uncompressed, rules)
	if err != nil {
		return spec{}, format.PackageInfo{}, err
	}
	var meta []byte
	for _, m := range ms {
		if m.Name == "metadata.gz" {
			meta = m.Data
		}
	}
	if meta == nil {
		return spec{}, format.PackageInfo{}, format.BadRequest("not a gem: no metadata.gz")
	}
	raw, err := format.Gunzip(meta, maxMetadata, "the gem's metadata.gz")
	if err != nil {
		return spec{}, format.PackageInfo{}, err
	}
	s, info, err := parseGemspec(raw)
	files.Fill(&info)
	return s, info, err
}

// parseSpec reads the YAML gemspec (Ruby's tags are read as plain maps).
func parseSpec(raw []byte) (spec, error) {
	s, _, err := parseGemspec(raw)
	return s, err
}

// parseGemspec is the one parser of a gemspec: what the indexes say of a
// version (spec), and what the inspector answers. Fields only the
// inspector reads are decoded as any, so that whatever they hold never
// refuses an upload.
func parseGemspec(raw []byte) (spec, format.PackageInfo, error) {
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
		Description      any       `yaml:"description"`
		Homepage         any       `yaml:"homepage"`
		Metadata         any       `yaml:"metadata"`
	}
	if err := format.DecodeYAML(raw, &g, "the gemspec"); err != nil {
		return spec{}, format.PackageInfo{}, err
	}
	// The record keeps what the indexes serve, bounded.
	s := spec{Name: g.Name, Version: g.Version.Version, Platform: g.Platform, Summary: format.Clip(g.Summary, 1024),
		Authors: format.ClipList(g.Authors, 32, 256), Licenses: format.ClipList(g.Licenses, 16, 64)}
	if len(g.Dependencies) > maxDeps {
		return spec{}, format.PackageInfo{}, format.BadRequest("the gemspec has more than %d dependencies", maxDeps)
	}
	if s.Platform == "" {
		s.Platform = "ruby"
	}
	if !nameRE.MatchString(s.Name) || !versionRE.MatchString(s.Version) || strings.ContainsAny(s.Platform, "/\\ ") {
		return spec{}, format.PackageInfo{}, format.BadRequest("the gemspec's name %q, version %q or platform %q is not valid", s.Name, s.Version, s.Platform)
	}
	meta, _ := g.Metadata.(map[string]any)
	info := format.PackageInfo{Format: Name, Name: s.Name, Version: s.full(), Summary: g.Summary, Description: format.Str(g.Description),
		Licenses: g.Licenses, Homepage: format.Str(g.Homepage), Repository: format.Str(meta["source_code_uri"])}
	var err error
	for _, d := range g.Dependencies {
		if d.Type == ":development" || d.Type == "development" {
			// Not in the indexes, so not checked: read as well as it reads.
			req, _ := requirement(&d.Requirement)
			info.Dependencies = append(info.Dependencies, format.Dependency{Name: d.Name, Constraint: constraint(req), Kind: "dev", Ecosystem: Name})
			continue
		}
		req, rerr := requirement(&d.Requirement)
		if rerr != nil || !nameRE.MatchString(d.Name) {
			err = format.BadRequest("dependency %q: %v", d.Name, rerr)
			break
		}
		s.Deps = append(s.Deps, [2]string{d.Name, req})
		info.Dependencies = append(info.Dependencies, format.Dependency{Name: d.Name, Constraint: constraint(req), Kind: "runtime", Ecosystem: Name})
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
	return s, info, err
}

// constraint writes a requirement as gem shows one (">= 1.0, < 2"),
// not in the compact index's "&"-joined form.
func constraint(req string) string { return strings.ReplaceAll(req, "&", ", ") }

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
