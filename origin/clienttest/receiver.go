package clienttest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Receiver is a real webhook receiver: an HTTP server that checks each
// delivery's signature as a receiver would (HMAC-SHA256 of the body with
// the shared secret; 401 when it does not match), records what came and
// answers what the test says.
type Receiver struct {
	URL    string
	secret string

	mu      sync.Mutex
	got     []Delivery
	status  int
	delay   time.Duration
	more    chan struct{}
	inside  int // requests being answered
	maxSeen int
}

// Delivery is one request a Receiver got.
type Delivery struct {
	Header      http.Header
	Body        []byte
	SignatureOK bool // the signature matched (or none was expected and none came)
	Event       string
	Timestamp   time.Time
	Data        map[string]any
	Answered    int
}

// NewReceiver starts a receiver checking signatures with secret ("" =
// expects none); it answers 204 until told otherwise.
func NewReceiver(t testing.TB, secret string) *Receiver {
	r := &Receiver{secret: secret, status: http.StatusNoContent, more: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hook"
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	d := Delivery{Header: req.Header.Clone(), Body: body}
	sig := req.Header.Get("X-Webhook-Signature")
	if r.secret == "" {
		d.SignatureOK = sig == ""
	} else {
		m := hmac.New(sha256.New, []byte(r.secret))
		m.Write(body)
		d.SignatureOK = hmac.Equal([]byte(sig), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
	}
	var env struct {
		Event     string         `json:"event"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	d.Event, d.Timestamp, d.Data = env.Event, env.Timestamp, env.Data
	r.mu.Lock()
	status, delay := r.status, r.delay
	r.inside++
	r.maxSeen = max(r.maxSeen, r.inside)
	r.mu.Unlock()
	if !d.SignatureOK {
		status = http.StatusUnauthorized
	}
	time.Sleep(delay)
	d.Answered = status
	r.mu.Lock()
	r.inside--
	r.got = append(r.got, d)
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(status)
}

// Answer makes the receiver answer status from now on, after delay.
func (r *Receiver) Answer(status int, delay time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.delay = status, delay
}

// MostAtOnce is the most requests it was answering at the same time.
func (r *Receiver) MostAtOnce() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxSeen
}

// Got is every delivery so far.
func (r *Receiver) Got() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// Wait waits until n deliveries came (failing the test after timeout)
// and returns them all.
func (r *Receiver) Wait(t testing.TB, n int, timeout time.Duration) []Delivery {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		got, more := len(r.got), r.more
		r.mu.Unlock()
		if got >= n {
			return r.Got()
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("webhook receiver: %d deliveries after %s, want %d", got, timeout, n)
		}
	}
}

// Quiet checks that nothing more than n came within d.
func (r *Receiver) Quiet(t testing.TB, n int, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if got := r.Got(); len(got) != n {
		var events []string
		for _, d := range got {
			events = append(events, d.Event)
		}
		t.Fatalf("webhook receiver: %d deliveries %v, want %d", len(got), events, n)
	}
}
