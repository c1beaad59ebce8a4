// Package artifactorytest is a stand-in JFrog Artifactory for migration
// tests, written from the facts of its REST API a migration reads (the
// answers' shapes as Artifactory documents them: sizes as strings, root
// paths as ".", field casing as each endpoint has it), with faults to
// inject: downloads that fail a number of times, a file served with other
// bytes than its checksums say, a connection dropped mid-file, a slow
// source.
package artifactorytest

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is the stand-in instance.
type Server struct {
	*httptest.Server
	User, Password string
	// NoStorageInfo: the storage summary is refused (a user who is not
	// an administrator of the source).
	NoStorageInfo atomic.Bool

	mu    sync.Mutex
	repos []repo
	files map[string]map[string]*File // repository -> path -> file
	// Faults, by "repo/path".
	fail      map[string]int // answer 500 this many times
	corrupt   map[string]bool
	drop      map[string]bool // close the connection halfway, every time
	delay     time.Duration   // before every download
	downloads map[string]int
	distTags  map[string]map[string]string // "repo/package" -> npm dist-tags
	users     []User
	groups    []Group
	perms     []Permission
}

// User is a user of the instance (as its security API answers one).
type User struct {
	Name   string   `json:"name"`
	Email  string   `json:"email"`
	Admin  bool     `json:"admin"`
	Realm  string   `json:"realm"`
	Groups []string `json:"groups"`
}

// Group is a group with its members.
type Group struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	UserNames   []string `json:"userNames"`
}

// Permission is a permission target (v2): repositories, patterns, and
// each user's and group's actions.
type Permission struct {
	Name         string
	Repositories []string
	Include      []string
	Users        map[string][]string
	Groups       map[string][]string
}

// AddUser, AddGroup and AddPermission add security entities.
func (s *Server) AddUser(u User) { s.mu.Lock(); s.users = append(s.users, u); s.mu.Unlock() }

func (s *Server) AddGroup(g Group) { s.mu.Lock(); s.groups = append(s.groups, g); s.mu.Unlock() }

func (s *Server) AddPermission(p Permission) {
	s.mu.Lock()
	s.perms = append(s.perms, p)
	s.mu.Unlock()
}

type repo struct {
	Key         string `json:"key"`
	Type        string `json:"type"`
	Description string `json:"description"`
	URL         string `json:"url"`
	PackageType string `json:"packageType"`
}

// File is a stored file.
type File struct {
	Data       []byte
	Created    time.Time
	CreatedBy  string
	Properties map[string][]string
	// NoSHA256: stored before Artifactory 5.5, so AQL gives no sha256.
	NoSHA256 bool
}

// New starts the instance, signing in user with password, for a test.
func New(t testing.TB, user, password string) *Server {
	s := Start(user, password)
	t.Cleanup(s.Close)
	return s
}

// Start starts the instance (a benchmark's local source); Close stops it.
func Start(user, password string) *Server {
	s := &Server{User: user, Password: password, files: map[string]map[string]*File{},
		fail: map[string]int{}, corrupt: map[string]bool{}, drop: map[string]bool{}, downloads: map[string]int{},
		distTags: map[string]map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the instance's /artifactory URL.
func (s *Server) BaseURL() string { return s.URL + "/artifactory" }

// AddRepo adds a repository (typ LOCAL, REMOTE, VIRTUAL; packageType as
// Artifactory names them: Maven, Npm, Pypi, Docker, Generic...).
func (s *Server) AddRepo(key, typ, packageType, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos = append(s.repos, repo{Key: key, Type: typ, PackageType: packageType, Description: description,
		URL: s.URL + "/artifactory/" + key})
	s.files[key] = map[string]*File{}
}

// Put stores a file.
func (s *Server) Put(repoKey, path string, f File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Created.IsZero() {
		f.Created = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	}
	if f.CreatedBy == "" {
		f.CreatedBy = "deployer"
	}
	s.files[repoKey][path] = &f
}

// SetDistTags sets an npm package's dist-tags, as Artifactory's npm API
// answers them.
func (s *Server) SetDistTags(repoKey, pkg string, tags map[string]string) {
	s.mu.Lock()
	s.distTags[repoKey+"/"+pkg] = tags
	s.mu.Unlock()
}

// Fail makes the next n downloads of a file answer 500.
func (s *Server) Fail(repoKey, path string, n int) {
	s.mu.Lock()
	s.fail[repoKey+"/"+path] = n
	s.mu.Unlock()
}

// Corrupt makes a file's downloads differ from its checksums.
func (s *Server) Corrupt(repoKey, path string) {
	s.mu.Lock()
	s.corrupt[repoKey+"/"+path] = true
	s.mu.Unlock()
}

// Drop makes a file's downloads stop halfway (the connection closed).
func (s *Server) Drop(repoKey, path string, on bool) {
	s.mu.Lock()
	s.drop[repoKey+"/"+path] = on
	s.mu.Unlock()
}

// Slow delays every download by d.
func (s *Server) Slow(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Downloads is how many times a file was downloaded whole.
func (s *Server) Downloads(repoKey, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[repoKey+"/"+path]
}

func (s *Server) authorized(r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	return ok && u == s.User && p == s.Password
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

var (
	aqlRepo   = regexp.MustCompile(`"repo"\s*:\s*\{\s*"\$eq"\s*:\s*"([^"]+)"`)
	aqlOffset = regexp.MustCompile(`\.offset\((\d+)\)`)
	aqlLimit  = regexp.MustCompile(`\.limit\((\d+)\)`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// Artifactory reads a + in a path as a space (its default,
	// security.api.plus.insteadof.space): a + itself comes as %2B.
	decoded, err := url.PathUnescape(strings.ReplaceAll(r.URL.EscapedPath(), "+", "%20"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	p := strings.TrimPrefix(decoded, "/artifactory")
	if p == decoded {
		http.NotFound(w, r)
		return
	}
	if p == "/api/system/ping" {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "OK")
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="Artifactory Realm"`)
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"errors": []map[string]any{{"status": 401, "message": "Bad credentials"}}})
		return
	}
	switch {
	case p == "/api/system/version":
		writeJSON(w, map[string]any{"version": "7.77.5", "revision": "77705900", "addons": []string{"build", "docker", "npm", "pypi"}, "license": "test"})
	case p == "/api/repositories" && r.Method == http.MethodGet:
		s.mu.Lock()
		out := slices.Clone(s.repos)
		s.mu.Unlock()
		writeJSON(w, out)
	case p == "/api/storageinfo" && s.NoStorageInfo.Load():
		w.WriteHeader(http.StatusForbidden)
		writeJSON(w, map[string]any{"errors": []map[string]any{{"status": 403, "message": "Forbidden"}}})
	case p == "/api/storageinfo":
		s.mu.Lock()
		list := []map[string]any{}
		var total int64
		for _, rp := range s.repos {
			var used int64
			for _, f := range s.files[rp.Key] {
				used += int64(len(f.Data))
			}
			total += used
			list = append(list, map[string]any{"repoKey": rp.Key, "repoType": rp.Type, "filesCount": len(s.files[rp.Key]),
				"usedSpace": fmt.Sprintf("%d bytes", used), "usedSpaceInBytes": used, "packageType": rp.PackageType})
		}
		s.mu.Unlock()
		list = append(list, map[string]any{"repoKey": "TOTAL", "usedSpaceInBytes": total})
		writeJSON(w, map[string]any{"binariesSummary": map[string]string{"binariesCount": "0"}, "repositoriesSummaryList": list})
	case p == "/api/search/aql" && r.Method == http.MethodPost:
		s.aql(w, r)
	case strings.HasPrefix(p, "/api/security/") || strings.HasPrefix(p, "/api/v2/security/"):
		s.security(w, r, p)
	case strings.HasPrefix(p, "/api/npm/"):
		rest, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/artifactory/api/npm/"))
		s.mu.Lock()
		tags, ok := s.distTags[rest]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		repoKey, pkg, _ := strings.Cut(rest, "/")
		writeJSON(w, map[string]any{"name": pkg, "dist-tags": tags, "versions": map[string]any{}, "_repo": repoKey})
	case strings.HasPrefix(p, "/api/storage/"):
		s.storage(w, r, strings.TrimPrefix(p, "/api/storage/"))
	case strings.HasPrefix(p, "/api/"):
		http.NotFound(w, r)
	default:
		s.download(w, r, strings.TrimPrefix(p, "/"))
	}
}

// aql answers items.find on one repository's files, paged.
func (s *Server) aql(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	q := string(body)
	m := aqlRepo.FindStringSubmatch(q)
	if m == nil || !strings.HasPrefix(q, "items.find(") {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "Failed to parse query")
		return
	}
	offset, limit := 0, 1<<30
	if o := aqlOffset.FindStringSubmatch(q); o != nil {
		offset, _ = strconv.Atoi(o[1])
	}
	if l := aqlLimit.FindStringSubmatch(q); l != nil {
		limit, _ = strconv.Atoi(l[1])
	}
	s.mu.Lock()
	files := s.files[m[1]]
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	results := []map[string]any{}
	for i := offset; i < len(paths) && len(results) < limit; i++ {
		p, f := paths[i], files[paths[i]]
		dir, name := ".", p
		if j := strings.LastIndexByte(p, '/'); j >= 0 {
			dir, name = p[:j], p[j+1:]
		}
		s1, s256, m5 := sha1.Sum(f.Data), sha256.Sum256(f.Data), md5.Sum(f.Data)
		item := map[string]any{"repo": m[1], "path": dir, "name": name, "type": "file", "size": strconv.Itoa(len(f.Data)),
			"created": f.Created.Format("2006-01-02T15:04:05.000Z07:00"), "created_by": f.CreatedBy,
			"modified": f.Created.Format("2006-01-02T15:04:05.000Z07:00"), "modified_by": f.CreatedBy,
			"actual_sha1": hex.EncodeToString(s1[:]), "actual_md5": hex.EncodeToString(m5[:])}
		if !f.NoSHA256 {
			item["sha256"] = hex.EncodeToString(s256[:])
		}
		results = append(results, item)
	}
	total := len(paths)
	s.mu.Unlock()
	writeJSON(w, map[string]any{"results": results, "range": map[string]any{"start_pos": offset, "end_pos": offset + len(results), "total": total}})
}

// storage answers a file's properties.
func (s *Server) storage(w http.ResponseWriter, r *http.Request, rest string) {
	repoKey, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	f := s.files[repoKey][path]
	s.mu.Unlock()
	if f == nil {
		http.NotFound(w, r)
		return
	}
	if _, ok := r.URL.Query()["properties"]; ok {
		if len(f.Properties) == 0 {
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, map[string]any{"errors": []map[string]any{{"status": 404, "message": "No properties could be found."}}})
			return
		}
		writeJSON(w, map[string]any{"uri": s.URL + "/artifactory/api/storage/" + rest, "properties": f.Properties})
		return
	}
	s1, s256, m5 := sha1.Sum(f.Data), sha256.Sum256(f.Data), md5.Sum(f.Data)
	writeJSON(w, map[string]any{"repo": repoKey, "path": "/" + path, "size": strconv.Itoa(len(f.Data)), "created": f.Created,
		"checksums": map[string]string{"sha1": hex.EncodeToString(s1[:]), "md5": hex.EncodeToString(m5[:]), "sha256": hex.EncodeToString(s256[:])}})
}

// download serves a file's bytes, with the faults asked for.
func (s *Server) download(w http.ResponseWriter, r *http.Request, rest string) {
	repoKey, path, _ := strings.Cut(rest, "/")
	key := repoKey + "/" + path
	s.mu.Lock()
	f := s.files[repoKey][path]
	failing := s.fail[key] > 0
	if failing {
		s.fail[key]--
	}
	corrupt, drop, delay := s.corrupt[key], s.drop[key], s.delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case f == nil:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"errors": []map[string]any{{"status": 404, "message": "File not found."}}})
		return
	case failing:
		w.WriteHeader(http.StatusInternalServerError)
		writeJSON(w, map[string]any{"errors": []map[string]any{{"status": 500, "message": "Could not read the binary"}}})
		return
	}
	s1, s256, m5 := sha1.Sum(f.Data), sha256.Sum256(f.Data), md5.Sum(f.Data)
	h := w.Header()
	h.Set("X-Checksum-Sha1", hex.EncodeToString(s1[:]))
	h.Set("X-Checksum-Md5", hex.EncodeToString(m5[:]))
	if !f.NoSHA256 {
		h.Set("X-Checksum-Sha256", hex.EncodeToString(s256[:]))
	}
	h.Set("Content-Length", strconv.Itoa(len(f.Data)))
	data := f.Data
	if corrupt { // the same length, other bytes
		data = slices.Clone(data)
		for i := range min(8, len(data)) {
			data[i] ^= 0xff
		}
	}
	if drop {
		w.Write(data[:len(data)/2])
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	w.Write(data)
	s.mu.Lock()
	s.downloads[key]++
	s.mu.Unlock()
}

// security answers the users, groups and permission targets.
func (s *Server) security(w http.ResponseWriter, r *http.Request, p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := s.URL + "/artifactory"
	switch {
	case p == "/api/security/users":
		out := []map[string]string{}
		for _, u := range s.users {
			out = append(out, map[string]string{"name": u.Name, "uri": base + "/api/security/users/" + u.Name, "realm": u.Realm})
		}
		writeJSON(w, out)
		return
	case p == "/api/security/groups":
		out := []map[string]string{}
		for _, g := range s.groups {
			out = append(out, map[string]string{"name": g.Name, "uri": base + "/api/security/groups/" + g.Name})
		}
		writeJSON(w, out)
		return
	case p == "/api/v2/security/permissions":
		out := []map[string]string{}
		for _, pt := range s.perms {
			out = append(out, map[string]string{"name": pt.Name, "uri": base + "/api/v2/security/permissions/" + pt.Name})
		}
		writeJSON(w, out)
		return
	}
	for _, u := range s.users {
		if p == "/api/security/users/"+u.Name {
			writeJSON(w, u)
			return
		}
	}
	for _, g := range s.groups {
		if p == "/api/security/groups/"+g.Name {
			writeJSON(w, g)
			return
		}
	}
	for _, pt := range s.perms {
		if p == "/api/v2/security/permissions/"+pt.Name {
			writeJSON(w, map[string]any{"name": pt.Name, "repo": map[string]any{"include-patterns": pt.Include, "exclude-patterns": []string{""},
				"repositories": pt.Repositories, "actions": map[string]any{"users": pt.Users, "groups": pt.Groups}}})
			return
		}
	}
	http.NotFound(w, r)
}
