// Package artifactory reads a JFrog Artifactory instance over its REST
// API, for a migration: the instance's version, its repositories, the
// files of a repository page by page (AQL, so a repository of any size
// is never listed into memory at once), a file's bytes and its
// properties. Answers are read within bounds and leniently where
// Artifactory's own answers vary (sizes as strings or numbers, field
// casing).
package artifactory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrUnauthorized is the source refusing the credentials.
var ErrUnauthorized = errors.New("the source refused the credentials (401)")

// maxAnswer bounds a JSON answer read from the source.
const maxAnswer = 32 << 20

// Client reads one Artifactory instance.
type Client struct {
	base     string // ".../artifactory", no trailing slash
	user     string
	password string
	http     *http.Client
}

// New is a client of the instance at base (its /artifactory URL; a URL
// without that path gets it), signing in with user and password (an API
// key or an access token when user is empty: sent as a bearer token).
func New(base, user, password string, client *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the source URL %q is not an http(s) URL", base)
	}
	if !strings.HasSuffix(u.Path, "/artifactory") {
		u.Path += "/artifactory"
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &Client{base: u.String(), user: user, password: password, http: client}, nil
}

// URL is the instance's /artifactory URL.
func (c *Client) URL() string { return c.base }

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	switch {
	case c.user != "":
		req.SetBasicAuth(c.user, c.password)
	case c.password != "":
		req.Header.Set("Authorization", "Bearer "+c.password)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the source did not answer: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, ErrUnauthorized
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, &StatusError{Status: resp.StatusCode, Path: path, Body: strings.TrimSpace(string(msg))}
	}
	return resp, nil
}

// StatusError is an answer of the source other than a success.
type StatusError struct {
	Status     int
	Path, Body string
}

func (e *StatusError) Error() string {
	if e.Body != "" {
		return fmt.Sprintf("the source answered %d to %s: %s", e.Status, e.Path, e.Body)
	}
	return fmt.Sprintf("the source answered %d to %s", e.Status, e.Path)
}

// getJSON decodes a JSON answer within maxAnswer.
func (c *Client) getJSON(ctx context.Context, method, path string, body io.Reader, v any) error {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the source's answer to %s: %w", path, err)
	}
	if len(raw) > maxAnswer {
		return fmt.Errorf("the source's answer to %s is larger than %d bytes", path, maxAnswer)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the source's answer to %s is not the JSON expected: %w", path, err)
	}
	return nil
}

// Ping checks that the instance answers and takes the credentials (the
// ping answers anyone: a repository listing checks the credentials).
func (c *Client) Ping(ctx context.Context) error {
	resp, err := c.request(ctx, http.MethodGet, "/api/system/ping", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if strings.TrimSpace(string(body)) != "OK" {
		return fmt.Errorf("%s does not answer as Artifactory does (GET /api/system/ping: %q)", c.base, body)
	}
	return nil
}

// Version is the instance's version.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	err := c.getJSON(ctx, http.MethodGet, "/api/system/version", nil, &v)
	return v.Version, err
}

// Repo is a repository of the instance.
type Repo struct {
	Key         string `json:"key"`
	Type        string `json:"type"` // LOCAL, REMOTE, VIRTUAL, FEDERATED...
	PackageType string `json:"packageType"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

// Local reports whether the repository holds files of its own.
func (r Repo) Local() bool {
	return strings.EqualFold(r.Type, "local") || strings.EqualFold(r.Type, "federated")
}

// Repositories lists the instance's repositories.
func (c *Client) Repositories(ctx context.Context) ([]Repo, error) {
	var out []Repo
	err := c.getJSON(ctx, http.MethodGet, "/api/repositories", nil, &out)
	return out, err
}

// Item is a file of a repository, as AQL describes it.
type Item struct {
	Repo       string    `json:"repo"`
	Path       string    `json:"path"` // the folder, "." at the root
	Name       string    `json:"name"`
	Size       flexInt   `json:"size"`
	SHA256     string    `json:"sha256"`
	SHA1       string    `json:"actual_sha1"`
	MD5        string    `json:"actual_md5"`
	Created    time.Time `json:"created"`
	CreatedBy  string    `json:"created_by"`
	Modified   time.Time `json:"modified"`
	ModifiedBy string    `json:"modified_by"`
}

// FullPath is the file's path in its repository.
func (it Item) FullPath() string {
	if it.Path == "" || it.Path == "." {
		return it.Name
	}
	return strings.Trim(it.Path, "/") + "/" + it.Name
}

// Page is a page of a repository's files, and how many it holds.
type Page struct {
	Items []Item
	Total int64
}

// Items lists a page of a repository's files (limit of them from
// offset on, in path order) with AQL.
func (c *Client) Items(ctx context.Context, repo string, offset, limit int) (Page, error) {
	q := fmt.Sprintf(`items.find({"repo":{"$eq":%s},"type":"file"}).include("repo","path","name","size","sha256","actual_sha1","actual_md5","created","created_by","modified","modified_by").sort({"$asc":["path","name"]}).offset(%d).limit(%d)`,
		strconv.Quote(repo), offset, limit)
	var ans struct {
		Results []Item `json:"results"`
		Range   struct {
			Total        flexInt `json:"total"`
			Notification string  `json:"notification"`
		} `json:"range"`
	}
	resp, err := c.request(ctx, http.MethodPost, "/api/search/aql", strings.NewReader(q))
	if err != nil {
		return Page{}, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&ans); err != nil {
		return Page{}, fmt.Errorf("the source's AQL answer is not the JSON expected: %w", err)
	}
	return Page{Items: ans.Results, Total: int64(ans.Range.Total)}, nil
}

// Open downloads a file of a repository.
func (c *Client) Open(ctx context.Context, repo, path string) (io.ReadCloser, error) {
	resp, err := c.request(ctx, http.MethodGet, "/"+url.PathEscape(repo)+"/"+escapePath(path), nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Properties are a file's properties (each possibly multi-valued).
func (c *Client) Properties(ctx context.Context, repo, path string) (map[string][]string, error) {
	var ans struct {
		Properties map[string][]string `json:"properties"`
	}
	err := c.getJSON(ctx, http.MethodGet, "/api/storage/"+url.PathEscape(repo)+"/"+escapePath(path)+"?properties", nil, &ans)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return nil, nil // none set
	}
	return ans.Properties, err
}

// NpmDistTags are the dist-tags of an npm package of a repository, from
// the packument Artifactory serves npm.
func (c *Client) NpmDistTags(ctx context.Context, repo, pkg string) (map[string]string, error) {
	var ans struct {
		DistTags map[string]string `json:"dist-tags"`
	}
	err := c.getJSON(ctx, http.MethodGet, "/api/npm/"+url.PathEscape(repo)+"/"+strings.Replace(url.PathEscape(pkg), "%2F", "%2f", 1), nil, &ans)
	return ans.DistTags, err
}

// escapePath escapes each segment of a path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		// A + is escaped too: Artifactory reads a bare one as a space.
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	return strings.Join(segs, "/")
}

// flexInt reads a number written as a number or as a string (Artifactory
// writes sizes both ways).
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*f = flexInt(n)
	return nil
}

// User is a user of the instance.
type User struct {
	Name   string   `json:"name"`
	Email  string   `json:"email"`
	Admin  bool     `json:"admin"`
	Realm  string   `json:"realm"`
	Groups []string `json:"groups"`
}

// Users lists the instance's users, with their details (one request
// each, as Artifactory answers them).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var list []struct {
		Name string `json:"name"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/api/security/users", nil, &list); err != nil {
		return nil, err
	}
	out := make([]User, 0, len(list))
	for _, u := range list {
		var d User
		if err := c.getJSON(ctx, http.MethodGet, "/api/security/users/"+url.PathEscape(u.Name), nil, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Group is a group of the instance, with its members.
type Group struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	UserNames   []string `json:"userNames"`
}

// Groups lists the instance's groups with their members.
func (c *Client) Groups(ctx context.Context) ([]Group, error) {
	var list []struct {
		Name string `json:"name"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/api/security/groups", nil, &list); err != nil {
		return nil, err
	}
	out := make([]Group, 0, len(list))
	for _, g := range list {
		var d Group
		if err := c.getJSON(ctx, http.MethodGet, "/api/security/groups/"+url.PathEscape(g.Name)+"?includeUsers=true", nil, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Permission is a permission target (v2): the repositories it covers
// (names, or ANY, ANY LOCAL, ANY REMOTE), its patterns, and the actions
// of each user and group (read, write, annotate, delete, manage).
type Permission struct {
	Name string `json:"name"`
	Repo struct {
		Include      []string `json:"include-patterns"`
		Exclude      []string `json:"exclude-patterns"`
		Repositories []string `json:"repositories"`
		Actions      struct {
			Users  map[string][]string `json:"users"`
			Groups map[string][]string `json:"groups"`
		} `json:"actions"`
	} `json:"repo"`
}

// Permissions lists the instance's permission targets.
func (c *Client) Permissions(ctx context.Context) ([]Permission, error) {
	var list []struct {
		Name string `json:"name"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/api/v2/security/permissions", nil, &list); err != nil {
		return nil, err
	}
	out := make([]Permission, 0, len(list))
	for _, p := range list {
		var d Permission
		if err := c.getJSON(ctx, http.MethodGet, "/api/v2/security/permissions/"+url.PathEscape(p.Name), nil, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// UsedBytes is the space each repository uses at the source (its
// storage summary, an administrator's view), by key.
func (c *Client) UsedBytes(ctx context.Context) (map[string]int64, error) {
	var ans struct {
		Repos []struct {
			Key  string  `json:"repoKey"`
			Used flexInt `json:"usedSpaceInBytes"`
		} `json:"repositoriesSummaryList"`
	}
	if err := c.getJSON(ctx, http.MethodGet, "/api/storageinfo", nil, &ans); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range ans.Repos {
		out[r.Key] = int64(r.Used)
	}
	return out, nil
}
