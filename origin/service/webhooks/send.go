// Package webhooks sends webhook deliveries: one signed POST of an event
// envelope per attempt, bounded in time and in what it reads back, and
// kept to public addresses unless the operator allows private ones.
// (The delivery queue and its retry schedule build on it.)
package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	neturl "net/url"
	"syscall"
	"time"
)

// UserAgent is what every delivery says it is.
const UserAgent = "Registry-Webhook/1.0"

// maxResponse is how much of a receiver's answer is read (and dropped).
const maxResponse = 64 << 10

// Envelope is the body of every delivery.
type Envelope struct {
	Event     string    `json:"event"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// Sign is the X-Webhook-Signature of body under secret: "sha256=" and
// the lowercase hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Attempt is one delivery attempt's outcome: the receiver's status (0
// when none came) and how long it took.
type Attempt struct {
	StatusCode int
	Duration   time.Duration
	Err        error
}

// OK reports whether the attempt succeeded: a 2xx in time.
func (a Attempt) OK() bool { return a.Err == nil && a.StatusCode/100 == 2 }

// ErrPrivateAddress refuses a receiver on a private, loopback or
// link-local address (unless allowed).
var ErrPrivateAddress = errors.New("webhook receiver is on a private, loopback or link-local address")

// internalNets are address ranges that reach a site's own machines
// besides those netip names: shared address space of carrier-grade NAT
// (RFC 6598), the IETF's protocol assignments, benchmarking, "this
// network", reserved and broadcast, NAT64 (RFC 6052, RFC 8215: a
// translator in front of any IPv4 address, the site's own included),
// and unique local IPv6 (netip's IsPrivate has it; listed for clarity).
var internalNets = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("fc00::/7"),
}

// Internal reports whether a delivery to a is refused by default: a
// private, loopback, link-local, multicast, unspecified or otherwise
// internal address (internalNets), in any of its forms (IPv4-mapped
// IPv6, and the IPv4 inside a 6to4 address).
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() && netip.MustParsePrefix("2002::/16").Contains(a) { // 6to4 carries an IPv4 address
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	if a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, n := range internalNets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Sender makes delivery attempts.
type Sender struct {
	// Timeout bounds an attempt (WEBHOOK_TIMEOUT_SECONDS; 30 s when 0).
	Timeout time.Duration
	// AllowPrivate lets deliveries reach private, loopback and
	// link-local addresses (DEPOT_WEBHOOK_ALLOW_PRIVATE_NETWORKS).
	AllowPrivate bool
	client       *http.Client
}

// NewSender makes a sender; its connections are checked at dial time,
// so a name that resolves to a private address is refused too.
func NewSender(timeout time.Duration, allowPrivate bool) *Sender {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	s := &Sender{Timeout: timeout, AllowPrivate: allowPrivate}
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if Internal(ap.Addr()) {
			return ErrPrivateAddress
		}
		return nil
	}}
	s.client = &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute,
			ResponseHeaderTimeout: timeout},
		// A redirect to another host is not followed (nor are more than a
		// few to the same one).
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 || req.URL.Host != via[0].URL.Host {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return s
}

// Send makes one attempt: POST body to url with the delivery headers,
// signed when secret is set.
func (s *Sender) Send(ctx context.Context, url, webhookID, deliveryID, event, secret string, body []byte) Attempt {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Attempt{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("X-Webhook-ID", webhookID)
	req.Header.Set("X-Webhook-Event", event)
	req.Header.Set("X-Webhook-Delivery", deliveryID)
	if secret != "" {
		req.Header.Set("X-Webhook-Signature", Sign(secret, body))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrPrivateAddress) {
			err = ErrPrivateAddress
		}
		return Attempt{Duration: time.Since(start), Err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	a := Attempt{StatusCode: resp.StatusCode, Duration: time.Since(start)}
	if resp.StatusCode/100 != 2 {
		a.Err = fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return a
}

// Describe says why an attempt failed, without the receiver's URL (its
// query may carry a token).
func (a Attempt) Describe() string {
	err := a.Err
	var ue *neturl.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return "no answer within the timeout"
		}
		err = ue.Err
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
