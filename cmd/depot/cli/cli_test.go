package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// user is a user of the command line: an environment of its own (no
// variable of the test process reaches it) and a config file.
type user struct {
	t   *testing.T
	env map[string]string
}

func newUser(t *testing.T) *user {
	return &user{t: t, env: map[string]string{"DEPOT_CONFIG": filepath.Join(t.TempDir(), "depot", "config.json")}}
}

// result is a finished command.
type result struct {
	code           int
	stdout, stderr string
	args           []string
	t              *testing.T
}

// run runs depot with args, stdin as standard input.
func (u *user) run(stdin string, args ...string) *result {
	u.t.Helper()
	var out, errb strings.Builder
	code := Run(args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errb,
		Lookup: func(k string) (string, bool) { v, ok := u.env[k]; return v, ok }})
	return &result{code: code, stdout: out.String(), stderr: errb.String(), args: args, t: u.t}
}

// ok fails the test unless the command exited 0; it returns stdout.
func (r *result) ok() string {
	r.t.Helper()
	if r.code != 0 {
		r.t.Fatalf("depot %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails fails the test unless the command exited code with a message
// containing want on stderr.
func (r *result) fails(code int, want string) {
	r.t.Helper()
	if r.code != code || !strings.Contains(r.stderr, want) {
		r.t.Fatalf("depot %s: exit %d (want %d), stderr %q (want %q); stdout %q", strings.Join(r.args, " "), r.code, code,
			r.stderr, want, r.stdout)
	}
}

// jsonOf decodes a command's JSON output.
func jsonOf[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, out)
	}
	return v
}

// names are the values of key in a JSON array of objects.
func names(t *testing.T, out, key string) []string {
	t.Helper()
	var got []string
	for _, m := range jsonOf[[]map[string]any](t, out) {
		got = append(got, m[key].(string))
	}
	return got
}

func startOrigin(t *testing.T) *origintest.Env {
	return origintest.Start(t, origintest.Options{Config: func(c *origin.Config) {
		c.Webhooks.AllowPrivate = true // the test's receiver is on loopback
	}})
}

// TestCLI drives the command line against a real origin, as an operator
// scripts it: login, every resource's list, create and delete, JSON and
// table output, the server's refusals, logout.
func TestCLI(t *testing.T) {
	e := startOrigin(t)
	admin := newUser(t)
	cfgPath := admin.env["DEPOT_CONFIG"]

	// Login: the password on standard input, the config 0600 in a 0700
	// directory, without the password, with a token that works.
	out := admin.run(origintest.AdminPassword+"\n", "login", "--url", e.URL+"/", "--username", "admin", "--password-stdin").ok()
	if !strings.Contains(out, "Signed in to "+e.URL+" as admin") {
		t.Errorf("login said %q", out)
	}
	st, err := os.Stat(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(cfgPath)); dst.Mode().Perm() != 0o700 {
		t.Errorf("config directory mode %v, want 0700", dst.Mode().Perm())
	}
	raw, _ := os.ReadFile(cfgPath)
	if strings.Contains(string(raw), origintest.AdminPassword) {
		t.Fatalf("the config holds the password: %s", raw)
	}
	cfg := jsonOf[userConfig](t, string(raw))
	if cfg.URL != e.URL || cfg.Username != "admin" || !strings.HasPrefix(cfg.TokenName, "depot-cli ") || cfg.TokenID == "" {
		t.Fatalf("config %+v", cfg)
	}
	e.Do("GET", "/api/v1/users/me/tokens", cfg.Token, nil).Want(200)
	if entries, _ := os.ReadDir(filepath.Dir(cfgPath)); len(entries) != 1 {
		t.Errorf("the config directory holds %d files (a temporary file left?)", len(entries))
	}

	t.Run("repo", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		out := admin.run("", "repo", "create", "files", "--format", "generic", "--description", "build outputs", "--public").ok()
		if !strings.Contains(out, "Name:") || !strings.Contains(out, "files") || !strings.Contains(out, "build outputs") {
			t.Errorf("create printed %q", out)
		}
		// The server's validation, shown as it is, and a failure.
		admin.run("", "repo", "create", "odd", "--format", "no-such-format").fails(1, "format")
		admin.run("", "repo", "create", "files", "--format", "generic").fails(1, "CONFLICT")

		table := admin.run("", "repo", "list").ok()
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME ") || !strings.HasPrefix(lines[1], "files ") ||
			!strings.Contains(lines[1], "generic") || strings.Index(lines[0], "FORMAT") != strings.Index(lines[1], "generic") {
			t.Errorf("table:\n%s", table)
		}
		list := jsonOf[[]map[string]any](t, admin.run("", "repo", "list", "--output", "json").ok())
		if len(list) != 1 || list[0]["name"] != "files" || list[0]["settings"] == nil {
			t.Errorf("json list (the server's objects, every field): %v", list)
		}
		admin.env["DEPOT_OUTPUT"] = "json"
		one := jsonOf[map[string]any](t, admin.run("", "repo", "show", "files").ok())
		delete(admin.env, "DEPOT_OUTPUT")
		if one["id"] != list[0]["id"] || one["description"] != "build outputs" {
			t.Errorf("show: %v", one)
		}
		if got := admin.run("", "repo", "list", "--format", "npm", "--output", "json").ok(); strings.TrimSpace(got) != "[]" {
			t.Errorf("filtered list: %q", got)
		}
		if out := admin.run("", "repo", "delete", "files").ok(); !strings.Contains(out, "deleted repository files") {
			t.Errorf("delete printed %q", out)
		}
		admin.run("", "repo", "show", "files").fails(1, "NOT_FOUND")
	})

	t.Run("user", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		admin.run("alice-pw-Secret1\n", "user", "create", "alice", "--email", "alice@example.com", "--role", "viewer",
			"--password-stdin").ok()
		e.Login("alice", "alice-pw-Secret1")
		admin.run("", "user", "create", "mallory", "--role", "emperor", "--password-stdin").fails(2, "standard input holds no password")
		admin.run("pw-Secret-123\n", "user", "create", "mallory", "--email", "m@example.com", "--role", "emperor", "--password-stdin").fails(1, "role")
		if got := names(t, admin.run("", "user", "list", "--output", "json").ok(), "username"); strings.Join(got, ",") != "admin,alice" {
			t.Errorf("users %v", got)
		}
		if table := admin.run("", "user", "list").ok(); !strings.Contains(table, "alice@example.com") || !strings.Contains(table, "viewer") {
			t.Errorf("table:\n%s", table)
		}
		admin.run("", "user", "delete", "ALICE").ok() // usernames are told apart ignoring case
		admin.run("", "user", "delete", "alice").fails(1, `no user "alice"`)
		if got := names(t, admin.run("", "user", "list", "--output", "json").ok(), "username"); strings.Join(got, ",") != "admin" {
			t.Errorf("users after the delete %v", got)
		}
	})

	t.Run("disable and enable", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		admin.run("carol-pw-Secret1\n", "user", "create", "carol", "--email", "carol@example.com", "--role", "user",
			"--password-stdin").ok()
		carol := newUser(t)
		carol.run("carol-pw-Secret1\n", "login", "--url", e.URL, "--username", "carol", "--password-stdin").ok()
		stored := jsonOf[userConfig](t, string(must(os.ReadFile(carol.env["DEPOT_CONFIG"]))))
		session := e.Login("carol", "carol-pw-Secret1")
		e.Do("GET", "/api/v1/users/me", stored.Token, nil).Want(200)
		row := func(username string) (header, line string) {
			t.Helper()
			lines := strings.Split(strings.TrimSpace(admin.run("", "user", "list").ok()), "\n")
			for _, l := range lines[1:] {
				if strings.HasPrefix(l, username+" ") {
					return lines[0], l
				}
			}
			t.Fatalf("no row of %s:\n%s", username, strings.Join(lines, "\n"))
			return "", ""
		}
		status := func(username, want string) {
			t.Helper()
			header, line := row(username)
			col := strings.Index(header, "STATUS")
			if col < 0 || !strings.HasPrefix(line[col:], want+" ") || !strings.Contains(line, " local ") {
				t.Errorf("%s is not shown %s (and local):\n%s\n%s", username, want, header, line)
			}
		}
		status("carol", "active")

		out := admin.run("", "user", "disable", "carol").ok()
		for _, want := range []string{"disabled user carol", "sessions were ended", "API tokens revoked at once",
			"depot user enable carol"} {
			if !strings.Contains(out, want) {
				t.Errorf("disable said %q, lacking %q", out, want)
			}
		}
		// Both the API token depot login stored and the session stop.
		e.Do("GET", "/api/v1/users/me", stored.Token, nil).WantError(401, "UNAUTHORIZED")
		e.Do("GET", "/api/v1/users/me", session, nil).WantError(401, "UNAUTHORIZED")
		carol.run("", "repo", "list").fails(1, "run depot login again")
		carol.run("carol-pw-Secret1\n", "login", "--password-stdin").fails(1, "refused the sign-in of carol")
		status("carol", "disabled")
		status("admin", "active")
		for _, u := range jsonOf[[]map[string]any](t, admin.run("", "user", "list", "--output", "json").ok()) {
			if want := u["username"] == "carol"; u["disabled"] != want {
				t.Errorf("json list: %v", u)
			}
		}

		// Enabled again by id, with the server's JSON: the password works,
		// the revoked token stays revoked.
		_, line := row("carol")
		id := strings.Fields(line)[len(strings.Fields(line))-1]
		got := jsonOf[map[string]any](t, admin.run("", "user", "enable", id, "--output", "json").ok())
		if got["id"] != id || got["username"] != "carol" || got["disabled"] != false || got["source"] != "local" {
			t.Errorf("enable answered %v", got)
		}
		if out := admin.run("", "user", "enable", "CAROL").ok(); !strings.Contains(out, "enabled user carol") ||
			!strings.Contains(out, "stay revoked") {
			t.Errorf("enable said %q", out)
		}
		status("carol", "active")
		e.Do("GET", "/api/v1/users/me", stored.Token, nil).WantError(401, "UNAUTHORIZED")
		carol.run("carol-pw-Secret1\n", "login", "--password-stdin").ok()

		// The server's refusals, and a user no one has.
		admin.run("", "user", "disable", "admin").fails(1, "user admin: you cannot disable your own account (CONFLICT)")
		admin.run("", "user", "disable", "nobody").fails(1, `no user "nobody" (depot user list lists them)`)
		admin.run("", "user", "enable", "nobody").fails(1, `no user "nobody"`)
		admin.run("", "user", "disable").fails(2, "want USER")
		admin.run("", "user", "disable", "carol", "admin").fails(2, "want USER")
		status("admin", "active")
		admin.run("", "user", "delete", "carol").ok()
	})

	t.Run("token", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		e.CreateRepo("js", "npm", false)
		created := jsonOf[map[string]any](t, admin.run("", "token", "create", "ci", "--scopes", "repository:read:js",
			"--expires", "720h", "--output", "json").ok())
		secret, _ := created["token"].(string)
		if secret == "" || created["expires_at"] == nil {
			t.Fatalf("create: %v", created)
		}
		e.Do("GET", "/api/v1/repositories/js", secret, nil).Want(200)
		table := admin.run("", "token", "create", "ci-2", "--scopes", "repository:write")
		if !strings.Contains(table.ok(), "\ntoken: ") || !strings.Contains(table.stderr, "not shown again") {
			t.Errorf("create in a table: %q, %q", table.stdout, table.stderr)
		}
		admin.run("", "token", "create", "no-scopes").fails(1, "scope")
		list := admin.run("", "token", "list").ok()
		for _, want := range []string{"ci ", "ci-2", "repository:read:js", cfg.TokenName} {
			if !strings.Contains(list, want) {
				t.Errorf("list lacks %q:\n%s", want, list)
			}
		}
		admin.run("", "token", "delete", "ci", "ci-2").ok()
		e.Do("GET", "/api/v1/repositories/js", secret, nil).Want(401)
		if got := names(t, admin.run("", "token", "list", "--output", "json").ok(), "name"); len(got) != 1 || got[0] != cfg.TokenName {
			t.Errorf("tokens after the delete: %v", got)
		}
	})

	t.Run("edge", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		r := admin.run("", "edge", "create", "near", "http://edge.example:8081", "--region", "eu-west")
		r.ok()
		if !strings.Contains(r.stdout, "token: dpe_") || !strings.Contains(r.stderr, "DEPOT_NODE_TOKEN=dpe_") ||
			!strings.Contains(r.stderr, "--origin "+e.URL) {
			t.Errorf("create: %q, %q", r.stdout, r.stderr)
		}
		admin.run("", "edge", "create", "bad name", "http://edge.example:8081").fails(1, "name")
		admin.run("", "edge", "assign", "near", "js").ok()
		nodes := jsonOf[[]EdgeNode](t, admin.run("", "edge", "list", "--output", "json").ok())
		if len(nodes) != 1 || nodes[0].Name != "near" || nodes[0].Region != "eu-west" || len(nodes[0].Repositories) != 1 ||
			nodes[0].Repositories[0].Name != "js" {
			t.Fatalf("nodes: %+v", nodes)
		}
		if table := admin.run("", "edge", "list").ok(); !strings.Contains(table, "near") || !strings.Contains(table, "js") {
			t.Errorf("table:\n%s", table)
		}
		if show := admin.run("", "edge", "show", nodes[0].ID).ok(); !strings.Contains(show, "http://edge.example:8081") {
			t.Errorf("show:\n%s", show)
		}
		admin.run("", "edge", "assign", "near", "nothing-here").fails(1, "nothing-here")
		admin.run("", "edge", "unassign", "near", "js").ok()
		admin.run("", "edge", "delete", "near").ok()
		if got := admin.run("", "edge", "list", "--output", "json").ok(); strings.TrimSpace(got) != "[]" {
			t.Errorf("after the delete: %s", got)
		}
	})

	t.Run("webhook", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		rcv := clienttest.NewReceiver(t, "hook-secret")
		h := jsonOf[Webhook](t, admin.run("", "webhook", "create", rcv.URL, "--events", "repository.created",
			"--secret", "hook-secret", "--description", "ci", "--output", "json").ok())
		if h.ID == "" || h.Secret != "hook-secret" || !h.Active {
			t.Fatalf("create: %+v", h)
		}
		admin.run("", "webhook", "create", rcv.URL, "--events", "repository.exploded").fails(1, "unknown event")
		admin.run("", "repo", "create", "hooked", "--format", "generic").ok()
		rcv.Wait(t, 1, 10e9)
		if d := rcv.Got()[0]; d.Event != "repository.created" || !d.SignatureOK {
			t.Errorf("delivery %+v", d)
		}
		if table := admin.run("", "webhook", "list").ok(); !strings.Contains(table, rcv.URL) || !strings.Contains(table, h.ID) {
			t.Errorf("table:\n%s", table)
		}
		admin.run("", "webhook", "delete", rcv.URL).ok()
		if got := admin.run("", "webhook", "list", "--output", "json").ok(); strings.TrimSpace(got) != "[]" {
			t.Errorf("after the delete: %s", got)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		module := filepath.Join(t.TempDir(), "terraform.wasm")
		if err := os.WriteFile(module, plugintest.Example(t, "terraform"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := jsonOf[Plugin](t, admin.run("", "plugin", "install", module, "--output", "json").ok())
		if p.ID != "terraform" || p.Builtin || p.Module == nil || !p.Enabled {
			t.Fatalf("install: %+v", p)
		}
		admin.run("", "plugin", "install", filepath.Join(t.TempDir(), "none.wasm")).fails(1, "no such file")
		admin.run("", "repo", "create", "infra", "--format", "terraform").ok()
		if table := admin.run("", "plugin", "list").ok(); !strings.Contains(table, "terraform") || !strings.Contains(table, "installed") ||
			!strings.Contains(table, "built in") {
			t.Errorf("table:\n%s", table)
		}
		admin.run("", "plugin", "disable", "terraform", "npm").ok()
		for _, q := range jsonOf[[]Plugin](t, admin.run("", "plugin", "list", "--output", "json").ok()) {
			if (q.ID == "terraform" || q.ID == "npm") == q.Enabled {
				t.Errorf("after disabling: %+v", q)
			}
		}
		admin.run("", "plugin", "enable", "terraform", "npm").ok()
		admin.run("", "plugin", "uninstall", "npm").fails(1, "built-in")
		admin.run("", "plugin", "uninstall", "terraform").ok()
		admin.run("", "plugin", "uninstall", "terraform").fails(1, "NOT_FOUND")
	})

	t.Run("token override", func(t *testing.T) {
		tok := e.Token(e.Admin, []string{"admin"}, nil)
		ci := newUser(t) // nothing stored
		ci.run("", "repo", "list").fails(2, "not signed in: run depot login --url")
		ci.run("", "user", "list", "--url", e.URL, "--token", tok).ok()
		ci.env["DEPOT_URL"], ci.env["DEPOT_TOKEN"] = e.URL, tok
		ci.run("", "user", "list").ok()
		ci.env["DEPOT_TOKEN"] = "dpt_not-a-token"
		ci.run("", "user", "list").fails(1, "the token given with --token or DEPOT_TOKEN was refused")
		// The flag wins over the variable, and over the stored token.
		ci.run("", "user", "list", "--token", tok).ok()
		admin.run("", "user", "list", "--token", "dpt_not-a-token").fails(1, "was refused")
	})

	t.Run("stored token stays home", func(t *testing.T) {
		// Another --url than the stored one gets no credential.
		var mu sync.Mutex
		var auth []string
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			auth = append(auth, r.Header.Get("Authorization"))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"repositories":[],"total":0}`))
		}))
		defer other.Close()
		admin := &user{t: t, env: admin.env}
		admin.run("", "repo", "list", "--url", other.URL).ok()
		mu.Lock()
		defer mu.Unlock()
		if len(auth) != 1 || auth[0] != "" {
			t.Errorf("the other server got %q", auth)
		}
	})

	t.Run("logout", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		if out := admin.run("", "logout").ok(); !strings.Contains(out, "revoked") {
			t.Errorf("logout said %q", out)
		}
		e.Do("GET", "/api/v1/users/me", cfg.Token, nil).Want(401)
		after := jsonOf[userConfig](t, string(must(os.ReadFile(cfgPath))))
		if after.Token != "" || after.TokenID != "" || after.URL != e.URL || after.Username != "admin" {
			t.Errorf("config after logout: %+v", after)
		}
		// Signed out: public reads still work, the rest says to sign in.
		e.CreateRepo("pub", "generic", true)
		anon := admin.run("", "repo", "list", "--output", "json")
		if got := names(t, anon.ok(), "name"); strings.Join(got, ",") != "pub" {
			t.Errorf("anonymous list: %v", got)
		}
		if !strings.Contains(anon.stderr, "anonymous caller") {
			t.Errorf("an anonymous list does not say so: %q", anon.stderr)
		}
		admin.run("", "user", "list").fails(1, "not signed in to "+e.URL)
		admin.run("", "logout").ok()
	})

	t.Run("refused stored token", func(t *testing.T) {
		admin := &user{t: t, env: admin.env}
		// Signing in again reuses the stored URL and username.
		admin.run(origintest.AdminPassword+"\n", "login", "--password-stdin").ok()
		first := jsonOf[userConfig](t, string(must(os.ReadFile(cfgPath))))
		admin.run(origintest.AdminPassword+"\n", "login", "--password-stdin").ok()
		second := jsonOf[userConfig](t, string(must(os.ReadFile(cfgPath))))
		e.Do("GET", "/api/v1/users/me", first.Token, nil).Want(401) // replaced, so revoked
		e.Do("DELETE", "/api/v1/users/me/tokens/"+second.TokenID, e.Admin, nil).Want(204)
		admin.run("", "repo", "list").fails(1, "run depot login again")
		admin.run("wrong-password\n", "login", "--password-stdin").fails(1, "refused the sign-in of admin")
	})

	t.Run("user without the admin scope", func(t *testing.T) {
		e.CreateUser("bob", "user", "bob-pw-Secret1")
		bob := newUser(t)
		bob.run("bob-pw-Secret1\n", "login", "--url", e.URL, "--username", "bob", "--password-stdin").ok()
		c := jsonOf[userConfig](t, string(must(os.ReadFile(bob.env["DEPOT_CONFIG"]))))
		bob.run("", "user", "list").fails(1, "FORBIDDEN")
		bob.run("", "user", "disable", "admin").fails(1, "FORBIDDEN")
		bob.run("", "user", "enable", "bob").fails(1, "FORBIDDEN")
		e.Do("GET", "/api/v1/users/me", e.Admin, nil).Want(200) // still enabled
		// Its token may not manage the account, but may revoke itself.
		e.Do("GET", "/api/v1/repositories", c.Token, nil).Want(200)
		bob.run("", "logout").ok()
		e.Do("GET", "/api/v1/repositories", c.Token, nil).Want(401)
	})
}

// TestLoginPasswordChangeRequired: an initial password that must be
// changed cannot be changed without a terminal: login says so.
func TestLoginPasswordChangeRequired(t *testing.T) {
	e := origintest.Start(t, origintest.Options{KeepInitialPassword: true})
	u := newUser(t)
	u.run(origintest.InitialAdminPassword+"\n", "login", "--url", e.URL, "--username", "admin", "--password-stdin").
		fails(1, "must be changed")
	if _, err := os.Stat(u.env["DEPOT_CONFIG"]); !os.IsNotExist(err) {
		t.Errorf("a config was written: %v", err)
	}
}

// TestCLIUsage: help for every group and command, usage errors exit 2
// without calling anything.
func TestCLIUsage(t *testing.T) {
	u := newUser(t)
	for _, args := range [][]string{{"repo", "--help"}, {"repo", "help"}, {"user", "help", "create"}, {"token", "create", "--help"},
		{"edge", "help"}, {"webhook", "create", "--help"}, {"login", "--help"}, {"logout", "--help"}, {"edge", "assign", "--help"},
		{"user", "disable", "--help"}, {"user", "help", "enable"}} {
		r := u.run("", args...)
		out := r.ok()
		if !strings.Contains(out, "Usage: depot "+args[0]) {
			t.Errorf("%v: %q", args, out)
		}
		if len(args) == 3 || args[1] != "help" && args[0] != "repo" {
			if !strings.Contains(out, "--url  $DEPOT_URL") || !strings.Contains(out, "--output  $DEPOT_OUTPUT") {
				t.Errorf("%v lists no connection flags: %q", args, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if len(line) > 100 {
				t.Errorf("%v: a line of %d columns: %s", args, len(line), line)
			}
		}
	}
	if out := u.run("", "login", "--help").ok(); !strings.Contains(out, "--password-stdin") || !strings.Contains(out, "DEPOT_PASSWORD") {
		t.Errorf("login --help: %q", out)
	}
	if out := u.run("", "user", "help").ok(); !strings.Contains(out, "\n  disable USER ") || !strings.Contains(out, "\n  enable USER ") {
		t.Errorf("help user lists no disable or enable: %q", out)
	}
	if out := u.run("", "user", "disable", "--help").ok(); !strings.Contains(out, "Usage: depot user disable USER [flags]") ||
		!strings.Contains(out, "API token of the user is revoked") {
		t.Errorf("user disable --help: %q", out)
	}
	u.run("", "repo").fails(2, "Commands:")
	u.run("", "repo", "purge").fails(2, `unknown command "purge"`)
	u.run("", "repo", "create").fails(2, "want NAME")
	u.run("", "repo", "create", "a", "b", "--url", "http://127.0.0.1:1").fails(2, "want NAME")
	u.run("", "repo", "list", "--bogus").fails(2, "not defined: --bogus")
	u.run("", "repo", "list", "--output", "yaml", "--url", "http://127.0.0.1:1").fails(2, "want table or json")
	u.run("", "repo", "list", "--url", "ftp://depot").fails(2, "--url")
	u.run("", "login").fails(2, "depot login --url")
	// Nothing listens there: a network error, exit 1.
	u.run("", "repo", "list", "--url", "http://127.0.0.1:1").fails(1, "cannot reach http://127.0.0.1:1")
	if !IsEdgeCommand("assign") || IsEdgeCommand("--listen") {
		t.Error("IsEdgeCommand")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCLITLS: an origin whose certificate the system does not trust is
// refused, and reached with its CA given by --ca-file (DEPOT_CA_FILE).
func TestCLITLS(t *testing.T) {
	e := origintest.Start(t, origintest.Options{TLS: true})
	u := newUser(t)
	u.run(origintest.AdminPassword+"\n", "login", "--url", e.URL, "--username", "admin", "--password-stdin").
		fails(1, "certificate")
	u.env["DEPOT_CA_FILE"] = e.CertFile
	u.run(origintest.AdminPassword+"\n", "login", "--url", e.URL, "--username", "admin", "--password-stdin").ok()
	u.run("", "user", "list").ok()
	u.run("", "user", "list", "--ca-file", filepath.Join(t.TempDir(), "missing.pem")).fails(2, "--ca-file")
}

func TestParseBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://depot.example.com":             "https://depot.example.com",
		"https://depot.example.com/":            "https://depot.example.com",
		"https://depot.example.com/api/v1/":     "https://depot.example.com",
		"http://127.0.0.1:8080/registry/api/v1": "http://127.0.0.1:8080/registry",
		"depot.example.com":                     "",
		"ftp://depot.example.com":               "",
		"https://admin:pw@depot.example.com":    "",
		"https://depot.example.com/?x=1":        "",
	} {
		got, err := ParseBaseURL(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
