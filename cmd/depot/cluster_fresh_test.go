package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadAfterWriteAcrossOrigins: a client behind a load balancer that
// spreads requests over the origins writes at one and reads at another at
// once, without X-Depot-Min-Index (a docker push then pull, a publish then
// install): a follower that has not applied the write yet catches up with
// the leader before it answers "not found", so the read finds it.
func TestReadAfterWriteAcrossOrigins(t *testing.T) {
	c := startCluster(t)
	leader := leaderIndex(t, c)
	call(t, "POST", c.procs[leader].url+"/api/v1/repositories", c.tok, strings.NewReader(`{"name":"files","format":"generic"}`), 201)
	misses := 0
	const n = 150
	for i := range n {
		at, from := c.procs[(leader+i%2)%3], c.procs[(leader+1+i%2)%3] // leader then follower, follower then follower
		path := fmt.Sprintf("/generic/files/p/%d/f.txt", i)
		call(t, "PUT", at.url+path, c.basic, strings.NewReader("x"), 201)
		req, _ := http.NewRequest("GET", from.url+path, nil)
		req.Header.Set("Authorization", c.basic)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			misses++
		}
	}
	if misses > 0 {
		t.Fatalf("%d of %d reads at another origin right after the write did not find it", misses, n)
	}
}
