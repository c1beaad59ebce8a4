package formattest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/depot-registry/depot/shared/meta"
)

// RunRaces races writes of every format on two origins' worth of
// handlers (nodes gives them: their own formats, so their own node-local
// locks): only the preconditions of the commands keep their writes from
// overwriting each other. nodes runs once per race.
func RunRaces(t *testing.T, nodes func(*testing.T) (*Env, [2]string)) {
	t.Run("NPMPublish", func(t *testing.T) { raceNPMPublish(t, nodes) })
	t.Run("NPMTagUnpublish", func(t *testing.T) { raceNPMTagUnpublish(t, nodes) })
	t.Run("PyPIUpload", func(t *testing.T) { racePyPIUpload(t, nodes) })
	t.Run("MavenDeploy", func(t *testing.T) { raceMavenDeploy(t, nodes) })
	t.Run("OCITagMoves", func(t *testing.T) { raceOCITagMoves(t, nodes) })
}

// racers is how many writes a race runs at once.
const racers = 12

// race runs n requests at once, request i on node i%2, and returns the
// statuses.
func race(n int, do func(i int) int) []int {
	out := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = do(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// raceNPMPublish: publishes of different versions of one package, on
// two nodes at once, each under its own dist-tag: every acknowledged
// version and every tag is in the packument afterwards.
func raceNPMPublish(t *testing.T, twoNodes func(*testing.T) (*Env, [2]string)) {
	e, nodes := twoNodes(t)
	e.Repo("js", "npm")
	docs := make([][]byte, racers)
	for i := range docs {
		docs[i] = NPMPublish(t, "pkg", fmt.Sprintf("1.0.%d", i), fmt.Sprintf("t%d", i))
	}
	statuses := race(racers, func(i int) int {
		st, _ := e.Do("PUT", nodes[i%2]+"/npm/js/pkg", "application/json", docs[i])
		return st
	})
	st, body := e.Do("GET", nodes[0]+"/npm/js/pkg", "", nil)
	if st != http.StatusOK {
		t.Fatalf("packument: %d %s", st, body)
	}
	var doc struct {
		Versions map[string]any    `json:"versions"`
		Tags     map[string]string `json:"dist-tags"`
		Time     map[string]string `json:"time"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for i, s := range statuses {
		v := fmt.Sprintf("1.0.%d", i)
		switch s {
		case http.StatusCreated:
			acked++
			if doc.Versions[v] == nil || doc.Time[v] == "" || doc.Tags[fmt.Sprintf("t%d", i)] != v {
				t.Errorf("acknowledged publish of %s lost: versions %v tags %v", v, keys(doc.Versions), doc.Tags)
			}
		case http.StatusServiceUnavailable: // gave up deciding: nothing written
			if doc.Versions[v] != nil {
				t.Errorf("refused publish of %s is there", v)
			}
		default:
			t.Errorf("publish of %s: status %d", v, s)
		}
	}
	if acked < racers/2 || len(doc.Versions) != acked {
		t.Fatalf("%d of %d publishes acknowledged, packument has %d versions", acked, racers, len(doc.Versions))
	}
	if doc.Versions[doc.Tags["latest"]] == nil {
		t.Fatalf("latest points at %q, not a version", doc.Tags["latest"])
	}
}

// raceNPMTagUnpublish: a dist-tag set to a version on one node while
// another node unpublishes that version. Each decision read what the
// other changes (the tag write the versions, the unpublish the tags), so
// one of them decides again: either the tag lands first and the unpublish
// removes it with the version, or the unpublish lands first and the tag
// is refused with 404. No tag is ever left naming a removed version
// (where a republish of that version would bring it back).
func raceNPMTagUnpublish(t *testing.T, twoNodes func(*testing.T) (*Env, [2]string)) {
	e, nodes := twoNodes(t)
	repo := e.Repo("js", "npm")
	if st, body := e.Do("PUT", nodes[0]+"/npm/js/pkg", "application/json", NPMPublish(t, "pkg", "1.0.0", "latest")); st != http.StatusCreated {
		t.Fatalf("first publish: %d %s", st, body)
	}
	for round := 0; round < 15; round++ {
		v := fmt.Sprintf("2.0.%d", round)
		if st, body := e.Do("PUT", nodes[0]+"/npm/js/pkg", "application/json", NPMPublish(t, "pkg", v, "next")); st != http.StatusCreated {
			t.Fatalf("publish %s: %d %s", v, st, body)
		}
		statuses := race(2, func(i int) int {
			if i == 0 {
				st, _ := e.Do("PUT", nodes[0]+fmt.Sprintf("/npm/js/-/package/pkg/dist-tags/t%d", round), "application/json", []byte(fmt.Sprintf("%q", v)))
				return st
			}
			st, _ := e.Do("DELETE", nodes[1]+"/npm/js/pkg/-/pkg-"+v+".tgz/-rev/1", "", nil)
			return st
		})
		if statuses[1] != http.StatusOK || (statuses[0] != http.StatusCreated && statuses[0] != http.StatusNotFound) {
			t.Fatalf("round %d: statuses %v", round, statuses)
		}
		err := e.Store.View(func(tx *meta.Tx) error {
			arts, err := tx.ArtifactsUnder(repo.ID, "pkg/-/")
			have := map[string]bool{}
			for _, a := range arts {
				have[a.Version] = true
			}
			for _, kv := range tx.KVList(repo.ID, "tag/pkg/") {
				var tv string
				_ = json.Unmarshal(kv.Value, &tv)
				if !have[tv] {
					t.Errorf("round %d: %s names %s, which was unpublished (statuses %v)", round, kv.Key, tv, statuses)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// racePyPIUpload: the same file name uploaded on two nodes at once,
// under two spellings of its version: one upload wins, the others get
// PyPI's "File already exists", and one file is stored.
func racePyPIUpload(t *testing.T, twoNodes func(*testing.T) (*Env, [2]string)) {
	e, nodes := twoNodes(t)
	repo := e.Repo("py", "pypi")
	statuses := race(racers, func(i int) int {
		version := []string{"1.0a1", "1.0A1"}[i%2] // one file name, two paths
		ct, body := PyPIForm(t, version, fmt.Sprintf("sdist %d", i))
		st, _ := e.Do("POST", nodes[i%2]+"/pypi/py/", ct, body)
		return st
	})
	ok := 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusBadRequest, http.StatusServiceUnavailable:
		default:
			t.Errorf("status %d", s)
		}
	}
	files := artifacts(t, e, repo)
	if ok != 1 || len(files) != 1 {
		t.Fatalf("%d uploads acknowledged (statuses %v), %d files stored: %v", ok, statuses, len(files), files)
	}
}

func artifacts(t *testing.T, e *Env, repo *meta.Repository) []string {
	e.Settle()
	var out []string
	err := e.Store.View(func(tx *meta.Tx) error {
		arts, err := tx.ArtifactsUnder(repo.ID, "")
		for _, a := range arts {
			out = append(out, a.Path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// raceMavenDeploy: the same release coordinates deployed on two nodes
// at once: one deploy wins, the others get 409, and what is stored is the
// winner's bytes. Snapshot files may be replaced: every deploy succeeds
// and one file remains.
func raceMavenDeploy(t *testing.T, twoNodes func(*testing.T) (*Env, [2]string)) {
	e, nodes := twoNodes(t)
	repo := e.Repo("m2", "maven")
	path := "/maven2/m2/com/example/lib/1.0/lib-1.0.jar"
	bodies := make([]string, racers)
	statuses := race(racers, func(i int) int {
		bodies[i] = fmt.Sprintf("jar %d", i)
		st, _ := e.Do("PUT", nodes[i%2]+path, "application/java-archive", []byte(bodies[i]))
		return st
	})
	winner := -1
	for i, s := range statuses {
		switch s {
		case http.StatusCreated:
			if winner >= 0 {
				t.Fatalf("two deploys of one release file acknowledged: %v", statuses)
			}
			winner = i
		case http.StatusConflict, http.StatusServiceUnavailable:
		default:
			t.Errorf("deploy %d: status %d", i, s)
		}
	}
	if winner < 0 {
		t.Fatalf("no deploy acknowledged: %v", statuses)
	}
	if st, body := e.Do("GET", nodes[1]+path, "", nil); st != http.StatusOK || string(body) != bodies[winner] {
		t.Fatalf("stored %q (%d), the acknowledged deploy sent %q", body, st, bodies[winner])
	}
	snap := "/maven2/m2/com/example/lib/2.0-SNAPSHOT/lib-2.0-SNAPSHOT.jar"
	statuses = race(racers, func(i int) int {
		st, _ := e.Do("PUT", nodes[i%2]+snap, "application/java-archive", []byte(fmt.Sprint("snap ", i)))
		return st
	})
	for _, s := range statuses {
		if s != http.StatusCreated && s != http.StatusServiceUnavailable {
			t.Fatalf("snapshot deploys: %v", statuses)
		}
	}
	n := 0
	for _, p := range artifacts(t, e, repo) {
		if strings.Contains(p, "SNAPSHOT") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d snapshot files stored, want 1", n)
	}
}

// raceOCITagMoves: one tag moved to different manifests on two nodes
// at once, each manifest also pushed under a tag of its own: afterwards
// the tag names one of them, every acknowledged push is reachable by its
// own tag, and every manifest is visible exactly once when untagged (the
// digest artifact the format keeps for it) and not at all by digest when
// tagged.
func raceOCITagMoves(t *testing.T, twoNodes func(*testing.T) (*Env, [2]string)) {
	e, nodes := twoNodes(t)
	repo := e.Repo("ctr", "docker")
	layer := []byte("layer bytes")
	if st, body := e.Do("POST", nodes[0]+"/v2/ctr/app/blobs/uploads/?digest="+SHA256Digest(layer), "application/octet-stream", layer); st != http.StatusCreated {
		t.Fatalf("layer: %d %s", st, body)
	}
	manifests := make([][]byte, racers)
	for i := range manifests {
		cfg := []byte(fmt.Sprintf(`{"config":{"Env":["N=%d"]}}`, i))
		if st, body := e.Do("POST", nodes[i%2]+"/v2/ctr/app/blobs/uploads/?digest="+SHA256Digest(cfg), "application/octet-stream", cfg); st != http.StatusCreated {
			t.Fatalf("config %d: %d %s", i, st, body)
		}
		manifests[i] = []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
			`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
			`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
			SHA256Digest(cfg), len(cfg), SHA256Digest(layer), len(layer)))
	}
	const mt = "application/vnd.oci.image.manifest.v1+json"
	statuses := race(2*racers, func(i int) int {
		m := manifests[i/2]
		tag := "latest"
		if i%4 >= 2 {
			tag = fmt.Sprintf("v%d", i/2)
		}
		st, _ := e.Do("PUT", nodes[i%2]+"/v2/ctr/app/manifests/"+tag, mt, m)
		return st
	})
	for i, s := range statuses {
		if s != http.StatusCreated && s != http.StatusServiceUnavailable {
			t.Fatalf("push %d: status %d", i, s)
		}
	}
	digests := map[string]bool{}
	for _, m := range manifests {
		digests[SHA256Digest(m)] = true
	}
	e.Settle()
	err := e.Store.View(func(tx *meta.Tx) error {
		arts, err := tx.ArtifactsUnder(repo.ID, "app")
		if err != nil {
			return err
		}
		tagged, untagged := map[string]int{}, map[string]int{}
		for _, a := range arts {
			var at struct {
				Digest string `json:"digest"`
			}
			_ = json.Unmarshal(a.Attrs, &at)
			if !digests[at.Digest] {
				t.Errorf("artifact %s names unknown manifest %s", a.Path, at.Digest)
			}
			if strings.Contains(a.Path, ":") {
				tagged[at.Digest]++
			} else {
				untagged[at.Digest]++
			}
		}
		for d := range digests {
			if _, ok := tx.KV(repo.ID, "m/app@"+d); !ok {
				continue // its push never got in
			}
			switch {
			case tagged[d] > 0 && untagged[d] != 0:
				t.Errorf("tagged manifest %s also has %d digest artifacts", d, untagged[d])
			case tagged[d] == 0 && untagged[d] != 1:
				t.Errorf("untagged manifest %s has %d digest artifacts, want 1", d, untagged[d])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range statuses {
		if i%4 >= 2 && s == http.StatusCreated {
			if st, body := e.Do("GET", nodes[0]+fmt.Sprintf("/v2/ctr/app/manifests/v%d", i/2), "", nil); st != http.StatusOK || !bytes.Equal(body, manifests[i/2]) {
				t.Errorf("acknowledged push of v%d: GET %d", i/2, st)
			}
		}
	}
	if st, body := e.Do("GET", nodes[1]+"/v2/ctr/app/manifests/latest", "", nil); st != http.StatusOK || !digests[SHA256Digest(body)] {
		t.Fatalf("latest: %d", st)
	}
}
