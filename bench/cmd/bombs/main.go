// Command bombs measures what archives made to unpack far more than
// their size cost an origin process: it starts an origin from the given
// binary in a temporary data directory, creates a repository of each
// format, and uploads each of formattest.Bombs once, alone, then -n
// copies of each at once, reporting the status, the time and the
// origin's peak resident memory (VmHWM) above its resident memory before
// the first upload. Linux only (/proc).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/bench/internal/proc"
	"github.com/depot-registry/depot/shared/formattest"
)

type fatal struct{}

func (fatal) Helper() {}
func (fatal) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"bombs:"}, args...)...)
	os.Exit(1)
}

func main() {
	depot := flag.String("depot", "", "depot binary to run (required)")
	n := flag.Int("n", 4, "copies of each bomb sent at once in the second round")
	flag.Parse()
	if *depot == "" {
		fmt.Fprintln(os.Stderr, "bombs: -depot is required")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "bombs-")
	if err != nil {
		fatal{}.Fatal(err)
	}
	defer os.RemoveAll(dir)
	listen, _ := origin.FreeAddr()
	raft, _ := origin.FreeAddr()
	o, err := origin.Start(origin.Options{Bin: *depot, DataDir: filepath.Join(dir, "data"), Listen: listen, RaftAddr: raft,
		LogPath: filepath.Join(dir, "origin.log"), Env: []string{"DEPOT_ADMIN_PASSWORD=bombs-admin-pw"}, Args: []string{"--min-free-bytes", "0"}})
	if err != nil {
		fatal{}.Fatal(err)
	}
	defer o.Stop()
	if _, err := o.WaitHealthy(time.Minute); err != nil {
		fatal{}.Fatal(err)
	}
	auth, err := origin.Login(o.URL, "bombs-admin-pw")
	if err != nil {
		fatal{}.Fatal(err)
	}
	bombs := formattest.Bombs(fatal{})
	made := map[string]bool{}
	for _, b := range bombs {
		if !made[b.Repo[0]] {
			if err := origin.Do("POST", o.URL+"/api/v1/repositories", auth, `{"name":"`+b.Repo[0]+`","format":"`+b.Repo[1]+`"}`, 201, nil); err != nil {
				fatal{}.Fatal(err)
			}
			made[b.Repo[0]] = true
		}
	}
	base, _ := proc.Memory(o.PID())
	fmt.Printf("origin RSS before the uploads: %d MiB\n\n", base>>20)
	fmt.Printf("| upload | bytes | copies at once | statuses | seconds (slowest) | peak RSS above the start, MiB |\n|---|---|---|---|---|---|\n")
	for _, copies := range []int{1, *n} {
		for _, b := range bombs {
			var mu sync.Mutex
			var statuses []string
			var wg sync.WaitGroup
			start := time.Now()
			for range copies {
				wg.Go(func() {
					s := send(o.URL, auth, b)
					mu.Lock()
					statuses = append(statuses, s)
					mu.Unlock()
				})
			}
			wg.Wait()
			took := time.Since(start)
			_, hwm := proc.Memory(o.PID())
			fmt.Printf("| %s | %d | %d | %s | %.3f | %d |\n", b.Name, len(b.Body), copies, strings.Join(statuses, " "), took.Seconds(), (hwm-base)>>20)
		}
	}
}

func send(base, auth string, b formattest.Bomb) string {
	req, _ := http.NewRequest(b.Method, base+b.Path, bytes.NewReader(b.Body))
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/octet-stream")
	for k, v := range b.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return fmt.Sprint(resp.StatusCode)
}
