package auth

import (
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	long := strings.Repeat("a", 100)
	valid := map[string]Scope{
		"admin":                        {Action: "admin", Global: true},
		"repository:read":              {Action: "read"},
		"repository:write":             {Action: "write"},
		"repository:delete":            {Action: "delete"},
		"repository:admin":             {Action: "admin"},
		"repository:read:libs":         {Action: "read", Repo: "libs"},
		"repository:write:My_Repo-1.x": {Action: "write", Repo: "My_Repo-1.x"},
		"repository:delete:0":          {Action: "delete", Repo: "0"},
		"repository:admin:" + long:     {Action: "admin", Repo: long},
	}
	for in, want := range valid {
		got, err := ParseScope(in)
		if err != nil {
			t.Errorf("ParseScope(%q): %v", in, err)
			continue
		}
		if got != want {
			t.Errorf("ParseScope(%q) = %+v, want %+v", in, got, want)
		}
		if got.String() != in {
			t.Errorf("ParseScope(%q).String() = %q", in, got.String())
		}
	}

	invalid := []string{
		"",
		"admin:x",
		"Admin",
		"admin ",
		" admin",
		"repository",
		"repository:",
		"repository:foo",
		"repository:READ",
		"repository:read:",
		"repository:read:../x",
		"repository:read:.hidden",
		"repository:read:-x",
		"repository:read:_x",
		"repository:read:a/b",
		"repository:read:a b",
		"repository:read:a:b",
		"repository:read:a\x00",
		"repository:read:ü",
		"repository:read:" + long + "a",
		"repositories:read",
		"repo:read",
		":read",
		"read",
		"repository:read ",
	}
	for _, in := range invalid {
		if s, err := ParseScope(in); err == nil {
			t.Errorf("ParseScope(%q) = %+v, want error", in, s)
		}
	}
}

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes([]string{"repository:read", "repository:write:libs"})
	if err != nil || len(got) != 2 || got[1] != (Scope{Action: "write", Repo: "libs"}) {
		t.Fatalf("ParseScopes = %+v, %v", got, err)
	}
	for _, in := range [][]string{nil, {}} {
		if _, err := ParseScopes(in); err == nil || !strings.Contains(err.Error(), "at least one scope") {
			t.Errorf("ParseScopes(%v) err = %v, want 'at least one scope'", in, err)
		}
	}
	_, err = ParseScopes([]string{"repository:read", "repository:nope"})
	if err == nil || !strings.Contains(err.Error(), `"repository:nope"`) {
		t.Errorf("err = %v, want it to name the bad scope", err)
	}
}

func mustScopes(t *testing.T, ss ...string) []Scope {
	t.Helper()
	out, err := ParseScopes(ss)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAllows(t *testing.T) {
	actions := []string{"read", "write", "delete", "admin"}
	cases := []struct {
		scopes []string
		repo   string
		allow  string // actions allowed on repo, in order read,write,delete,admin
	}{
		{[]string{"admin"}, "libs", "RWDA"},
		{[]string{"admin"}, "", "RWDA"},
		{[]string{"repository:admin"}, "libs", "RWDA"},
		{[]string{"repository:admin:libs"}, "libs", "RWDA"},
		{[]string{"repository:admin:libs"}, "other", "...."},
		{[]string{"repository:write"}, "libs", "RW.."},
		{[]string{"repository:delete"}, "libs", "R.D."},
		{[]string{"repository:read"}, "libs", "R..."},
		{[]string{"repository:read:libs"}, "libs", "R..."},
		{[]string{"repository:read:libs"}, "Libs", "R..."}, // repository names are case-insensitive
		{[]string{"repository:read:libs"}, "libs2", "...."},
		{[]string{"repository:read:libs"}, "", "...."}, // narrowed scope never matches "no repo"
		{[]string{"repository:write:libs"}, "other", "...."},
		{[]string{"repository:read", "repository:write:libs"}, "libs", "RW.."},
		{[]string{"repository:read", "repository:write:libs"}, "other", "R..."},
		{[]string{"repository:write", "repository:delete"}, "x", "RWD."},
		{[]string{"repository:read:a", "repository:delete:b"}, "b", "R.D."},
	}
	for _, c := range cases {
		scopes := mustScopes(t, c.scopes...)
		for i, a := range actions {
			want := c.allow[i] != '.'
			if got := Allows(scopes, a, c.repo); got != want {
				t.Errorf("Allows(%v, %q, %q) = %v, want %v", c.scopes, a, c.repo, got, want)
			}
		}
	}

	all := mustScopes(t, "admin")
	for _, a := range []string{"", "Read", "pull", "admin "} {
		if Allows(all, a, "libs") {
			t.Errorf("unknown action %q allowed", a)
		}
	}
	if Allows(nil, "read", "libs") {
		t.Error("no scopes allowed read")
	}
	if Allows([]Scope{{}}, "read", "libs") {
		t.Error("zero Scope allowed read")
	}
}

func TestAllowsGlobalAdmin(t *testing.T) {
	if !AllowsGlobalAdmin(mustScopes(t, "repository:read", "admin")) {
		t.Error("admin scope not global admin")
	}
	if AllowsGlobalAdmin(mustScopes(t, "repository:admin", "repository:admin:x", "repository:write")) {
		t.Error("repository:admin treated as global admin")
	}
	if AllowsGlobalAdmin(nil) {
		t.Error("nil scopes treated as global admin")
	}
}

func FuzzParseScope(f *testing.F) {
	for _, s := range []string{
		"admin", "repository:read", "repository:write:libs", "repository:admin:a.b-c_d",
		"", "admin:x", "repository:foo", "repository:read:../x", "repository:read:a:b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScope(s)
		if err != nil {
			return
		}
		// Strict parsing means an accepted scope has exactly one spelling.
		if sc.String() != s {
			t.Fatalf("ParseScope(%q).String() = %q", s, sc.String())
		}
		if again, err := ParseScope(sc.String()); err != nil || again != sc {
			t.Fatalf("round trip of %q: %+v, %v", s, again, err)
		}
		if sc.Repo != "" && (!isScopeRepoName(sc.Repo) || strings.Contains(sc.Repo, "/") || strings.HasPrefix(sc.Repo, ".")) {
			t.Fatalf("accepted bad repo name %q", sc.Repo)
		}
		if sc.Global != (s == "admin") {
			t.Fatalf("Global=%v for %q", sc.Global, s)
		}
		// A parsed scope always allows at least read on a matching repo.
		repo := sc.Repo
		if repo == "" {
			repo = "any"
		}
		if !Allows([]Scope{sc}, "read", repo) {
			t.Fatalf("%q does not allow read on %q", s, repo)
		}
	})
}
