package main

import (
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/bench/internal/stat"
)

// coldPass starts an edge of its own with an empty cache that prefetches
// nothing, assigned the working set's repository, and asks it for every
// blob of the working set once, in a random order, by -conns clients each
// with a random user's token: every answer is a miss, streamed from the
// origin while the edge stores it. Then the same pass again, every answer
// a hit. Prints both passes as one markdown table.
func coldPass(originURL string, originPID int, admin, repoID string, ob *object) {
	at := filepath.Join(*dir, "cold")
	must(os.MkdirAll(at, 0o755))
	edge, err := origin.StartEdge(*depot, at, originURL, admin, []string{repoID}, "--prefetch", "none")
	must(err)
	defer edge.Stop()
	order := mrand.Perm(len(ob.paths))
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}
	fmt.Printf("\n### A cold edge (empty cache, --prefetch none): each of the %d blobs once, %d clients\n\n", len(ob.paths), *conns)
	fmt.Println("| pass | req/s | MB/s | p50 ms | p99 ms | max ms | edge CPU µs/req | origin CPU µs/req |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, pass := range []string{"first (every blob a miss)", "second (every blob cached)"} {
		var (
			next  atomic.Int64
			bytes atomic.Int64
			mu    sync.Mutex
			lat   []time.Duration
			wg    sync.WaitGroup
		)
		edgeCPU, originCPU := cpu([]int{edge.PID()}), cpu([]int{originPID})
		start := time.Now()
		for range *conns {
			wg.Go(func() {
				var mine []time.Duration
				for {
					i := int(next.Add(1)) - 1
					if i >= len(order) {
						break
					}
					k := order[i]
					req, _ := http.NewRequest("GET", edge.URL+ob.paths[k], nil)
					req.Header.Set("Authorization", ob.auths[mrand.IntN(len(ob.auths))])
					t := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						log.Fatalf("cold pass: %s: %v", ob.paths[k], err)
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || n != int64(ob.sizes[k]) {
						log.Fatalf("cold pass: %s: %d, %d of %d bytes, %v", ob.paths[k], resp.StatusCode, n, ob.sizes[k], err)
					}
					mine = append(mine, time.Since(t))
					bytes.Add(n)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		took := time.Since(start)
		edgeCPU, originCPU = cpu([]int{edge.PID()})-edgeCPU, cpu([]int{originPID})-originCPU
		p := func(q int) float64 { return float64(stat.Percentile(lat, q)) / 1e6 }
		perReq := func(s float64) float64 { return s / float64(len(lat)) * 1e6 }
		fmt.Printf("| %s | %.0f | %.1f | %.2f | %.2f | %.2f | %.0f | %.0f |\n", pass, float64(len(lat))/took.Seconds(),
			float64(bytes.Load())/took.Seconds()/1e6, p(50), p(99), p(100), perReq(edgeCPU), perReq(originCPU))
	}
	fmt.Println()
}
