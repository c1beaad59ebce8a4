package inventory

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/service/scan/inventory/inventorytest"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/vuln"
	"github.com/depot-registry/depot/shared/vuln/vulntest"
)

// The benchmark image: about 300 MB unpacked in three gzip'd layers, as
// images are built. A base of an OS (a dpkg database of 120 packages,
// 75 MB of shared libraries: ELF files of incompressible bytes, each
// searched for Go build information, and 30 MB of documentation), a
// runtime (150 Python distributions with their sources, 12 real Go
// binaries, 30 jars of 1 MB with their Maven metadata) and an
// application (a node_modules tree of 1,000 packages with their code,
// and the package-lock.json of the same 1,000 dependencies). The
// packages are ones the advisory data names, at versions it affects.
// The layers are written once into the system's temporary directory
// and reused.

const benchImageVersion = "v2"

func benchImage(b *testing.B) (layers []string, npm [][2]string) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "depot-bench-image-"+benchImageVersion)
	npm = advised(b, vuln.NPM, 1000)
	layers = []string{filepath.Join(dir, "base.tar.gz"), filepath.Join(dir, "runtime.tar.gz"), filepath.Join(dir, "app.tar.gz")}
	if _, err := os.Stat(layers[2]); err == nil {
		return layers, npm
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	random := func(n int) []byte {
		out := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				out[i+j] = byte(v >> (8 * j))
			}
		}
		return out
	}
	words := strings.Fields("the package returns a value for each request when the option is set and otherwise uses default configuration of module function data")
	text := func(n int) []byte {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				fmt.Fprintf(&sb, " %d;\n", rng.IntN(100000))
			} else {
				sb.WriteByte(' ')
			}
		}
		return []byte(sb.String())
	}

	base := map[string][]byte{"etc/os-release": []byte("ID=debian\nVERSION_ID=\"12\"\n")}
	var status strings.Builder
	for i := range 120 {
		fmt.Fprintf(&status, "Package: lib%d\nStatus: install ok installed\nVersion: 1.%d-1\nDescription: a library\n long text\n\n", i, i)
	}
	base["var/lib/dpkg/status"] = []byte(status.String())
	for i := range 250 {
		base[fmt.Sprintf("usr/lib/x86_64-linux-gnu/lib%d.so.1", i)] = append([]byte("\x7fELF"), random(300<<10)...)
	}
	for i := range 300 {
		base[fmt.Sprintf("usr/share/doc/pkg%d/README", i)] = text(100 << 10)
	}
	writeLayer(b, layers[0], base)

	runtime := map[string][]byte{}
	for i, p := range advised(b, vuln.PyPI, 150) {
		d := fmt.Sprintf("usr/lib/python3.11/site-packages/%s-%s.dist-info/", p[0], p[1])
		runtime[d+"METADATA"] = fmt.Appendf(nil, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n\n%s", p[0], p[1], text(4<<10))
		for j := range 5 {
			runtime[fmt.Sprintf("usr/lib/python3.11/site-packages/pkg%d/mod%d.py", i, j)] = text(40 << 10)
		}
	}
	gobin := inventorytest.GoBinary(b, "github.com/gorilla/websocket", "v1.4.0")
	for i := range 12 {
		runtime[fmt.Sprintf("usr/local/bin/tool%d", i)] = gobin
	}
	for i := range 30 {
		runtime[fmt.Sprintf("opt/app/lib/lib%d.jar", i)] = benchJar(b, fmt.Sprintf("com.example%d", i), "lib", "1.0", random(1<<20))
	}
	writeLayer(b, layers[1], runtime)

	app := map[string][]byte{}
	lock := map[string]any{"": map[string]string{"name": "app", "version": "1.0.0"}}
	seen := map[string]bool{}
	for i, p := range npm {
		where := npmPath(i, p[0], seen)
		d := "app/" + where + "/"
		app[d+"package.json"] = fmt.Appendf(nil, `{"name": %q, "version": %q, "main": "index.js"}`, p[0], p[1])
		app[d+"index.js"] = text(120 << 10)
		lock[where] = map[string]string{"version": p[1]}
	}
	raw, _ := json.Marshal(map[string]any{"lockfileVersion": 3, "packages": lock})
	app["app/package-lock.json"] = raw
	writeLayer(b, layers[2], app)
	return layers, npm
}

// advised is n distinct packages of an ecosystem the advisory data
// names, each at the first version a record lists or introduces.
func advised(b *testing.B, eco string, n int) [][2]string {
	seen := map[string]bool{}
	var out [][2]string
	for _, a := range vulntest.Advisories(b) {
		for _, af := range a.Affected {
			if af.Package.Ecosystem != eco || seen[af.Package.Name] || len(out) >= n {
				continue
			}
			v := ""
			if len(af.Versions) > 0 {
				v = af.Versions[0]
			}
			for _, r := range af.Ranges {
				for _, e := range r.Events {
					if v == "" && e.Introduced != "" && e.Introduced != "0" {
						v = e.Introduced
					}
				}
			}
			if v == "" || strings.ContainsAny(af.Package.Name, " ") {
				continue
			}
			seen[af.Package.Name] = true
			out = append(out, [2]string{af.Package.Name, v})
		}
	}
	if len(out) == 0 {
		b.Fatalf("no %s packages in the data", eco)
	}
	for i := 0; len(out) < n; i++ { // fewer names than n: again, installed elsewhere
		out = append(out, out[i])
	}
	return out
}

// npmPath is where the i-th package of a tree is installed: at the top
// of node_modules the first time its name comes, under another package's
// node_modules after that.
func npmPath(i int, name string, seen map[string]bool) string {
	if !seen[name] {
		seen[name] = true
		return "node_modules/" + name
	}
	return fmt.Sprintf("node_modules/host-%d/node_modules/%s", i, name)
}

func writeLayer(b *testing.B, path string, files map[string][]byte) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			b.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(path+".part", buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".part", path); err != nil {
		b.Fatal(err)
	}
}

func benchJar(b *testing.B, group, artifact, version string, classes []byte) []byte {
	return []byte(jarOf(b, map[string]string{
		"META-INF/maven/" + group + "/" + artifact + "/pom.properties": "groupId=" + group + "\nartifactId=" + artifact + "\nversion=" + version + "\n",
		"com/example/Big.class": string(classes),
	}))
}

// BenchmarkImage scans the benchmark image: inventory is its layers'
// packages found, with the heap's peak above what was in use before
// (peak-MiB: live objects and garbage not yet collected, sampled every
// 5 ms); scan is that and the packages matched against the real advisory
// data (the database built beforehand, as an origin keeps it); beside
// them, read-only is the same layers only unpacked and read to their end,
// the floor any scan of them pays.
func BenchmarkImage(b *testing.B) {
	layers, _ := benchImage(b)
	var packed, unpacked int64
	for _, l := range layers {
		st, err := os.Stat(l)
		if err != nil {
			b.Fatal(err)
		}
		packed += st.Size()
	}
	inventory := func(b *testing.B) []Package {
		im := New()
		for _, l := range layers {
			readLayerFile(b, im, l)
		}
		return im.Packages()
	}
	b.Run("inventory", func(b *testing.B) {
		b.ReportAllocs()
		runtime.GC()
		base := heapInUse()
		var pkgs int
		peak := sampleHeap(func() {
			for b.Loop() {
				pkgs = len(inventory(b))
			}
		})
		b.ReportMetric(float64(pkgs), "packages")
		b.ReportMetric(peak-base, "peak-MiB")
	})
	b.Run("scan", func(b *testing.B) {
		db := vuln.Build(vulntest.Advisories(b))
		var pkgs, findings int
		for b.Loop() {
			found := inventory(b)
			pkgs, findings = len(found), 0
			for _, p := range found {
				f, _ := db.Match(p.Ecosystem, p.Name, p.Version)
				findings += len(f)
			}
		}
		b.ReportMetric(float64(pkgs), "packages")
		b.ReportMetric(float64(findings), "findings")
	})
	b.Run("read-only", func(b *testing.B) {
		for b.Loop() {
			unpacked = 0
			for _, l := range layers {
				f, err := os.Open(l)
				if err != nil {
					b.Fatal(err)
				}
				zr, _ := gzip.NewReader(f)
				tr := tar.NewReader(zr)
				for {
					_, err := tr.Next()
					if err != nil {
						break
					}
					n, _ := io.Copy(io.Discard, tr)
					unpacked += n
				}
				f.Close()
			}
		}
		b.ReportMetric(float64(unpacked)/1e6, "MB-unpacked")
		b.ReportMetric(float64(packed)/1e6, "MB-packed")
	})
}

// BenchmarkLockfile1000 reads a package-lock.json of 1,000 dependencies
// that advisories name and matches them.
func BenchmarkLockfile1000(b *testing.B) {
	_, npm := benchImage(b)
	lock := map[string]any{}
	seen := map[string]bool{}
	for i, p := range npm {
		lock[npmPath(i, p[0], seen)] = map[string]string{"version": p[1]}
	}
	raw, _ := json.Marshal(map[string]any{"lockfileVersion": 3, "packages": lock})
	db := vuln.Build(vulntest.Advisories(b))
	findings := 0
	for b.Loop() {
		pkgs, err := packageLock("package-lock.json", raw)
		if err != nil || len(pkgs) != len(distinct(npm)) {
			b.Fatalf("%d packages, %v", len(pkgs), err)
		}
		findings = 0
		for _, p := range pkgs {
			f, _ := db.Match(p.Ecosystem, p.Name, p.Version)
			findings += len(f)
		}
	}
	b.ReportMetric(float64(findings), "findings")
	b.ReportMetric(float64(len(raw))/1e3, "kB-lockfile")
}

// distinct is the (name, version) pairs of a tree once each (what a
// lockfile's reading keeps).
func distinct(pkgs [][2]string) map[[2]string]bool {
	out := map[[2]string]bool{}
	for _, p := range pkgs {
		out[p] = true
	}
	return out
}

func readLayerFile(b *testing.B, im *Image, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if err := im.Layer(context.Background(), f, st.Size(), format.Gzip); err != nil {
		b.Fatal(err)
	}
}

// heapInUse is the heap's live objects, in MiB.
func heapInUse() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()) / (1 << 20)
}

// sampleHeap runs f and returns the highest heap in use seen meanwhile,
// in MiB.
func sampleHeap(f func()) float64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	return float64(peak.Load()) / (1 << 20)
}
