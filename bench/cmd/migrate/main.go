// Command migrate measures a migration from a local Artifactory (the
// stand-in the tests use, in this process, its files in memory) into a
// depot origin process (bench/migrate.sh runs it): files per second and
// MB/s of each migration, and the origin's peak memory; beside it, the
// reference: the same files copied by a plain client, each downloaded
// from the source and uploaded with one PUT, as many at once.
//
// It prints a markdown table.
package main

import (
	"bytes"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/bench/internal/proc"
	"github.com/depot-registry/depot/origin/service/migrate/artifactorytest"
)

var (
	depot    = flag.String("depot", "", "the depot binary")
	dir      = flag.String("dir", "", "work directory")
	parallel = flag.Int("parallel", 4, "transfers at once, for the migration and the reference")
)

const (
	adminPass = "bench-admin-pw-1"
	secret    = "bench-secret-bench-secret-bench-secret-01"
)

// load is a set of files to move.
type load struct {
	name  string
	files int
	size  int
}

func main() {
	flag.Parse()
	if *depot == "" || *dir == "" {
		log.Fatal("-depot and -dir are required")
	}
	loads := []load{{"2,000 files of 16 KiB", 2000, 16 << 10}, {"200 files of 1 MiB", 200, 1 << 20}, {"10 files of 64 MiB", 10, 64 << 20}}
	listen, err := origin.FreeAddr()
	must(err)
	raft, err := origin.FreeAddr()
	must(err)
	o, err := origin.Start(origin.Options{Bin: *depot, DataDir: filepath.Join(*dir, "data"), Listen: listen, RaftAddr: raft,
		LogPath: filepath.Join(*dir, "origin.log"), Args: []string{"--min-free-bytes", "0"},
		Env: []string{"DEPOT_ADMIN_PASSWORD=" + adminPass, "JWT_SECRET=" + secret}})
	must(err)
	defer o.Stop()
	if _, err := o.WaitHealthy(60 * time.Second); err != nil {
		log.Fatal(err)
	}
	admin, err := origin.Login(o.URL, adminPass)
	must(err)
	var tok struct{ Token string }
	must(origin.Do("POST", o.URL+"/api/v1/users/me/tokens", admin, `{"name":"bench","scopes":["repository:read","repository:write"]}`, 201, &tok))
	uploader := "Bearer " + tok.Token
	_, startHWM := proc.Memory(o.PID())

	fmt.Printf("| load | way | files/s | MB/s | seconds |\n|---|---|---|---|---|\n")
	for i, l := range loads {
		af := artifactorytest.Start("af", "pw")
		key := fmt.Sprintf("load%d", i)
		af.AddRepo(key, "LOCAL", "Generic", l.name)
		for n := range l.files {
			data := make([]byte, l.size)
			rand.Read(data)
			f := artifactorytest.File{Data: data}
			if n%2 == 0 { // half the files carry properties, as CI builds leave them
				f.Properties = map[string][]string{"build.name": {"app"}, "build.number": {fmt.Sprint(n)}}
			}
			af.Put(key, fmt.Sprintf("pkg%d/1.0/file.bin", n), f)
		}
		total := float64(l.files) * float64(l.size) / 1e6

		// The reference: download and PUT each file, parallel at once.
		must(origin.Do("POST", o.URL+"/api/v1/repositories", admin, fmt.Sprintf(`{"name":"ref%d","format":"generic"}`, i), 201, nil))
		start := time.Now()
		copyAll(af, key, fmt.Sprintf("%s/generic/ref%d", o.URL, i), uploader, l.files)
		ref := time.Since(start)
		fmt.Printf("| %s | reference: GET, then PUT | %.0f | %.1f | %.2f |\n", l.name, float64(l.files)/ref.Seconds(), total/ref.Seconds(), ref.Seconds())

		var m struct {
			ID       string `json:"migration_id"`
			Status   string `json:"status"`
			Progress struct {
				Migrated int64 `json:"migrated_artifacts"`
				Failed   int64 `json:"failed_artifacts"`
			} `json:"progress"`
		}
		body := fmt.Sprintf(`{"source":{"url":%q,"username":"af","password":"pw"},"repositories":[%q],"options":{"parallel_transfers":%d}}`, af.URL, key, *parallel)
		must(origin.Do("POST", o.URL+"/api/v1/migrations", admin, body, 201, &m))
		start = time.Now()
		must(origin.Do("POST", o.URL+"/api/v1/migrations/"+m.ID+"/start", admin, "", 200, nil))
		for m.Status != "completed" {
			time.Sleep(50 * time.Millisecond)
			must(origin.Do("GET", o.URL+"/api/v1/migrations/"+m.ID, admin, "", 200, &m))
			if m.Status == "failed" || m.Status == "completed_with_errors" {
				log.Fatalf("the migration of %s: %+v", l.name, m)
			}
		}
		took := time.Since(start)
		fmt.Printf("| %s | migration (checksums verified) | %.0f | %.1f | %.2f |\n", l.name, float64(l.files)/took.Seconds(), total/took.Seconds(), took.Seconds())
		af.Close()
	}
	_, hwm := proc.Memory(o.PID())
	fmt.Printf("\nThe origin's peak resident memory: %d MiB after starting, %d MiB after every load (both ways).\n", startHWM>>20, hwm>>20)
}

// copyAll downloads each file of the source's repository and uploads it
// with one PUT, parallel at once.
func copyAll(af *artifactorytest.Server, key, to, auth string, n int) {
	work := make(chan int)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *parallel * 2}}
	for range *parallel {
		wg.Go(func() {
			for i := range work {
				p := fmt.Sprintf("pkg%d/1.0/file.bin", i)
				req, _ := http.NewRequest("GET", af.BaseURL()+"/"+key+"/"+p, nil)
				req.SetBasicAuth("af", "pw")
				resp, err := client.Do(req)
				must(err)
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				must(err)
				put, _ := http.NewRequest("PUT", to+"/"+p, bytes.NewReader(data))
				put.Header.Set("Authorization", auth)
				resp, err = client.Do(put)
				must(err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					log.Fatalf("PUT %s: %d", p, resp.StatusCode)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
