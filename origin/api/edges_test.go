package api_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

type edgeNode struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	URL           string     `json:"url"`
	Region        string     `json:"region"`
	Status        string     `json:"status"`
	LastContact   *time.Time `json:"last_contact"`
	AppliedIndex  uint64     `json:"applied_index"`
	Lag           *uint64    `json:"lag"`
	CachedBytes   int64      `json:"cached_bytes"`
	MissingBlobs  int64      `json:"missing_blobs"`
	Version       string     `json:"version"`
	RepositoryIDs []string   `json:"repository_ids"`
	Repositories  []struct {
		ID, Name, Format string
	} `json:"repositories"`
	Token string `json:"token"`
}

func getEdge(e *origintest.Env, id string) edgeNode {
	e.T.Helper()
	var n edgeNode
	e.Do("GET", "/api/v1/edge-nodes/"+id, e.Admin, nil).Want(200).JSON(&n)
	return n
}

// TestEdgeNodes: administrators register edge nodes, which get a
// credential once; they assign and unassign repositories; a node reports
// itself with its credential, which works nowhere else and stops at once
// when the node is deregistered; the list shows each node's status.
func TestEdgeNodes(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	user := newUser(e, "dev", "user")
	e.Do("GET", "/api/v1/edge-nodes", "", nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes", user.token, nil).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/edge-nodes", user.token, map[string]string{"name": "x", "url": "http://x"}).WantError(403, "FORBIDDEN")

	var n edgeNode
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near-ci", "url": "http://10.0.0.5:8081/", "region": "eu-west"}).
		Want(201).JSON(&n)
	if n.ID == "" || !strings.HasPrefix(n.Token, "dpe_") || n.URL != "http://10.0.0.5:8081" || n.Region != "eu-west" ||
		n.Status != "offline" || n.LastContact != nil || n.Lag != nil || len(n.RepositoryIDs) != 0 {
		t.Fatalf("registered node = %+v", n)
	}
	token := n.Token
	if again := getEdge(e, n.ID); again.Token != "" {
		t.Fatal("the credential is shown again after registration")
	}
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "NEAR-CI", "url": "http://b"}).WantError(409, "CONFLICT")
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "b", "url": "ftp://b"}).WantError(400, "VALIDATION_FAILED").WantField("url")
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "../b", "url": "http://b"}).WantError(400, "VALIDATION_FAILED").WantField("name")

	libs := e.CreateRepo("libs", "generic", false)
	js := e.CreateRepo("js", "npm", true)
	var got edgeNode
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {libs, js, libs}}).Want(200).JSON(&got)
	want := []string{libs, js}
	slices.Sort(want)
	if !reflect.DeepEqual(got.RepositoryIDs, want) || len(got.Repositories) != 2 {
		t.Fatalf("assigned = %+v, want %v", got, want)
	}
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/repositories", e.Admin, map[string][]string{"repository_ids": {"nope"}}).
		WantError(400, "VALIDATION_FAILED").WantField("repository_ids")
	e.Do("POST", "/api/v1/edge-nodes/missing/repositories", e.Admin, map[string][]string{"repository_ids": {libs}}).WantError(404, "NOT_FOUND")

	// The node's credential reports for the node, and does nothing else.
	report := map[string]any{"applied_index": 3, "cached_bytes": 4096, "missing_blobs": 2, "version": "test"}
	var hb struct {
		RepositoryIDs []string `json:"repository_ids"`
		OriginIndex   uint64   `json:"origin_index"`
	}
	r := e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).Want(200).JSON(&hb)
	if !reflect.DeepEqual(hb.RepositoryIDs, want) || hb.OriginIndex < 3 || r.Header.Get("X-Depot-Index") == "" {
		t.Fatalf("heartbeat answer = %+v (index header %q)", hb, r.Header.Get("X-Depot-Index"))
	}
	// A heartbeat soon after the last one is answered but not committed.
	if r := e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).Want(200); r.Header.Get("X-Depot-Index") != "" {
		t.Error("a heartbeat 0 s after the last was committed")
	}
	got = getEdge(e, n.ID)
	if got.Status != "online" || got.LastContact == nil || got.AppliedIndex != 3 || got.Lag == nil || *got.Lag == 0 ||
		got.CachedBytes != 4096 || got.MissingBlobs != 2 || got.Version != "test" {
		t.Fatalf("after a heartbeat = %+v", got)
	}
	e.Do("POST", "/api/v1/edge-nodes/other/heartbeat", token, report).WantError(403, "FORBIDDEN")
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", e.Admin, report).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/users/me", token, nil).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes", token, nil).WantError(401, "UNAUTHORIZED")
	var repos struct {
		Repositories []struct{ ID string } `json:"repositories"`
	}
	e.Do("GET", "/api/v1/repositories", token, nil).Want(200).JSON(&repos)
	if len(repos.Repositories) != 1 || repos.Repositories[0].ID != js {
		t.Fatalf("an edge credential lists %+v, want only the public repository", repos.Repositories)
	}

	// Status from the age of the last report.
	e.Clock.Advance(time.Minute)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	if got := getEdge(e, n.ID); got.Status != "stale" {
		t.Fatalf("a minute later: status %q, want stale", got.Status)
	}
	e.Clock.Advance(10 * time.Minute)
	e.Admin = e.Login("admin", origintest.AdminPassword)
	if got := getEdge(e, n.ID); got.Status != "offline" {
		t.Fatalf("eleven minutes later: status %q, want offline", got.Status)
	}

	// Unassigning, and deleting an assigned repository.
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+libs, e.Admin, nil).Want(200).JSON(&got)
	if !reflect.DeepEqual(got.RepositoryIDs, []string{js}) {
		t.Fatalf("after unassigning libs: %v", got.RepositoryIDs)
	}
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID+"/repositories/"+libs, e.Admin, nil).WantError(404, "NOT_FOUND")
	e.Do("DELETE", "/api/v1/repositories/"+js, e.Admin, nil).Want(204)
	if got := getEdge(e, n.ID); len(got.RepositoryIDs) != 0 {
		t.Fatalf("a deleted repository is still assigned: %v", got.RepositoryIDs)
	}

	var list struct {
		EdgeNodes []edgeNode `json:"edge_nodes"`
		Total     int        `json:"total"`
	}
	e.Do("GET", "/api/v1/edge-nodes", e.Admin, nil).Want(200).JSON(&list)
	if list.Total != 1 || list.EdgeNodes[0].Name != "near-ci" {
		t.Fatalf("list = %+v", list)
	}

	// Deregistered: the credential stops at once.
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).Want(204)
	e.Do("POST", "/api/v1/edge-nodes/"+n.ID+"/heartbeat", token, report).WantError(401, "UNAUTHORIZED")
	e.Do("GET", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
	e.Do("DELETE", "/api/v1/edge-nodes/"+n.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
}
