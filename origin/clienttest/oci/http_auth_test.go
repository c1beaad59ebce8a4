package oci_test

import (
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/clienttest"
)

// TestAuthorization covers the Bearer token flow and who may do what:
// anonymous on private -> 401 with one challenge, no permission -> 403,
// wrong-format or unknown repository -> 404 NAME_UNKNOWN.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	e := start(t)
	privID := e.CreateRepo("priv", "docker", false)
	e.CreateRepo("public", "docker", true)
	e.CreateRepo("files", "generic", false)
	alice := writer(e, "alice", privID)
	reader := clienttest.NewUser(e, "reader")
	e.Grant(privID, reader.ID, false, "read")
	stranger := clienttest.NewUser(e, "stranger")
	aliceBasic := basic(alice.Name, alice.Password)
	realm := e.URL + "/v2/token"
	service := clienttest.HostPort(e)

	t.Run("ping and challenge", func(t *testing.T) {
		e := e.For(t)
		r := e.Do("GET", "/v2/", "", nil)
		wantErr(t, r, 401, "UNAUTHORIZED")
		if ch := r.Header.Values("WWW-Authenticate"); len(ch) != 1 || ch[0] != `Bearer realm="`+realm+`",service="`+service+`"` {
			t.Fatalf("challenge %q", ch)
		}
		if r := e.Do("GET", "/v2/", aliceBasic, nil).Want(200); r.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
			t.Fatalf("ping headers %v", r.Header)
		}
		wantErr(t, e.Do("GET", "/v2/", basic("alice", "wrong"), nil), 401, "UNAUTHORIZED")
		// A resource challenge names the scope the request needs.
		r = e.Do("GET", "/v2/priv/app/manifests/1", "", nil)
		wantErr(t, r, 401, "UNAUTHORIZED")
		if ch := r.Header.Values("WWW-Authenticate"); len(ch) != 1 || !strings.HasSuffix(ch[0], `,scope="repository:priv/app:pull"`) {
			t.Fatalf("resource challenge %q", ch)
		}
	})

	t.Run("token endpoint", func(t *testing.T) {
		e := e.For(t)
		// docker login: account, no scope; it must succeed with good
		// credentials and fail with bad ones.
		var tok struct {
			Token       string `json:"token"`
			AccessToken string `json:"access_token"`
			ExpiresIn   int    `json:"expires_in"`
			IssuedAt    string `json:"issued_at"`
		}
		q := "/v2/token?account=alice&client_id=docker&offline_token=true&service=" + service
		e.Do("GET", q, aliceBasic, nil).Want(200).JSON(&tok)
		if tok.Token == "" || tok.AccessToken != tok.Token || tok.ExpiresIn < 60 {
			t.Fatalf("token answer %+v", tok)
		}
		if _, err := time.Parse(time.RFC3339, tok.IssuedAt); err != nil {
			t.Fatalf("issued_at %q: %v", tok.IssuedAt, err)
		}
		e.Do("GET", "/v2/", "Bearer "+tok.Token, nil).Want(200)
		wantErr(t, e.Do("GET", q, basic("alice", "nope"), nil), 401, "UNAUTHORIZED")
		wantErr(t, e.Do("POST", "/v2/token", aliceBasic, "grant_type=password"), 404, "UNSUPPORTED")

		// An anonymous token reads public repositories only.
		var anon struct{ Token string }
		e.Do("GET", "/v2/token?scope=repository:public/x:pull&service="+service, "", nil).Want(200).JSON(&anon)
		wantErr(t, e.Do("GET", "/v2/public/x/tags/list", "Bearer "+anon.Token, nil), 404, "NAME_UNKNOWN")
		wantErr(t, e.Do("GET", "/v2/priv/x/tags/list", "Bearer "+anon.Token, nil), 401, "UNAUTHORIZED")

		// A token from an API token keeps its scopes: asking for push is
		// not an error, but pushing is refused.
		ro := e.Token(e.Login(alice.Name, alice.Password), []string{"repository:read:priv"}, nil)
		var rot struct{ Token string }
		e.Do("GET", "/v2/token?scope=repository:priv/app:pull,push", basic(alice.Name, ro), nil).Want(200).JSON(&rot)
		wantErr(t, e.Do("POST", "/v2/priv/app/blobs/uploads/", "Bearer "+rot.Token, nil), 403, "DENIED")
		e.Do("GET", "/v2/", "Bearer "+rot.Token, nil).Want(200)
	})

	t.Run("repository access", func(t *testing.T) {
		e := e.For(t)
		m := image(t, e, aliceBasic, "priv/app", "auth", "")
		putManifest(e, aliceBasic, "priv/app", "1", m).Want(201)
		e.Do("GET", "/v2/priv/app/manifests/1", basic(reader.Name, reader.Token), nil).Want(200)
		wantErr(t, e.Do("GET", "/v2/priv/app/manifests/1", "", nil), 401, "UNAUTHORIZED")
		// A stranger cannot tell a private repository from a missing one.
		wantErr(t, e.Do("GET", "/v2/priv/app/manifests/1", basic(stranger.Name, stranger.Token), nil), 404, "NAME_UNKNOWN")
		e.Do("HEAD", "/v2/priv/app/blobs/"+sha([]byte("x")), basic(stranger.Name, stranger.Token), nil).Want(404)
		wantErr(t, putManifest(e, basic(reader.Name, reader.Token), "priv/app", "2", m), 403, "DENIED")
		wantErr(t, e.Do("DELETE", "/v2/priv/app/manifests/1", basic(reader.Name, reader.Token), nil), 403, "DENIED")
		wantErr(t, e.Do("POST", "/v2/priv/app/blobs/uploads/", basic(reader.Name, reader.Token), nil), 403, "DENIED")
		// Wrong format and unknown repositories look alike.
		wantErr(t, e.Do("GET", "/v2/files/app/tags/list", e.Admin, nil), 404, "NAME_UNKNOWN")
		wantErr(t, e.Do("GET", "/v2/nosuch/app/tags/list", e.Admin, nil), 404, "NAME_UNKNOWN")
		wantErr(t, e.Do("GET", "/v2/nosuch/app/tags/list", "", nil), 401, "UNAUTHORIZED")
		wantErr(t, e.Do("GET", "/v2/Bad_Name/app/tags/list", e.Admin, nil), 400, "NAME_INVALID")
		wantErr(t, e.Do("GET", "/v2/solo/tags/list", e.Admin, nil), 400, "NAME_INVALID")
		wantErr(t, e.Do("PATCH", "/v2/priv/app/manifests/1", aliceBasic, nil), 405, "UNSUPPORTED")
		wantErr(t, e.Do("GET", "/v2/priv", aliceBasic, nil), 404, "UNSUPPORTED")
	})

	t.Run("catalog", func(t *testing.T) {
		e := e.For(t)
		pub := image(t, e, e.Admin, "public/web", "cat", "")
		putManifest(e, e.Admin, "public/web", "1", pub).Want(201)
		var c struct{ Repositories []string }
		e.Do("GET", "/v2/_catalog", aliceBasic, nil).Want(200).JSON(&c)
		if strings.Join(c.Repositories, ",") != "priv/app,public/web" {
			t.Fatalf("alice's catalog %v", c.Repositories)
		}
		e.Do("GET", "/v2/_catalog", basic(stranger.Name, stranger.Token), nil).Want(200).JSON(&c)
		if strings.Join(c.Repositories, ",") != "public/web" {
			t.Fatalf("stranger's catalog %v", c.Repositories)
		}
		r := e.Do("GET", "/v2/_catalog?n=1", aliceBasic, nil).Want(200)
		r.JSON(&c)
		if strings.Join(c.Repositories, ",") != "priv/app" || r.Header.Get("Link") != `<`+e.URL+`/v2/_catalog?last=priv%2Fapp&n=1>; rel="next"` {
			t.Fatalf("page 1: %v, Link %q", c.Repositories, r.Header.Get("Link"))
		}
		r = e.Do("GET", "/v2/_catalog?n=1&last=priv/app", aliceBasic, nil).Want(200)
		if r.JSON(&c); strings.Join(c.Repositories, ",") != "public/web" || r.Header.Get("Link") != "" {
			t.Fatalf("page 2: %v, Link %q", c.Repositories, r.Header.Get("Link"))
		}
	})
}
