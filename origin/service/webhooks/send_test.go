package webhooks

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a real HTTP receiver that verifies signatures as a
// webhook's owner would (and answers 401 to a bad one).
type receiver struct {
	mu     sync.Mutex
	secret string
	got    []*http.Request
	bodies [][]byte
	status int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got, rc.bodies = append(rc.got, r), append(rc.bodies, body)
	status, secret := rc.status, rc.secret
	rc.mu.Unlock()
	if secret != "" && !hmac.Equal([]byte(r.Header.Get("X-Webhook-Signature")), []byte(Sign(secret, body))) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(status)
}

func TestSendSignsAndSaysWhatItIs(t *testing.T) {
	rc := &receiver{secret: "s3cret", status: 204}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := NewSender(5*time.Second, true)
	body, _ := json.Marshal(Envelope{Event: "webhook.test", Timestamp: time.Unix(1700000000, 0).UTC(), Data: map[string]string{"webhook_id": "w1", "message": "hi"}})
	a := s.Send(context.Background(), srv.URL+"/hook", "w1", "d1", "webhook.test", "s3cret", body)
	if !a.OK() || a.StatusCode != 204 {
		t.Fatalf("attempt %+v", a)
	}
	r := rc.got[0]
	for h, want := range map[string]string{"Content-Type": "application/json", "User-Agent": "Registry-Webhook/1.0", "X-Webhook-Id": "w1",
		"X-Webhook-Event": "webhook.test", "X-Webhook-Delivery": "d1"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if sig := r.Header.Get("X-Webhook-Signature"); !strings.HasPrefix(sig, "sha256=") || len(sig) != 7+64 {
		t.Errorf("signature %q", sig)
	}
	// A wrong secret: the receiver refuses it, the attempt failed.
	if a := s.Send(context.Background(), srv.URL, "w1", "d2", "webhook.test", "wrong", body); a.OK() || a.StatusCode != 401 {
		t.Fatalf("a badly signed attempt: %+v", a)
	}
	// No secret: no signature header.
	rc.mu.Lock()
	rc.secret = ""
	rc.mu.Unlock()
	s.Send(context.Background(), srv.URL, "w1", "d3", "webhook.test", "", body)
	if rc.got[2].Header.Get("X-Webhook-Signature") != "" {
		t.Error("signed without a secret")
	}
}

func TestSendFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }))
	defer slow.Close()
	if a := NewSender(200*time.Millisecond, true).Send(context.Background(), slow.URL, "w", "d", "e", "", nil); a.OK() || a.Err == nil {
		t.Fatalf("a receiver past the timeout: %+v", a)
	}
	failing := httptest.NewServer(&receiver{status: 500})
	defer failing.Close()
	if a := NewSender(time.Second, true).Send(context.Background(), failing.URL, "w", "d", "e", "", nil); a.OK() || a.StatusCode != 500 {
		t.Fatalf("a 500: %+v", a)
	}
	// A redirect to another host is not followed.
	other := httptest.NewServer(&receiver{status: 200})
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	if a := NewSender(time.Second, true).Send(context.Background(), redirect.URL, "w", "d", "e", "", nil); a.OK() || a.StatusCode != 307 {
		t.Fatalf("a redirect to another host: %+v", a)
	}
	// Private, loopback and link-local addresses are refused unless allowed.
	ok := httptest.NewServer(&receiver{status: 200})
	defer ok.Close()
	if a := NewSender(time.Second, false).Send(context.Background(), ok.URL, "w", "d", "e", "", nil); !errors.Is(a.Err, ErrPrivateAddress) {
		t.Fatalf("a loopback receiver without leave: %+v", a)
	}
	for _, u := range []string{"http://10.1.2.3:9/x", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/"} {
		if a := NewSender(time.Second, false).Send(context.Background(), u, "w", "d", "e", "", nil); !errors.Is(a.Err, ErrPrivateAddress) {
			t.Errorf("%s: %+v", u, a)
		}
	}
}

// TestInternalAddresses: every form of an address inside the site is
// refused, and public addresses are not.
func TestInternalAddresses(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1",
		"169.254.169.254", "fe80::1", "fd00::1", "0.0.0.0", "::", "100.64.0.1", "100.127.255.254", "64:ff9b::a00:1",
		"64:ff9b::808:808", "64:ff9b:1::1", "2002:7f00:1::", "2002:a00:1::1", "224.0.0.1", "ff02::1", "192.0.0.8",
		"198.18.0.1", "255.255.255.255", "::ffff:10.0.0.1"} {
		if !Internal(netip.MustParseAddr(s)) {
			t.Errorf("%s is not refused", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "100.128.0.1", "2002:808:808::1", "::ffff:8.8.8.8"} {
		if Internal(netip.MustParseAddr(s)) {
			t.Errorf("%s is refused", s)
		}
	}
}
