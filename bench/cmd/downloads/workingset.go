package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/depot-registry/depot/bench/internal/origin"
)

// The working set: what a build farm asks of a registry. Many different
// blobs in a realistic mix of sizes, each client with its own
// credential, pairs drawn at random, so that neither the server's memory
// of recent answers nor a single hot file decides the figure.

// workingSet publishes n blobs to a generic repository of its own (seven
// in ten of 1-16 KiB, a quarter of 64-512 KiB, the rest 4 MiB), creates
// users with a read grant on it and an API token each, and returns the
// object wrk asks for at random: its Lua scripts (one for the depot
// targets, with the paths and the users' Basic credentials; one for
// nginx, with the files) and the files for nginx's root.
func workingSet(originURL, admin string, n, users int) (repoID string, ob *object) {
	var repo struct{ ID string }
	must(origin.Do("POST", originURL+"/api/v1/repositories", admin, `{"name":"ws","format":"generic"}`, 201, &repo))
	log.Printf("downloads: working set: %d users with a token each", users)
	var auths []string
	for i := range users {
		name, pass := fmt.Sprintf("ws-user-%02d", i), fmt.Sprintf("ws-user-pw-%02d-long", i)
		var u struct{ ID string }
		must(origin.Do("POST", originURL+"/api/v1/users", admin,
			fmt.Sprintf(`{"username":%q,"email":"%s@example.com","password":%q,"role":"user"}`, name, name, pass), 201, &u))
		must(origin.Do("POST", originURL+"/api/v1/permissions", admin,
			fmt.Sprintf(`{"repository_id":%q,"user_id":%q,"permissions":["read"]}`, repo.ID, u.ID), 201, nil))
		var sess struct {
			AccessToken string `json:"access_token"`
		}
		must(origin.Do("POST", originURL+"/api/v1/auth/login", "", fmt.Sprintf(`{"username":%q,"password":%q}`, name, pass), 200, &sess))
		var tok struct{ Token string }
		must(origin.Do("POST", originURL+"/api/v1/users/me/tokens", "Bearer "+sess.AccessToken, `{"name":"ci","scopes":["repository:read"]}`, 201, &tok))
		auths = append(auths, "Basic "+base64.StdEncoding.EncodeToString([]byte(name+":"+tok.Token)))
	}
	// The publisher: the admin, with a token of its own.
	var tok struct{ Token string }
	must(origin.Do("POST", originURL+"/api/v1/users/me/tokens", admin, `{"name":"ws-publish","scopes":["repository:write"]}`, 201, &tok))
	publish := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+tok.Token))
	log.Printf("downloads: working set: publishing %d blobs", n)
	ob = &object{name: fmt.Sprintf("working set (%d blobs, %d users)", n, users), files: map[string][]byte{}}
	var paths, files []string
	var total int64
	for i := range n {
		var size int
		switch r := mrand.IntN(100); {
		case r < 70:
			size = 1<<10 + mrand.IntN(15<<10)
		case r < 95:
			size = 64<<10 + mrand.IntN(448<<10)
		default:
			size = 4 << 20
		}
		b := make([]byte, size)
		_, _ = rand.Read(b)
		p := fmt.Sprintf("/generic/ws/lib%d/1.0/blob-%d.bin", i%50, i)
		must(origin.Do("PUT", originURL+p, publish, string(b), 201, nil))
		file := fmt.Sprintf("ws/blob-%d.bin", i)
		ob.files[file] = b
		paths, files = append(paths, p), append(files, "/"+file)
		ob.sizes = append(ob.sizes, size)
		total += int64(size)
	}
	log.Printf("downloads: working set: %d MB", total>>20)
	ob.paths, ob.auths = paths, auths
	ob.depotLua = luaScript(filepath.Join(*dir, "ws-depot.lua"), paths, auths)
	ob.nginxLua = luaScript(filepath.Join(*dir, "ws-nginx.lua"), files, nil)
	return repo.ID, ob
}

// luaScript writes a wrk script that asks for a random path of paths,
// with a random Authorization of auths (none when empty).
func luaScript(file string, paths, auths []string) string {
	var b strings.Builder
	list := func(name string, vs []string) {
		fmt.Fprintf(&b, "local %s = {\n", name)
		for _, v := range vs {
			fmt.Fprintf(&b, "  %q,\n", v)
		}
		b.WriteString("}\n")
	}
	list("paths", paths)
	list("auths", auths)
	b.WriteString(`math.randomseed(os.time() + math.floor(os.clock() * 1e6))
request = function()
  local p = paths[math.random(#paths)]
  if #auths == 0 then
    return wrk.format("GET", p)
  end
  return wrk.format("GET", p, { ["Authorization"] = auths[math.random(#auths)] })
end
`)
	must(os.WriteFile(file, []byte(b.String()), 0o644))
	return file
}
