package api_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/depot-registry/depot/origin/origintest"
)

// TestLastAdminDeleteRace: two admins, each signed in, delete each other
// at the same moment through the HTTP API. Both handlers read "two admins"
// before either commits, so a check made only there lets both deletes
// through and leaves no administrator; the command refuses the second.
// Each round starts with exactly two admins: the survivor of the last
// round and one it creates.
func TestLastAdminDeleteRace(t *testing.T) {
	t.Parallel()
	e := origintest.Start(t, origintest.Options{})
	var me struct {
		ID string `json:"id"`
	}
	e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200).JSON(&me)
	survivor := user{id: me.ID, name: "admin", token: e.Admin}

	for round := 0; round < 20; round++ {
		name := fmt.Sprintf("admin%d", round)
		var created struct {
			ID string `json:"id"`
		}
		e.Do("POST", "/api/v1/users", survivor.token, map[string]string{"username": name, "email": name + "@example.com",
			"password": userPW, "role": "admin"}).Want(201).JSON(&created)
		admins := [2]user{survivor, {id: created.ID, name: name, token: e.Login(name, userPW)}}
		wantAdmins(t, e, survivor.token, 2)

		start := make(chan struct{})
		var wg sync.WaitGroup
		var status [2]int
		var body [2]string
		for i := range admins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				status[i], body[i] = deleteUserAs(e.URL, admins[i].token, admins[1-i].id)
			}()
		}
		close(start)
		wg.Wait()

		won := -1
		for i, st := range status {
			switch st {
			case http.StatusNoContent:
				if won >= 0 {
					t.Fatalf("round %d: both admins deleted each other (204, 204): no administrator remains", round)
				}
				won = i
			case http.StatusConflict, http.StatusUnauthorized:
				// Refused by the command (409), or the caller was already
				// deleted when its request was authenticated (401).
			default:
				t.Fatalf("round %d: %s deleting %s answered %d: %s", round, admins[i].name, admins[1-i].name, st, body[i])
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither delete succeeded: %d %s / %d %s", round, status[0], body[0], status[1], body[1])
		}
		survivor = admins[won]
		wantAdmins(t, e, survivor.token, 1)
	}
}

// deleteUserAs calls DELETE /users/:id with token; safe off the test's
// goroutine (it does not fail the test).
func deleteUserAs(base, token, id string) (int, string) {
	req, err := http.NewRequest(http.MethodDelete, base+"/api/v1/users/"+id, nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantAdmins fails unless exactly n users have the admin role.
func wantAdmins(t *testing.T, e *origintest.Env, token string, n int) {
	t.Helper()
	var list struct {
		Users []struct {
			Role string `json:"role"`
		} `json:"users"`
	}
	e.Do("GET", "/api/v1/users", token, nil).Want(200).JSON(&list)
	got := 0
	for _, u := range list.Users {
		if u.Role == "admin" {
			got++
		}
	}
	if got != n {
		t.Fatalf("%d admins, want %d", got, n)
	}
}
