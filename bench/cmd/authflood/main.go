// Command authflood measures what a flood of wrong passwords costs a running
// origin. It keeps -c requests with wrong HTTP Basic credentials in flight
// for -d (each connection a keep-alive client of its own), and meanwhile, once
// a second, times good sign-ins sent from another source address (a real
// user is not the attacker's address) and samples the origin process's
// resident memory.
//
// Variants: "random" sends random usernames (no account needed), "user"
// sends the real username (-user) with random wrong passwords. Each second
// the probe times three good sign-ins: POST /api/v1/auth/login and a Basic
// GET /api/v1/users/me, each as an account it has not used before (so the
// password really is hashed, as for a user signing in for the first time
// while the flood runs), and a Basic GET as -user, whose verified password
// the origin may have cached. The probe accounts are created through the
// API before the flood starts.
//
// It prints one markdown table row (-header prints the header first).
// Linux only (/proc/<pid>/status).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/bench/internal/proc"
)

type options struct {
	url, user, password, variant string
	paths                        []string
	conns                        int
	duration, timeout            time.Duration
	from, probeFrom              netip.Addr
	spread                       int
	pid                          int
	maxRSS                       int64
}

func main() {
	var o options
	var paths, from, probeFrom string
	var maxRSSMiB int64
	header := flag.Bool("header", false, "print the table header before the row")
	freeAddrs := flag.Int("free-addrs", 0, "print this many free 127.0.0.1 ports, one a line, and exit (for scripts)")
	flag.StringVar(&o.url, "url", "", "origin base URL, e.g. http://127.0.0.1:8080 (required)")
	flag.StringVar(&o.user, "user", "admin", "real username (the \"user\" variant's target and the cached probe)")
	flag.StringVar(&o.password, "password", "", "the real user's password; the user must be an admin, to create probe accounts (required)")
	flag.StringVar(&o.variant, "variant", "random", "flood credentials: random (random usernames) or user (-user, wrong passwords)")
	flag.StringVar(&paths, "paths", "/generic/bench/x/1.0/x.bin,/api/v1/users/me,/v2/token?service=depot", "comma-separated GET paths the flood cycles through")
	flag.IntVar(&o.conns, "c", 200, "concurrent flood requests (one keep-alive connection each)")
	flag.DurationVar(&o.duration, "d", 30*time.Second, "flood duration")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "per-request timeout, flood and probes")
	flag.StringVar(&from, "from", "127.0.0.1", "source address of the flood")
	flag.IntVar(&o.spread, "spread", 1, "spread the flood over this many consecutive source addresses starting at -from")
	flag.StringVar(&probeFrom, "probe-from", "127.0.0.2", "source address of the good sign-ins")
	flag.IntVar(&o.pid, "pid", 0, "origin process id, for its memory (0: not sampled)")
	flag.Int64Var(&maxRSSMiB, "max-rss-mib", 0, "stop the flood early once the origin's RSS passes this (0: never)")
	flag.Parse()
	if *freeAddrs > 0 {
		if err := printFreePorts(*freeAddrs); err != nil {
			fatal(err)
		}
		return
	}
	o.paths = strings.Split(paths, ",")
	o.maxRSS = maxRSSMiB << 20
	var err error
	if o.from, err = netip.ParseAddr(from); err != nil {
		fatal(fmt.Errorf("-from: %w", err))
	}
	if o.probeFrom, err = netip.ParseAddr(probeFrom); err != nil {
		fatal(fmt.Errorf("-probe-from: %w", err))
	}
	if o.url == "" || o.password == "" || (o.variant != "random" && o.variant != "user") || o.conns < 1 || o.spread < 1 {
		flag.Usage()
		os.Exit(2)
	}
	o.url = strings.TrimSuffix(o.url, "/")
	if *header {
		fmt.Println("| connections | variant | flood seconds | requests | answers | peak RSS MiB (sampled) | VmHWM MiB | good login p50 / max s | good Basic p50 / max s | cached Basic p50 / max s | probes failed |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	}
	if err := run(o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "authflood:", err)
	os.Exit(1)
}

// client returns a keep-alive HTTP client whose connections leave from src.
func client(src netip.Addr, conns int, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src.AsSlice()}, Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxConnsPerHost:     conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

func run(o options) error {
	probe := client(o.probeFrom, 4, o.timeout)
	accounts, err := createProbeAccounts(o, probe)
	if err != nil {
		return err
	}
	// The probe's cached credential: one good Basic request before the
	// flood, as a user who signed in a moment ago.
	if _, err := basicGet(probe, o.url+"/api/v1/users/me", o.user, o.password); err != nil {
		return fmt.Errorf("good Basic request before the flood: %w", err)
	}
	// A sign-in before the flood, for comparison.
	quiet := accounts[len(accounts)-1]
	t0 := time.Now()
	if _, err := login(probe, o.url, quiet.name, quiet.password, nil); err != nil {
		return fmt.Errorf("good sign-in before the flood: %w", err)
	}
	fmt.Fprintf(os.Stderr, "authflood: good login before the flood: %.2fs\n", time.Since(t0).Seconds())
	accounts = accounts[:len(accounts)-1]
	fmt.Fprintf(os.Stderr, "authflood: %d connections, variant %s, %s, from %s (x%d), probes from %s\n",
		o.conns, o.variant, o.duration, o.from, o.spread, o.probeFrom)

	ctx, stop := context.WithTimeout(context.Background(), o.duration)
	defer stop()
	mem := &sampler{pid: o.pid, limit: o.maxRSS, over: stop}
	var samplerDone sync.WaitGroup
	samplerDone.Go(func() { mem.loop(ctx) })

	f := &flood{o: o}
	start := time.Now()
	var workers sync.WaitGroup
	addrs := make([]netip.Addr, o.spread)
	addrs[0] = o.from
	for i := 1; i < o.spread; i++ {
		addrs[i] = addrs[i-1].Next()
		if addrs[i] == o.probeFrom { // the good user is never one of the attackers
			addrs[i] = addrs[i].Next()
		}
	}
	for i := range o.conns {
		c := client(addrs[i%o.spread], 1, o.timeout)
		workers.Go(func() { f.worker(ctx, c, i) })
	}
	p := &prober{o: o, c: probe, accounts: accounts, start: start}
	var probeDone sync.WaitGroup
	probeDone.Go(func() { p.loop(ctx) })

	<-ctx.Done()
	elapsed := time.Since(start)
	workers.Wait()
	probeDone.Wait()
	samplerDone.Wait()
	_, hwm := proc.Memory(o.pid)

	seconds := fmt.Sprintf("%.0f", elapsed.Seconds())
	if mem.tripped.Load() {
		seconds += fmt.Sprintf(" (stopped: RSS passed %d MiB)", o.maxRSS>>20)
	}
	fmt.Printf("| %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d of %d |\n",
		o.conns, o.variant, seconds, f.sent.Load(), f.answers(),
		mib(mem.peak.Load(), o.pid), mib(hwm, o.pid),
		p.login.summary(), p.basic.summary(), p.cached.summary(), p.failed, p.probes)
	for _, n := range p.notes {
		fmt.Fprintln(os.Stderr, "authflood: probe:", n)
	}
	return nil
}

func mib(b int64, pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.FormatInt(b>>20, 10)
}

// flood sends wrong credentials until its context ends.
type flood struct {
	o    options
	sent atomic.Int64
	mu   sync.Mutex
	seen map[string]int64 // answers by status, "timeout" or "error"
}

func (f *flood) worker(ctx context.Context, c *http.Client, i int) {
	defer c.CloseIdleConnections()
	for n := i; ctx.Err() == nil; n++ {
		user := f.o.user
		if f.o.variant == "random" {
			user = "u" + randomHex(6)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.o.url+f.o.paths[n%len(f.o.paths)], nil)
		if err != nil {
			f.count("error")
			return
		}
		req.SetBasicAuth(user, "wrong-"+randomHex(8))
		f.sent.Add(1)
		resp, err := c.Do(req)
		switch {
		case ctx.Err() != nil:
			// Cut off by the end of the run: not an answer.
			if err == nil {
				resp.Body.Close()
			}
			return
		case err != nil:
			if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
				f.count("timeout")
			} else {
				f.count("error")
				// A refused connection fails at once: do not spin.
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		f.count(strconv.Itoa(resp.StatusCode))
	}
}

func (f *flood) count(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[string]int64{}
	}
	f.seen[k]++
}

// answers renders the counts by status, e.g. "401: 1200, 429: 30500".
func (f *flood) answers() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.seen))
	for k := range f.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, f.seen[k])
	}
	return strings.Join(parts, ", ")
}

// sampler follows the origin's resident memory every 100 ms.
type sampler struct {
	pid     int
	limit   int64
	over    context.CancelFunc
	peak    atomic.Int64
	tripped atomic.Bool
}

func (s *sampler) loop(ctx context.Context) {
	if s.pid == 0 {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		rss, _ := proc.Memory(s.pid)
		if rss > s.peak.Load() {
			s.peak.Store(rss)
		}
		if s.limit > 0 && rss > s.limit && !s.tripped.Load() {
			s.tripped.Store(true)
			fmt.Fprintf(os.Stderr, "authflood: RSS %d MiB passed the limit: stopping the flood\n", rss>>20)
			s.over()
		}
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "authflood:   RSS %d MiB (peak %d MiB)\n", rss>>20, s.peak.Load()>>20)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prober times good sign-ins once a second; a sign-in still running at
// the next tick delays the next one rather than piling up.
type prober struct {
	o        options
	c        *http.Client
	accounts []account
	start    time.Time // of the flood
	next     int
	probes   int
	failed   int
	notes    []string // failed and slow probes
	login    latencies
	basic    latencies
	cached   latencies
}

type account struct{ name, password string }

func (p *prober) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if p.next+2 > len(p.accounts) {
			return
		}
		a, b := p.accounts[p.next], p.accounts[p.next+1]
		p.next += 2
		p.check(&p.login, "login", func() (int, error) { return login(p.c, p.o.url, a.name, a.password, nil) })
		p.check(&p.basic, "Basic", func() (int, error) { return basicGet(p.c, p.o.url+"/api/v1/users/me", b.name, b.password) })
		p.check(&p.cached, "cached Basic", func() (int, error) {
			return basicGet(p.c, p.o.url+"/api/v1/users/me", p.o.user, p.o.password)
		})
	}
}

func (p *prober) check(l *latencies, what string, f func() (int, error)) {
	p.probes++
	start := time.Now()
	code, err := f()
	took := time.Since(start)
	*l = append(*l, took)
	at := start.Sub(p.start).Seconds()
	switch {
	case err != nil:
		p.failed++
		p.notes = append(p.notes, fmt.Sprintf("%s at +%.1fs failed after %.2fs: %d %v", what, at, took.Seconds(), code, err))
	case took > time.Second:
		p.notes = append(p.notes, fmt.Sprintf("%s at +%.1fs took %.2fs", what, at, took.Seconds()))
	}
}

type latencies []time.Duration

func (l latencies) summary() string {
	if len(l) == 0 {
		return "-"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return fmt.Sprintf("%.2f / %.2f", s[len(s)/2].Seconds(), s[len(s)-1].Seconds())
}

// createProbeAccounts creates two accounts per second of flood (and a few
// spare, one of them for a sign-in before the flood), signed in as the real
// admin.
func createProbeAccounts(o options, c *http.Client) ([]account, error) {
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if code, err := login(c, o.url, o.user, o.password, &tok); err != nil {
		return nil, fmt.Errorf("sign-in as %s: %d %w", o.user, code, err)
	}
	n := 2 * (int(o.duration/time.Second) + 3)
	fmt.Fprintf(os.Stderr, "authflood: creating %d probe accounts\n", n)
	run := randomHex(4)
	out := make([]account, n)
	for i := range out {
		a := account{name: fmt.Sprintf("probe-%s-%d", run, i), password: "probe-" + randomHex(12)}
		body := map[string]string{"username": a.name, "email": a.name + "@example.com", "password": a.password, "role": "viewer"}
		if code, err := apiCall(c, http.MethodPost, o.url+"/api/v1/users", tok.AccessToken, body, nil); err != nil {
			return nil, fmt.Errorf("create probe account: %d %w", code, err)
		}
		out[i] = a
	}
	return out, nil
}

func login(c *http.Client, url, user, password string, out any) (int, error) {
	return apiCall(c, http.MethodPost, url+"/api/v1/auth/login", "", map[string]string{"username": user, "password": password}, out)
}

// apiCall sends a JSON body and decodes a 2xx answer into out.
func apiCall(c *http.Client, method, url, bearer string, body, out any) (int, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return do(c, req, out)
}

func basicGet(c *http.Client, url, user, password string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(user, password)
	return do(c, req, nil)
}

func do(c *http.Client, req *http.Request, out any) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, bytes.TrimSpace(data))
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// printFreePorts prints n distinct ports free on 127.0.0.1 (held open
// together so that they differ).
func printFreePorts(n int) error {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	return nil
}
