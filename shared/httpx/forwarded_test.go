package httpx

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/depot-registry/depot/shared/format"
)

func TestOriginOf(t *testing.T) {
	proxies, err := ParseProxies("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProxies("10.0.0.0/8, not-an-address"); err == nil {
		t.Fatal("a bad proxy entry was accepted")
	}
	cases := []struct {
		peer, xff, xfh, xfp, external string
		client, base                  string
	}{
		// An untrusted peer's headers prove nothing.
		{"203.0.113.9:1234", "198.51.100.1", "evil.example", "https", "", "203.0.113.9", "http://registry.example"},
		// Through a trusted proxy: the first untrusted hop from the right.
		{"10.1.2.3:1234", "198.51.100.66, 198.51.100.1, 10.9.9.9", "pub.example", "https", "", "198.51.100.1", "https://pub.example"},
		{"192.0.2.7:1", "198.51.100.1", "a b", "gopher", "", "198.51.100.1", "http://registry.example"},
		// Only trusted hops: the leftmost is the client.
		{"10.1.2.3:1", "10.0.0.5", "", "", "", "10.0.0.5", "http://registry.example"},
		// An external URL wins over every header.
		{"10.1.2.3:1", "198.51.100.1", "pub.example", "https", "https://depot.example", "198.51.100.1", "https://depot.example"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://registry.example/x", nil)
		r.RemoteAddr = c.peer
		for k, v := range map[string]string{"X-Forwarded-For": c.xff, "X-Forwarded-Host": c.xfh, "X-Forwarded-Proto": c.xfp} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		o := originOf(r, proxies, c.external)
		if o.client != c.client || o.base != c.base {
			t.Errorf("peer %s, XFF %q: client %s base %s, want %s %s", c.peer, c.xff, o.client, o.base, c.client, c.base)
		}
		// What the client used, whatever the external URL says.
		if c.external != "" && o.seen != "https://pub.example" || c.external == "" && o.seen != o.base {
			t.Errorf("peer %s, external %q: seen %s", c.peer, c.external, o.seen)
		}
	}
}

// TestForwarderProvesItself: a request carrying a forwarder's credential
// that checks out is believed whatever its address; a wrong credential,
// or none, is not.
func TestForwarderProvesItself(t *testing.T) {
	proxies := Proxies{Forwarder: func(c string) string {
		if c == "dpe_good" {
			return "node-1"
		}
		return ""
	}}
	for _, c := range []struct{ credential, client, base string }{
		{"dpe_good", "198.51.100.1", "http://edge.example:8081"},
		{"dpe_bad", "203.0.113.9", "http://registry.example"},
		{"", "203.0.113.9", "http://registry.example"},
	} {
		r := httptest.NewRequest("GET", "http://registry.example/x", nil)
		r.RemoteAddr = "203.0.113.9:1234"
		r.Header.Set("X-Forwarded-For", "198.51.100.1")
		r.Header.Set("X-Forwarded-Host", "edge.example:8081")
		if c.credential != "" {
			r.Header.Set(ForwarderHeader, c.credential)
		}
		if o := originOf(r, proxies, ""); o.client != c.client || o.base != c.base {
			t.Errorf("credential %q: client %s base %s, want %s %s", c.credential, o.client, o.base, c.client, c.base)
		}
	}
}

// TestForwarderHTTPSNeedsTLS: a node's word that its client used HTTPS is
// taken only when the hop from the node is TLS itself; a configured
// proxy's word is taken as it is (TLS ends there). ForwardedBy names the
// node.
func TestForwarderHTTPSNeedsTLS(t *testing.T) {
	proxies, _ := ParseProxies("192.0.2.7")
	proxies.Forwarder = func(c string) string {
		if c == "dpe_good" {
			return "node-1"
		}
		return ""
	}
	for _, c := range []struct {
		remote, credential string
		tls                bool
		secure             bool
		node               string
	}{
		{"203.0.113.9:1", "dpe_good", false, false, "node-1"},
		{"203.0.113.9:1", "dpe_good", true, true, "node-1"},
		{"192.0.2.7:1", "", false, true, ""},
		{"203.0.113.9:1", "", false, false, ""},
	} {
		r := httptest.NewRequest("GET", "http://registry.example/x", nil)
		r.RemoteAddr = c.remote
		r.Header.Set("X-Forwarded-Proto", "https")
		if c.credential != "" {
			r.Header.Set(ForwarderHeader, c.credential)
		}
		if c.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if o := originOf(r, proxies, ""); o.secure != c.secure || o.node != c.node {
			t.Errorf("%+v: secure %v node %q", c, o.secure, o.node)
		}
	}
}

func TestMergeVary(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{VaryBaseURL, "Accept"}, "Host, X-Forwarded-Proto, X-Forwarded-Host, Accept"},
		{[]string{"Host, Accept", "accept, HOST,, Origin", " x-forwarded-host "}, "Host, Accept, Origin, x-forwarded-host"},
		{[]string{VaryBaseURL, "*"}, "*"},
		{[]string{""}, ""},
	} {
		if got := MergeVary(c.in...); got != c.want {
			t.Errorf("MergeVary(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// varying is a format whose one document varies on Accept.
type varying struct{ failing }

func (varying) Routes() []format.Route {
	return []format.Route{{Method: http.MethodGet, Path: "/doc",
		Read: func(context.Context, *format.Request) (*format.Response, error) {
			resp := format.Text(http.StatusOK, "a document")
			resp.Header.Set("Vary", "Accept")
			return resp, nil
		}}}
}

// TestVaryMerges: a format's Vary (Accept) joins the one Forwarded says
// when absolute URLs are built from the request (Host...), in one
// header; it replaced it. With an external URL, only the format's.
func TestVaryMerges(t *testing.T) {
	for external, want := range map[string]string{"": VaryBaseURL + ", Accept", "https://depot.example": "Accept"} {
		h := Forwarded(NewFormatHandler(testServer(varying{}, nil), "/f", nil), Proxies{}, external)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, newReq("http://registry.example/f/doc"))
		if got := w.Header().Values("Vary"); w.Code != http.StatusOK || len(got) != 1 || got[0] != want {
			t.Errorf("external %q: %d, Vary %q, want %q", external, w.Code, got, want)
		}
	}
}
