package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestScansSurviveLeaderLoss: three origin processes; 150 npm packages
// published and scanned on upload; a new advisory naming one of them is
// loaded, so the leader queues a re-scan of everything scanned; once
// scans are seen queued, the leader is killed with -9. The new leader
// queues again what the old one left running and completes every scan,
// the ones seen queued included, against the new database, and the
// package the advisory names is flagged.
func TestScansSurviveLeaderLoss(t *testing.T) {
	c := startCluster(t)
	procs, tok, basic := c.procs, c.tok, c.basic
	leader := c.byNodeID()[c.view.LeaderID]
	other := procs[(leader+1)%3].url
	advisory := func(id, pkg string) string {
		return fmt.Sprintf(`{"schema_version":"1.6.0","id":%q,"modified":"2026-01-01T00:00:00Z","summary":"a test advisory",
			"affected":[{"package":{"ecosystem":"npm","name":%q},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"2.0.0"}]}]}],
			"database_specific":{"severity":"HIGH"}}`, id, pkg)
	}
	call(t, "POST", other+"/api/v1/repositories", tok, strings.NewReader(`{"name":"js","format":"npm"}`), 201)
	call(t, "POST", other+"/api/v1/security/advisories?filename=first.json", tok, strings.NewReader(advisory("TEST-0001", "unrelated")), 200)
	const n = 150
	for i := range n {
		name := fmt.Sprintf("pkg-%d", i)
		call(t, "PUT", other+"/npm/js/"+name, basic, bytes.NewReader(npmPublishDoc(t, name, "1.0.0")), 201)
	}
	total := func(query string) int {
		var l struct{ Total int }
		_ = json.Unmarshal(call(t, "GET", other+"/api/v1/security/scans?limit=1&"+query, tok, nil, 200), &l)
		return l.Total
	}
	waitFor(t, 60*time.Second, "every upload scanned", func() bool { return total("status=completed") == n })

	var loaded struct{ Database meta.AdvisoryDB }
	_ = json.Unmarshal(call(t, "POST", other+"/api/v1/security/advisories?filename=second.json", tok,
		strings.NewReader(advisory("TEST-0002", "pkg-7")), 200), &loaded)
	var queued struct{ Scans []meta.Scan }
	waitFor(t, 10*time.Second, "re-scans queued", func() bool {
		_ = json.Unmarshal(call(t, "GET", other+"/api/v1/security/scans?status=queued&limit=100", tok, nil, 200), &queued)
		return len(queued.Scans) > 0
	})
	_ = procs[leader].cmd.Process.Kill()
	_ = procs[leader].cmd.Wait()
	t.Logf("killed the leader with %d scans seen queued", len(queued.Scans))

	waitFor(t, 90*time.Second, "every re-scan completed on the new leader", func() bool {
		return total("status=queued") == 0 && total("status=running") == 0 && total("status=completed") == 2*n
	})
	for _, sc := range queued.Scans {
		var got meta.Scan
		_ = json.Unmarshal(call(t, "GET", other+"/api/v1/security/scans/"+sc.ID, tok, nil, 200), &got)
		if got.Status != meta.ScanCompleted || got.Advisories != loaded.Database.Digest || got.Node == c.view.LeaderID {
			t.Fatalf("a scan queued when the leader died: %+v (database %s, old leader %s)", got, loaded.Database.Digest, c.view.LeaderID)
		}
	}
	var all []meta.Scan
	for page := 1; ; page++ {
		var l struct{ Scans []meta.Scan }
		_ = json.Unmarshal(call(t, "GET", other+fmt.Sprintf("/api/v1/security/scans?status=completed&limit=100&page=%d", page), tok, nil, 200), &l)
		if len(l.Scans) == 0 {
			break
		}
		all = append(all, l.Scans...)
	}
	high := 0
	for _, sc := range all {
		if sc.Advisories == loaded.Database.Digest && sc.Vulnerabilities.High > 0 {
			high++
			if sc.PackageName != "pkg-7" {
				t.Errorf("flagged: %+v", sc)
			}
		}
	}
	if high != 1 {
		t.Errorf("%d scans against the new database flag a package, want 1 (pkg-7)", high)
	}
}

// npmPublishDoc is the document npm PUTs to publish name@version.
func npmPublishDoc(t *testing.T, name, version string) []byte {
	t.Helper()
	tgz := formattest.Tgz(t, map[string]string{"package/package.json": fmt.Sprintf(`{"name":%q,"version":%q}`, name, version),
		"package/index.js": "module.exports = 1;\n"})
	s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
	doc := map[string]any{"_id": name, "name": name, "dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{"name": name, "version": version, "_id": name + "@" + version,
			"dist": map[string]any{"shasum": hex.EncodeToString(s1[:]), "integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"tarball": "http://elsewhere/x.tgz"}}},
		"_attachments": map[string]any{name + "-" + version + ".tgz": map[string]any{"content_type": "application/octet-stream",
			"data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz)}}}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
