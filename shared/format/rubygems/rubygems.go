// Package rubygems serves gem sources at /rubygems/<repo>/: gem push
// (POST api/v1/gems) and yank, the compact index (versions, info/<name>,
// names) that gem and bundler read, the legacy specs.4.8.gz,
// latest_specs.4.8.gz and prerelease_specs.4.8.gz (Ruby Marshal), and the
// gem files. A version is the artifact "gems/<file>.gem", its Attrs what
// the index says of it (from the gem's metadata.gz); a yank is a KV flag:
// the version leaves the indexes and cannot be pushed again until a REST
// delete drops the file and the flag.
package rubygems

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// Name is the repository format this package serves.
const Name = "rubygems"

// Format is the gem source.
type Format struct {
	format.Base
}

var (
	_ format.Format          = (*Format)(nil)
	_ format.ArtifactDeleter = (*Format)(nil)
)

// New returns the format over env.
func New(env *format.Env) *Format { return &Format{Base: format.NewBase(env, Name, "/rubygems")} }

// Routes implements format.Format.
func (f *Format) Routes() []format.Route {
	return []format.Route{
		{Method: http.MethodGet, Path: "/{repo}", Action: meta.ActionRead, Read: f.probe},
		{Method: http.MethodGet, Path: "/{repo}/versions", Action: meta.ActionRead, Read: f.versions},
		{Method: http.MethodGet, Path: "/{repo}/names", Action: meta.ActionRead, Read: f.names},
		{Method: http.MethodGet, Path: "/{repo}/info/{name}", Action: meta.ActionRead, Read: f.info},
		{Method: http.MethodGet, Path: "/{repo}/gems/{file}", Action: meta.ActionRead, Read: f.gem},
		{Method: http.MethodGet, Path: "/{repo}/quick/Marshal.4.8/{file}", Action: meta.ActionRead, Read: f.quickSpec},
		{Method: http.MethodGet, Path: "/{repo}/{file}", Action: meta.ActionRead, Read: f.specs},
		{Method: http.MethodPost, Path: "/{repo}/api/v1/gems", Action: meta.ActionWrite, Write: f.push},
		{Method: http.MethodDelete, Path: "/{repo}/api/v1/gems/yank", Action: meta.ActionDelete, Write: f.yank},
	}
}

// Error renders a line of text, which gem prints; 401 challenges for
// Basic (the source URL's user info).
func (f *Format) Error(r *format.Request, err error) *format.Response {
	return format.ErrorResponse(err, format.BasicChallenge, format.PlainText)
}

// spec is what the indexes say of a version.
type spec struct {
	Name     string      `json:"name"`
	Version  string      `json:"version"`
	Platform string      `json:"platform"`
	Deps     [][2]string `json:"deps"` // runtime dependencies: name, requirement ("&"-joined)
	Ruby     string      `json:"ruby,omitempty"`
	RubyGems string      `json:"rubygems,omitempty"`
	// For the legacy gemspec (quick/Marshal.4.8).
	Summary  string   `json:"summary,omitempty"`
	Authors  []string `json:"authors,omitempty"`
	Licenses []string `json:"licenses,omitempty"`
}

// full is "<version>" or "<version>-<platform>".
func (s spec) full() string {
	if s.Platform == "" || s.Platform == "ruby" {
		return s.Version
	}
	return s.Version + "-" + s.Platform
}

func (s spec) file() string { return s.Name + "-" + s.full() + ".gem" }

func yankKey(file string) string { return "yank/" + file }

type version struct {
	spec
	art meta.Artifact
}

// gems are the repository's versions (not yanked) by gem name, in
// upload order.
func (f *Format) gems(repo *meta.Repository) (map[string][]version, []string, error) {
	byName := map[string][]version{}
	err := f.Env.View(func(tx *meta.Tx) error {
		arts, err := tx.ArtifactsUnder(repo.ID, "gems/")
		for _, a := range arts {
			var s spec
			if json.Unmarshal(a.Attrs, &s) != nil {
				continue
			}
			if _, yanked := tx.KV(repo.ID, yankKey(s.file())); yanked {
				continue
			}
			byName[s.Name] = append(byName[s.Name], version{s, a})
		}
		return err
	})
	names := []string{}
	for n, vs := range byName {
		slices.SortFunc(vs, func(a, b version) int { return a.art.UploadedAt.Compare(b.art.UploadedAt) })
		names = append(names, n)
	}
	slices.Sort(names)
	return byName, names, err
}

func text(body string) *format.Response { return format.Text(http.StatusOK, body) }

// compact answers a compact index file (versions, names, info/<name>),
// tagged with the MD5 of its bytes, as rubygems.org tags them: bundler
// sends the MD5 of its copy as If-None-Match, and checks a file it
// fetched against the ETag as an MD5 (another tag fails the install:
// MisMatchedChecksumError). format.Server answers the 304.
func compact(body string) *format.Response {
	resp := text(body)
	sum := md5.Sum(resp.Body)
	resp.Header.Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	return resp
}

// probe answers gem's HEAD of the source: 2xx says the compact index is
// here.
func (f *Format) probe(ctx context.Context, r *format.Request) (*format.Response, error) {
	return text("rubygems source " + r.Repo.Name + "\n"), nil
}

// infoBody is /info/<name>: a line per version, its runtime
// dependencies and checksum.
func infoBody(vs []version) string {
	var b strings.Builder
	b.WriteString("---\n")
	for _, v := range vs {
		deps := make([]string, len(v.Deps))
		for i, d := range v.Deps {
			deps[i] = d[0] + ":" + d[1]
		}
		fmt.Fprintf(&b, "%s %s|checksum:%s", v.full(), strings.Join(deps, ","), v.art.Checksums.SHA256)
		if v.Ruby != "" {
			b.WriteString(",ruby:" + v.Ruby)
		}
		if v.RubyGems != "" {
			b.WriteString(",rubygems:" + v.RubyGems)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (f *Format) info(ctx context.Context, r *format.Request) (*format.Response, error) {
	byName, _, err := f.gems(r.Repo)
	if err != nil {
		return nil, err
	}
	vs := byName[r.Param("name")]
	if len(vs) == 0 {
		return nil, format.NotFound("gem %s is not in repository %s", r.Param("name"), r.Repo.Name)
	}
	return compact(infoBody(vs)), nil
}

// versions is the compact index's list: every gem, its versions and the
// md5 of its info file (bundler compares them).
func (f *Format) versions(ctx context.Context, r *format.Request) (*format.Response, error) {
	byName, names, err := f.gems(r.Repo)
	if err != nil {
		return nil, err
	}
	created := time.Unix(0, 0).UTC()
	for _, vs := range byName {
		if t := vs[0].art.UploadedAt.UTC(); created.Equal(time.Unix(0, 0).UTC()) || t.Before(created) {
			created = t
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "created_at: %s\n---\n", created.Format(time.RFC3339))
	for _, n := range names {
		var fulls []string
		for _, v := range byName[n] {
			fulls = append(fulls, v.full())
		}
		sum := md5.Sum([]byte(infoBody(byName[n])))
		fmt.Fprintf(&b, "%s %s %s\n", n, strings.Join(fulls, ","), hex.EncodeToString(sum[:]))
	}
	return compact(b.String()), nil
}

func (f *Format) names(ctx context.Context, r *format.Request) (*format.Response, error) {
	_, names, err := f.gems(r.Repo)
	if err != nil {
		return nil, err
	}
	return compact("---\n" + strings.Join(append(names, ""), "\n")), nil
}

func (f *Format) gem(ctx context.Context, r *format.Request) (*format.Response, error) {
	file := r.Param("file")
	var a *meta.Artifact
	err := f.Env.View(func(tx *meta.Tx) error {
		if _, yanked := tx.KV(r.Repo.ID, yankKey(file)); yanked {
			return meta.ErrNotFound
		}
		var err error
		a, err = tx.ArtifactByPath(r.Repo.ID, "gems/"+file)
		return err
	})
	if err != nil {
		return nil, format.NotFound("%s is not in repository %s", file, r.Repo.Name)
	}
	return f.Env.Serve(r, a, false)
}

// specs serves the legacy indexes: gzip'd Marshal of [name, version,
// platform] triples, all of them, the newest per gem, or the
// prereleases.
func (f *Format) specs(ctx context.Context, r *format.Request) (*format.Response, error) {
	which := r.Param("file")
	if which != "specs.4.8.gz" && which != "latest_specs.4.8.gz" && which != "prerelease_specs.4.8.gz" {
		return nil, format.NotFound("not found: %s", which)
	}
	byName, names, err := f.gems(r.Repo)
	if err != nil {
		return nil, err
	}
	var tuples []spec
	for _, n := range names {
		var latest *version
		for i, v := range byName[n] {
			pre := prerelease(v.Version)
			switch {
			case which == "prerelease_specs.4.8.gz" && pre, which == "specs.4.8.gz" && !pre:
				tuples = append(tuples, v.spec)
			case which == "latest_specs.4.8.gz" && !pre && (latest == nil || format.CompareDotted(v.Version, latest.Version) > 0):
				latest = &byName[n][i]
			}
		}
		if latest != nil {
			tuples = append(tuples, latest.spec)
		}
	}
	body, err := marshalSpecs(tuples)
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusOK)
	resp.Header.Set("Content-Type", "application/octet-stream")
	resp.Body = body
	return resp, nil
}

func (f *Format) yank(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	raw, err := format.ReadBody(r, 64<<10)
	if err != nil {
		return nil, err
	}
	form, err := parseForm(raw, r)
	if err != nil {
		return nil, err
	}
	s := spec{Name: form.Get("gem_name"), Version: form.Get("version"), Platform: form.Get("platform")}
	idx, err := w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		if _, err := tx.ArtifactByPath(r.Repo.ID, "gems/"+s.file()); err != nil {
			return nil, format.NotFound("%s %s is not in repository %s", s.Name, s.full(), r.Repo.Name)
		}
		return &meta.KVApply{RepoID: r.Repo.ID, Ops: []meta.KVOp{format.KVSet(yankKey(s.file()), true)}}, nil
	})
	if err != nil {
		return nil, err
	}
	resp := text("Successfully deleted gem: " + s.Name + " (" + s.full() + ")")
	format.SetIndex(resp.Header, idx)
	return resp, nil
}

// DeleteArtifact is a REST delete of a version: its yank flag goes in the
// same command, so the version pushed again later is offered.
func (f *Format) DeleteArtifact(ctx context.Context, r *format.Request, w *format.Writer, a *meta.Artifact) (uint64, error) {
	return w.Decide(ctx, func(tx *meta.Tx) (meta.Command, error) {
		cur, err := tx.Artifact(a.ID)
		if err != nil {
			return nil, err
		}
		c, err := w.ChangeCmd(r, r.Repo, []*meta.Artifact{cur}, nil, []meta.KVOp{format.KVDelete(yankKey(strings.TrimPrefix(cur.Path, "gems/")))})
		if err != nil {
			return nil, err
		}
		return c, nil
	})
}

// quickSpec is quick/Marshal.4.8/<file>.gemspec.rz: the version's
// Gem::Specification, Marshal'd and deflated, which gem install reads.
func (f *Format) quickSpec(ctx context.Context, r *format.Request) (*format.Response, error) {
	file, ok := strings.CutSuffix(r.Param("file"), ".gemspec.rz")
	byName, _, err := f.gems(r.Repo)
	if err != nil || !ok {
		return nil, format.NotFound("not found: %s", r.Param("file"))
	}
	for _, vs := range byName {
		for _, v := range vs {
			if v.file() == file+".gem" {
				body, err := marshalGemspec(v.spec, v.art.UploadedAt)
				if err != nil {
					return nil, err
				}
				resp := format.NewResponse(http.StatusOK)
				resp.Header.Set("Content-Type", "application/octet-stream")
				resp.Body = body
				return resp, nil
			}
		}
	}
	return nil, format.NotFound("%s is not in repository %s", r.Param("file"), r.Repo.Name)
}
