// Command cluster measures a cluster of origins on loopback (bench/cluster.sh
// runs it):
//
//   - small-upload throughput: clients PUT small generic files without
//     pause for a while, first to one origin, then spread over the three
//     origins of a cluster; uploads/s and latency percentiles;
//   - upload to visible on an edge: one upload at a time through the
//     origins in turn, then the edge polled every millisecond until it
//     serves the file; the time from the upload's acknowledgement;
//   - policy to enforced on an edge: a security policy made (and removed)
//     through the origins in turn, the edge polled every millisecond until
//     it refuses (and serves again) a file it held;
//   - failover: kill -9 of the leader, the time until another origin leads
//     and until a write through a survivor succeeds; the killed origin is
//     restarted between rounds.
//
// It prints markdown tables.
package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/bench/internal/stat"
	"github.com/depot-registry/depot/cluster/peerauth"
)

var (
	depot     = flag.String("depot", "", "the depot binary")
	dir       = flag.String("dir", "", "work directory")
	duration  = flag.Duration("duration", 10*time.Second, "length of each throughput run")
	clients   = flag.Int("clients", 16, "concurrent uploading clients")
	size      = flag.Int("size", 4096, "bytes per upload")
	samples   = flag.Int("visible", 200, "uploads timed until an edge serves them")
	failovers = flag.Int("failovers", 5, "leader kills")
	policies  = flag.Int("policies", 50, "security policies made and removed, timed until an edge enforces them")
)

const (
	adminPass = "bench-admin-pw-1"
	secret    = "bench-secret-bench-secret-bench-secret-01"
)

func main() {
	flag.Parse()
	if *depot == "" || *dir == "" {
		log.Fatal("-depot and -dir are required")
	}
	// Every client keeps its connection: a new TCP connection per upload
	// would measure dialling, on both sides, as much as writing.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients + 4}}

	fmt.Printf("## Small uploads (%d B, %d clients, %v)\n\n| origins | uploads/s | p50 | p99 | failed |\n|---|---|---|---|---|\n", *size, *clients, *duration)
	one := startCluster("one", 1)
	fmt.Println(throughput(client, one).row("1"))
	one.stop()
	three := startCluster("three", 3)
	defer three.stop()
	fmt.Println(throughput(client, three).row("3 (clients spread over all)"))

	edge, err := origin.StartEdge(*depot, three.dir, three.nodes[0].URL, three.admin, []string{three.repo})
	must(err)
	defer edge.Stop()
	var lat []time.Duration
	for i := range *samples {
		path := fmt.Sprintf("/generic/bench/visible/%d/f.bin", i)
		if st := put(client, three.nodes[i%3].URL+path, three.basic, body()); st != http.StatusCreated {
			log.Fatalf("upload for the edge: %d", st)
		}
		acked := time.Now()
		for {
			req, _ := http.NewRequest("HEAD", edge.URL+path, nil)
			req.Header.Set("Authorization", three.basic)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Since(acked) > 30*time.Second {
				log.Fatalf("%s not on the edge 30 s after its upload", path)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(acked))
	}
	fmt.Printf("\n## Upload to visible on an edge (%d uploads, one at a time, through the three origins in turn)\n\n| p50 | p99 | max |\n|---|---|---|\n", *samples)
	fmt.Printf("| %v | %v | %v |\n", pct(lat, 50), pct(lat, 99), pct(lat, 100))

	// A policy made (and removed) through the origins in turn, timed
	// until the edge refuses (and serves again) a file it held: a generic
	// file is never scanned, so block_unscanned refuses it.
	var apply, lift []time.Duration
	path := edge.URL + "/generic/bench/visible/0/f.bin"
	waitStatus := func(want int, since time.Time) time.Duration {
		for {
			req, _ := http.NewRequest("GET", path, nil)
			req.Header.Set("Authorization", three.basic)
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == want {
					return time.Since(since)
				}
			}
			if time.Since(since) > 30*time.Second {
				log.Fatalf("the edge did not answer %d 30 s after the policy changed", want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range *policies {
		at := three.nodes[i%3].URL + "/api/v1/security/policies"
		var pol struct{ ID string }
		must(origin.Do("POST", at, three.admin, fmt.Sprintf(`{"name":"reach %d","scope":{"repositories":[%q]},"rules":{"block_unscanned":true}}`, i, three.repo), http.StatusCreated, &pol))
		apply = append(apply, waitStatus(http.StatusForbidden, time.Now()))
		must(origin.Do("DELETE", at+"/"+pol.ID, three.admin, "", http.StatusNoContent, nil))
		lift = append(lift, waitStatus(http.StatusOK, time.Now()))
	}
	fmt.Printf("\n## Policy change to enforced on an edge (%d policies made and removed, through the three origins in turn)\n\n| change | p50 | p99 | max |\n|---|---|---|---|\n", *policies)
	fmt.Printf("| made: the edge refuses | %v | %v | %v |\n", pct(apply, 50), pct(apply, 99), pct(apply, 100))
	fmt.Printf("| removed: the edge serves | %v | %v | %v |\n", pct(lift, 50), pct(lift, 99), pct(lift, 100))

	fmt.Printf("\n## Failover: kill -9 of the leader (%d rounds)\n\n| round | new leader after | first write through a survivor after |\n|---|---|---|\n", *failovers)
	var leads, writes []time.Duration
	for r := range *failovers {
		lead, write := three.failover(client, r)
		leads, writes = append(leads, lead), append(writes, write)
		fmt.Printf("| %d | %v | %v |\n", r+1, lead.Round(time.Millisecond), write.Round(time.Millisecond))
	}
	fmt.Printf("| median | %v | %v |\n", pct(leads, 50).Round(time.Millisecond), pct(writes, 50).Round(time.Millisecond))
}

type cluster struct {
	name   string
	dir    string
	opts   []origin.Options
	nodes  []*origin.Process
	admin  string // Authorization of the admin's session
	basic  string // Authorization with an API token
	repo   string // the generic repository's id
	leader string // id of the leader when last asked
}

func startCluster(name string, n int) *cluster {
	c := &cluster{name: name, dir: filepath.Join(*dir, name)}
	must(os.MkdirAll(c.dir, 0o755))
	key := peerauth.NewKey().Encode()
	for i := range n {
		listen, err := origin.FreeAddr()
		must(err)
		raft, err := origin.FreeAddr()
		must(err)
		gossip, err := origin.FreeAddr()
		must(err)
		o := origin.Options{Bin: *depot, DataDir: filepath.Join(c.dir, fmt.Sprint("origin-", i)), Listen: listen, RaftAddr: raft, Gossip: gossip,
			Env:     []string{"DEPOT_ADMIN_PASSWORD=" + adminPass, "JWT_SECRET=" + secret, "DEPOT_CLUSTER_KEY=" + key},
			Args:    []string{"--rate-limit", "0", "--min-free-bytes", "0", "--log-level", "warn"},
			LogPath: filepath.Join(c.dir, fmt.Sprint("origin-", i, ".log"))}
		if i > 0 {
			o.Args = append(o.Args, "--join", c.opts[0].Gossip)
		}
		c.opts = append(c.opts, o)
		p, err := origin.Start(o)
		must(err)
		_, err = p.WaitHealthy(time.Minute)
		must(err)
		c.nodes = append(c.nodes, p)
	}
	var err error
	c.admin, err = origin.Login(c.nodes[0].URL, adminPass)
	must(err)
	c.waitVoters(n)
	var repo struct{ ID string }
	must(origin.Do("POST", c.nodes[0].URL+"/api/v1/repositories", c.admin, `{"name":"bench","format":"generic"}`, 201, &repo))
	c.repo = repo.ID
	var tok struct{ Token string }
	must(origin.Do("POST", c.nodes[0].URL+"/api/v1/users/me/tokens", c.admin, `{"name":"bench","scopes":["repository:read","repository:write"]}`, 201, &tok))
	c.basic = "Bearer " + tok.Token
	for _, p := range c.nodes { // every origin knows the repository and the token
		for deadline := time.Now().Add(10 * time.Second); origin.Do("GET", p.URL+"/api/v1/repositories/"+c.repo, c.basic, "", 200, nil) != nil; {
			if time.Now().After(deadline) {
				log.Fatalf("%s does not know the repository", p.URL)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return c
}

func (c *cluster) stop() {
	for _, p := range c.nodes {
		_ = p.Stop()
	}
}

type view struct {
	LeaderID string `json:"leader_id"`
	Members  []struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
		Role     string `json:"role"`
		Healthy  bool   `json:"healthy"`
	} `json:"members"`
}

func (c *cluster) view(at int) (view, error) {
	var v view
	err := origin.Do("GET", c.nodes[at].URL+"/api/v1/admin/cluster", c.admin, "", 200, &v)
	return v, err
}

// waitVoters waits until n healthy members, one leading, answer from
// every origin.
func (c *cluster) waitVoters(n int) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		ok := true
		for i := range c.nodes {
			v, err := c.view(i)
			healthy := 0
			for _, m := range v.Members {
				if m.Healthy && (m.Role == "leader" || m.Role == "follower") {
					healthy++
				}
			}
			ok = ok && err == nil && healthy == n && v.LeaderID != ""
			c.leader = v.LeaderID
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			log.Fatalf("%s: no %d healthy voters after a minute", c.name, n)
		}
	}
}

type stats struct {
	n, failed int
	took      time.Duration
	lat       []time.Duration
}

func (s stats) row(label string) string {
	return fmt.Sprintf("| %s | %.0f | %v | %v | %d |", label, float64(s.n)/s.took.Seconds(), pct(s.lat, 50), pct(s.lat, 99), s.failed)
}

func throughput(client *http.Client, c *cluster) stats {
	var (
		mu     sync.Mutex
		all    []time.Duration
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(*duration)
	for w := range *clients {
		wg.Go(func() {
			var mine []time.Duration
			for n := 0; time.Now().Before(end); n++ {
				t := time.Now()
				st := put(client, c.nodes[w%len(c.nodes)].URL+fmt.Sprintf("/generic/bench/%s-c%d/%d/f.bin", c.name, w, n), c.basic, body())
				if st != http.StatusCreated {
					failed.Add(1)
					continue
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return stats{n: len(all), failed: int(failed.Load()), took: time.Since(start), lat: all}
}

// failover kills the leader, times the election and the first write a
// survivor takes, then restarts the killed origin and waits for three
// healthy voters.
func (c *cluster) failover(client *http.Client, round int) (lead, write time.Duration) {
	v, err := c.view(0)
	must(err)
	killed := -1
	for i, o := range c.opts {
		for _, m := range v.Members {
			if m.ID == v.LeaderID && m.RaftAddr == o.RaftAddr {
				killed = i
			}
		}
	}
	if killed < 0 {
		log.Fatalf("no leader in %+v", v)
	}
	survivor := (killed + 1) % len(c.nodes)
	c.nodes[killed].Kill()
	at := time.Now()
	var leadDone, writeDone bool
	for n := 0; !leadDone || !writeDone; n++ {
		if !leadDone {
			if w, err := c.view(survivor); err == nil && w.LeaderID != "" && w.LeaderID != v.LeaderID {
				lead, leadDone = time.Since(at), true
			}
		}
		if !writeDone {
			if put(client, c.nodes[survivor].URL+fmt.Sprintf("/generic/bench/failover-%d/%d/f.bin", round, n), c.basic, body()) == http.StatusCreated {
				write, writeDone = time.Since(at), true
			}
		}
		if time.Since(at) > time.Minute {
			log.Fatal("no failover within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	o := c.opts[killed]
	o.Args = slices.DeleteFunc(slices.Clone(o.Args), func(a string) bool { return a == "--join" || a == c.opts[0].Gossip })
	p, err := origin.Start(o) // it finds its peers by itself
	must(err)
	_, err = p.WaitHealthy(time.Minute)
	must(err)
	c.nodes[killed] = p
	c.waitVoters(len(c.nodes))
	return lead, write
}

func put(client *http.Client, url, auth string, b []byte) int {
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(b))
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so the connection is reused
	resp.Body.Close()
	return resp.StatusCode
}

func body() []byte {
	b := make([]byte, *size)
	_, _ = rand.Read(b)
	return b
}

// pct is the p-th percentile of d (p 100: the largest), rounded to print.
func pct(d []time.Duration, p int) time.Duration {
	return stat.Percentile(d, p).Round(10 * time.Microsecond)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
