package httpx

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Proxies are the reverse proxies whose X-Forwarded-* headers are
// believed. By default none are: a client that could set those headers
// would pick its own rate-limit bucket and audit address, and control the
// absolute URLs in index documents (npm tarballs, PyPI links, the docker
// token realm).
type Proxies struct {
	prefixes []netip.Prefix
	// Forwarder, when set, names the forwarder of ours a request proves
	// it comes from whatever its address (an edge node, by its credential
	// in ForwarderHeader; "" when it proves nothing). Its X-Forwarded-For
	// and -Host are believed, and the request is known to have come
	// through that node (ForwardedBy), so what a client does through it
	// counts against the node too: a stolen node credential buys no more
	// than the node itself may do. Its X-Forwarded-Proto: https is
	// believed only over a TLS connection from the node (a node's word
	// that its client used HTTPS means nothing if the hop from it did
	// not).
	Forwarder func(credential string) (node string)
}

// ForwarderHeader carries the credential of an edge node on the requests
// it forwards to an origin.
const ForwarderHeader = "X-Depot-Edge"

func (p Proxies) forwarder(r *http.Request) string {
	if p.Forwarder == nil {
		return ""
	}
	if c := r.Header.Get(ForwarderHeader); c != "" {
		return p.Forwarder(c)
	}
	return ""
}

// ParseProxies reads a comma-separated list of addresses and CIDR ranges.
func ParseProxies(s string) (Proxies, error) {
	var p Proxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if pre, err := netip.ParsePrefix(f); err == nil {
			p.prefixes = append(p.prefixes, pre.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return Proxies{}, fmt.Errorf("trusted proxy %q is not an address or CIDR range", f)
		}
		p.prefixes = append(p.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return p, nil
}

func (p Proxies) trusts(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pre := range p.prefixes {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// VaryBaseURL names the request headers a base URL is built from when no
// external URL is set: every answer of a node that builds absolute URLs
// from the request says it varies on them (an edge's too: see
// edge/server), so a shared cache keeps one copy per host.
const VaryBaseURL = "Host, X-Forwarded-Proto, X-Forwarded-Host"

// MergeVary joins Vary values into one, naming each header once (the
// first spelling of it, whatever the case of the others) in the order
// first named; "*" (varies on anything) stands alone.
func MergeVary(values ...string) string {
	var names []string
	for _, v := range values {
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "*" {
				return "*"
			}
			if n != "" && !slices.ContainsFunc(names, func(m string) bool { return strings.EqualFold(m, n) }) {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, ", ")
}

type origin struct {
	client string // the client's address
	base   string // scheme://host of absolute URLs: external, else seen
	seen   string // scheme://host the client used, as the request (or a believed forwarder) says
	secure bool   // the client's request came over HTTPS (here, or to a trusted proxy)
	node   string // the forwarder it came through, if it proved one
}

type originKey struct{}

// Forwarded works out, once per request, who the client is and which base
// URL it used (see originOf), for ClientIP and BaseURL. It goes outside
// everything that logs, limits or builds URLs.
func Forwarded(h http.Handler, proxies Proxies, external string) http.Handler {
	external = strings.TrimRight(external, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if external == "" {
			// Index documents carry absolute URLs built from these.
			w.Header().Add("Vary", VaryBaseURL)
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), originKey{}, originOf(r, proxies, external))))
	})
}

// originOf is the peer address and the Host the request names or, when
// the peer is a trusted proxy or a forwarder that proved itself, what its
// X-Forwarded-For/-Proto/-Host say;
// external, when set, is the base URL whatever the request says.
func originOf(r *http.Request, proxies Proxies, external string) origin {
	o := origin{client: peer(r), base: external, secure: r.TLS != nil, node: proxies.forwarder(r)}
	proxy := proxies.trusts(o.client)
	trusted := proxy || o.node != ""
	if trusted {
		o.client = forwardedFor(r, proxies, o.client)
		if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
			o.secure = p == "https" && (proxy || r.TLS != nil)
		}
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if trusted {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
			scheme = p
		}
		if fh := r.Header.Get("X-Forwarded-Host"); fh != "" && !strings.ContainsAny(fh, "/ ,@\\") {
			host = fh
		}
	}
	o.seen = scheme + "://" + host
	if o.base == "" {
		o.base = o.seen
	}
	return o
}

// forwardedFor walks X-Forwarded-For from the right, skipping trusted
// proxies: the first address not ours is the client (anything left of it
// was written by the client and proves nothing).
func forwardedFor(r *http.Request, proxies Proxies, peerAddr string) string {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peerAddr
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap().String()
		if !proxies.trusts(client) {
			break
		}
	}
	return client
}

func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func requestOrigin(r *http.Request) origin {
	if o, ok := r.Context().Value(originKey{}).(origin); ok {
		return o
	}
	return originOf(r, Proxies{}, "") // not behind Forwarded: believe no header
}

// ForwardedBy is the forwarder (edge node) a request proved it came
// through, or "" (see Proxies.Forwarder).
func ForwardedBy(r *http.Request) string { return requestOrigin(r).node }

// ClientIP is the client's address (see Forwarded).
func ClientIP(r *http.Request) string { return requestOrigin(r).client }

// BaseURL is the scheme://host the client used, or the external URL (see
// Forwarded).
func BaseURL(r *http.Request) string { return requestOrigin(r).base }

// SeenURL is the scheme://host the client used (through the proxies and
// forwarders believed), whatever --external-url says: where a cookie set
// in the answer goes back to.
func SeenURL(r *http.Request) string { return requestOrigin(r).seen }

// Secure reports whether the client's request came over HTTPS: to this
// server, or to a trusted proxy that says so (see Forwarded).
func Secure(r *http.Request) bool { return requestOrigin(r).secure }
