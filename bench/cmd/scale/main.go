// Command scale measures an origin holding many artifacts. It fills a
// data directory through the store (see gen.go), starts `depot origin` on
// it, times the start until healthy (first after generation, then a
// restart), reads the origin's memory, checks that each format's read
// routes answer on the generated data, and measures the latency of the
// listing, search, catalog, statistics and download routes as the admin
// and as a user with grants on private repositories: sequential requests,
// then a run with concurrent clients. It prints one markdown table.
//
// The work directory keeps the data (data/), the description of what was
// generated (fixture.json) and the origin's log; a work directory that
// holds both is measured again without generating.
//
// Linux only (/proc/<pid>/status).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/bench/internal/proc"
)

const (
	initialPassword = "scale-initial-Pw-1"
	adminPassword   = "scale-Admin-Pw-2"
	userPassword    = "scale-User-Pw-3"
	jwtSecret       = "scale-bench-secret-scale-bench-secret-0123"
)

type options struct {
	depot, dir        string
	artifacts, repos  int
	batch             int
	n, c, cn          int
	routeBudget       time.Duration
	restartTarget     time.Duration
	rssTarget, target float64
}

func main() {
	var o options
	flag.StringVar(&o.depot, "depot", "", "depot binary (required)")
	flag.StringVar(&o.dir, "dir", "", "work directory: data/, fixture.json and origin.log live here (required)")
	flag.IntVar(&o.artifacts, "artifacts", 1_000_000, "artifacts to generate")
	flag.IntVar(&o.repos, "repos", 1_000, "repositories to generate")
	flag.IntVar(&o.batch, "batch", 1000, "artifacts per generated command")
	flag.IntVar(&o.n, "n", 200, "sequential requests per route and user")
	flag.IntVar(&o.c, "c", 8, "concurrent clients in the concurrent run")
	flag.IntVar(&o.cn, "cn", 400, "requests per route and user in the concurrent run")
	flag.DurationVar(&o.routeBudget, "route-budget", 20*time.Second, "stop a route's run (sequential or concurrent) after this long")
	flag.Parse()
	if o.depot == "" || o.dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(o, log); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// state is what a work directory keeps between runs.
type state struct {
	Fixture  *fixture `json:"fixture"`
	RaftAddr string   `json:"raft_addr"` // the raft configuration names it
}

func run(o options, log *slog.Logger) error {
	data := filepath.Join(o.dir, "data")
	statePath := filepath.Join(o.dir, "fixture.json")
	logPath := filepath.Join(o.dir, "origin.log")
	var st state
	if raw, err := os.ReadFile(statePath); err == nil {
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("%s: %w", statePath, err)
		}
		log.Info("reusing generated data", "dir", data, "artifacts", st.Fixture.Artifacts, "repos", len(st.Fixture.Repos),
			"generated", st.Fixture.Generated)
	} else {
		if err := os.RemoveAll(data); err != nil {
			return err
		}
		addr, err := origin.FreeAddr()
		if err != nil {
			return err
		}
		st.RaftAddr = addr
		// A first start makes the directory an origin's: node id,
		// cluster key, raft bootstrap, the admin (whose initial
		// password is changed here).
		log.Info("initialising the data directory with depot origin", "dir", data)
		p, err := start(o, data, st.RaftAddr, logPath)
		if err != nil {
			return err
		}
		if _, err := p.WaitHealthy(time.Minute); err != nil {
			p.Stop()
			return err
		}
		err = changeInitialPassword(p.URL)
		if serr := p.Stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		log.Info("generating", "artifacts", o.artifacts, "repos", o.repos, "per command", o.batch)
		t := time.Now()
		fx, err := generate(context.Background(), genConfig{dataDir: data, raftAddr: st.RaftAddr, artifacts: o.artifacts,
			repos: o.repos, batch: o.batch, password: userPassword, log: log})
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		log.Info("generation done", "seconds", time.Since(t).Seconds(), "meta.db MiB", fileMiB(filepath.Join(data, "meta.db")),
			"raft.db MiB", fileMiB(filepath.Join(data, "raft", "raft.db")))
		st.Fixture = fx
		raw, _ := json.MarshalIndent(st, "", " ")
		if err := os.WriteFile(statePath, raw, 0o600); err != nil {
			return err
		}
	}
	fx := st.Fixture

	// The first start after generating, then the restart measured.
	var starts []time.Duration
	var p *origin.Process
	for i := range 2 {
		var err error
		if p, err = start(o, data, st.RaftAddr, logPath); err != nil {
			return err
		}
		d, err := p.WaitHealthy(5 * time.Minute)
		if err != nil {
			p.Stop()
			return err
		}
		starts = append(starts, d)
		log.Info("origin healthy", "start", i+1, "seconds", d.Seconds())
		if i == 0 {
			if err := p.Stop(); err != nil {
				return err
			}
		}
	}
	defer p.Stop()
	rssStart, _ := proc.Memory(p.PID())
	time.Sleep(2 * time.Second)
	rssIdle, _ := proc.Memory(p.PID())

	b, err := newBench(o, p.URL, fx, log)
	if err != nil {
		return err
	}
	if err := b.check(); err != nil {
		return fmt.Errorf("the generated data does not read back: %w", err)
	}
	log.Info("read routes answer on the generated data; reindexing for search")
	took, reindexed, err := b.reindex()
	if err != nil {
		return err
	}
	log.Info("reindexed; measuring", "seconds", took.Seconds(), "result", reindexed)
	rows := b.measure()
	rssLoad, hwm := proc.Memory(p.PID())

	fmt.Printf("\n%d artifacts in %d repositories; %d sequential requests and %d with %d concurrent clients per route and user (each run at most %v)\n\n",
		fx.Artifacts, len(fx.Repos), o.n, o.cn, o.c, o.routeBudget)
	fmt.Printf("| measure | value | target | |\n|---|---|---|---|\n")
	fmt.Printf("| first start after generating, to healthy | %.2f s | | |\n", starts[0].Seconds())
	fmt.Printf("| restart, to healthy | %.2f s | < 5 s | %s |\n", starts[1].Seconds(), verdict(starts[1] < 5*time.Second))
	fmt.Printf("| RSS after restart (then 2 s idle) | %s (%s) | < 1 GiB | %s |\n", mib(rssStart), mib(rssIdle), verdict(rssIdle < 1<<30))
	fmt.Printf("| search reindex, every artifact read by its format's inspector | %.1f s (%s) | | |\n", took.Seconds(), reindexed)
	fmt.Printf("| RSS after the load (peak) | %s (%s) | < 1 GiB | %s |\n\n", mib(rssLoad), mib(hwm), verdict(hwm < 1<<30))
	printRows(rows)
	return nil
}

func start(o options, data, raftAddr, logPath string) (*origin.Process, error) {
	listen, err := origin.FreeAddr()
	if err != nil {
		return nil, err
	}
	// The API's per-client rate limit would answer most of the load 429:
	// the figures are of the routes, not of the limiter.
	return origin.Start(origin.Options{Bin: o.depot, DataDir: data, Listen: listen, RaftAddr: raftAddr, LogPath: logPath,
		Args: []string{"--rate-limit", "0"},
		Env:  []string{"DEPOT_ADMIN_PASSWORD=" + initialPassword, "JWT_SECRET=" + jwtSecret}})
}

func changeInitialPassword(url string) error {
	tok, err := login(url, "admin", initialPassword)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"current_password": initialPassword, "password": adminPassword})
	req, _ := http.NewRequest(http.MethodPut, url+"/api/v1/users/me", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("password change: %s: %s", resp.Status, b)
	}
	return nil
}

func login(url, user, password string) (string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	resp, err := http.Post(url+"/api/v1/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.AccessToken == "" {
		return "", errors.Join(fmt.Errorf("login as %s: %s", user, resp.Status), err)
	}
	return out.AccessToken, nil
}

func fileMiB(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size() >> 20
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}
