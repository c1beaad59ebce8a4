package api_test

import (
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestRepositoryByName: wherever the API takes a repository's id it takes
// its name too: the repository itself, a permission, a package listing,
// an edge node's assignment (one repository_id, or repository_ids), a
// webhook filter. What is stored is the id. A caller who may not read a
// repository named by name is told it is not there.
func TestRepositoryByName(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	var repo struct{ ID, Name string }
	e.Do("POST", "/api/v1/repositories", e.Admin, map[string]any{"name": "files", "format": "generic"}).Want(201).JSON(&repo)
	var got struct{ ID string }
	e.Do("GET", "/api/v1/repositories/files", e.Admin, nil).Want(200).JSON(&got)
	if got.ID != repo.ID {
		t.Fatalf("by name: %q, want %q", got.ID, repo.ID)
	}
	e.Do("PUT", "/api/v1/repositories/files", e.Admin, map[string]any{"description": "by name"}).Want(200)
	e.Do("GET", "/api/v1/packages?repository_id=files", e.Admin, nil).Want(200)

	u := newUser(e, "bob", "user")
	var perm struct {
		RepositoryID string `json:"repository_id"`
	}
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": "files", "user_id": u.id, "permissions": []string{"read"}}).
		Want(201).JSON(&perm)
	if perm.RepositoryID != repo.ID {
		t.Fatalf("a permission by name stored repository_id %q, want %q", perm.RepositoryID, repo.ID)
	}
	stranger := newUser(e, "eve", "user")
	e.Do("GET", "/api/v1/repositories/files", stranger.token, nil).WantError(404, "NOT_FOUND")
	e.Do("GET", "/api/v1/repositories/"+repo.ID, stranger.token, nil).WantError(403, "FORBIDDEN")

	var node struct{ ID string }
	e.Do("POST", "/api/v1/edge-nodes", e.Admin, map[string]string{"name": "near", "url": "http://near"}).Want(201).JSON(&node)
	var assigned struct {
		RepositoryIDs []string `json:"repository_ids"`
	}
	e.Do("POST", "/api/v1/edge-nodes/"+node.ID+"/repositories", e.Admin, map[string]any{"repository_id": "files"}).Want(200).JSON(&assigned)
	if len(assigned.RepositoryIDs) != 1 || assigned.RepositoryIDs[0] != repo.ID {
		t.Fatalf("assigned by name: %v", assigned.RepositoryIDs)
	}
	e.Do("DELETE", "/api/v1/edge-nodes/"+node.ID+"/repositories/files", e.Admin, nil).Want(200).JSON(&assigned)
	if len(assigned.RepositoryIDs) != 0 {
		t.Fatalf("unassigned by name: %v", assigned.RepositoryIDs)
	}
	e.Do("POST", "/api/v1/edge-nodes/"+node.ID+"/repositories", e.Admin, map[string]any{"repository_ids": []string{"files"}}).Want(200)

	var hook struct {
		Filters struct {
			RepositoryID string `json:"repository_id"`
		} `json:"filters"`
	}
	e.Do("POST", "/api/v1/webhooks", e.Admin, map[string]any{"url": "https://ci.example.invalid/hook", "events": []string{"*"},
		"filters": map[string]any{"repository_id": "files"}}).Want(201).JSON(&hook)
	if hook.Filters.RepositoryID != repo.ID {
		t.Fatalf("a webhook filter by name kept %q", hook.Filters.RepositoryID)
	}
	e.Do("DELETE", "/api/v1/repositories/files", e.Admin, nil).Want(204)
	e.Do("GET", "/api/v1/repositories/"+repo.ID, e.Admin, nil).WantError(404, "NOT_FOUND")
}

// TestUsersAndGroupsByName: a permission and a group's members take a
// username and a group name where they take ids; the ids are stored.
func TestUsersAndGroupsByName(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.CreateRepo("files", "generic", false)
	u := newUser(e, "carol", "user")
	var perm struct {
		UserID  string `json:"user_id"`
		GroupID string `json:"group_id"`
	}
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": "files", "user_id": "Carol", "permissions": []string{"read"}}).
		Want(201).JSON(&perm)
	if perm.UserID != u.id {
		t.Fatalf("a permission for a username stored user_id %q, want %q", perm.UserID, u.id)
	}
	var g struct {
		ID      string
		Members []string
	}
	e.Do("POST", "/api/v1/groups", e.Admin, map[string]any{"name": "devs"}).Want(201).JSON(&g)
	e.Do("POST", "/api/v1/groups/devs/members", e.Admin, map[string]any{"user_ids": []string{"carol"}}).Want(200).JSON(&g)
	if len(g.Members) != 1 || g.Members[0] != u.id {
		t.Fatalf("members by name: %v, want [%s]", g.Members, u.id)
	}
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": "files", "group_id": "devs", "permissions": []string{"write"}}).
		Want(201).JSON(&perm)
	if perm.GroupID != g.ID {
		t.Fatalf("a permission for a group name stored group_id %q, want %q", perm.GroupID, g.ID)
	}
	e.Do("POST", "/api/v1/permissions", e.Admin, map[string]any{"repository_id": "files", "user_id": "nobody", "permissions": []string{"read"}}).
		WantError(400, "VALIDATION_FAILED")
}
