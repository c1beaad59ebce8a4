// Command downloads measures the download hot path: an origin and an edge
// on loopback, and nginx serving the same files from disk as the physical
// limit, loaded in turn by wrk (bench/downloads.sh runs it).
//
// It publishes generic blobs of 1 KiB, 64 KiB and 4 MiB and an npm
// package to the origin, registers an edge for both repositories, warms
// the edge's cache, writes the same bytes (the packument as the edge
// answers it) under nginx's root, and then, in interleaved rounds, runs
// wrk against each object on each target: the edge and the origin with an
// API token over HTTP Basic, nginx without credentials. Per run it reads
// req/s, MB/s and p99 from wrk and the server's CPU time from /proc, and
// prints one markdown table with each figure's ratio to nginx's.
//
// With -workingset it also measures a working set (workingset.go): many
// blobs of mixed sizes, asked for at random by many users with a token
// each.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/depot-registry/depot/bench/internal/origin"
	"github.com/depot-registry/depot/shared/formattest"
)

var (
	depot    = flag.String("depot", "", "the depot binary")
	dir      = flag.String("dir", "", "work directory")
	duration = flag.Duration("duration", 10*time.Second, "length of each wrk run")
	conns    = flag.Int("conns", 64, "wrk connections")
	threads  = flag.Int("threads", 2, "wrk threads")
	rounds   = flag.Int("rounds", 2, "interleaved rounds over every target and object")
	only     = flag.String("objects", "", "comma-separated objects to measure, by a word of their name (default: all)")
	wsBlobs  = flag.Int("workingset", 0, "also measure a working set of this many blobs asked for at random (0: none)")
	wsUsers  = flag.Int("users", 50, "users of the working set, each with an API token of their own")
	cold     = flag.Bool("cold", false, "also a cold edge's first pass over the working set, beside its second")
)

const (
	adminPass = "bench-admin-pw-1"
	secret    = "bench-secret-bench-secret-bench-secret-01"
)

// object is one thing downloaded: its path under the edge and the
// origin, and its file under nginx's root.
type object struct {
	name, path, file string
	body             []byte
	// A working set instead: the paths, the files under nginx's root,
	// and the wrk scripts that draw them at random.
	paths              []string
	sizes              []int
	auths              []string // the users' credentials
	files              map[string][]byte
	depotLua, nginxLua string
}

// target is one server measured.
type target struct {
	name, base, auth string
	pids             func() []int
}

type result struct {
	reqs, bytesPerSec, p99, cpuPerReq float64 // req/s, bytes/s, seconds, seconds
}

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *depot == "" || *dir == "" {
		log.Fatal("usage: downloads -depot BIN -dir DIR")
	}
	for _, tool := range []string{"wrk", "nginx"} {
		if _, err := exec.LookPath(tool); err != nil {
			log.Fatalf("%s is needed (bench/downloads.sh installs it on Debian)", tool)
		}
	}
	o := startOrigin()
	defer o.Stop()
	admin, err := origin.Login(o.URL, adminPass)
	must(err)

	var repos []string
	for _, r := range [][2]string{{"bench", "generic"}, {"js", "npm"}} {
		var out struct{ ID string }
		must(origin.Do("POST", o.URL+"/api/v1/repositories", admin, `{"name":"`+r[0]+`","format":"`+r[1]+`"}`, 201, &out))
		repos = append(repos, out.ID)
	}
	var tok struct{ Token string }
	must(origin.Do("POST", o.URL+"/api/v1/users/me/tokens", admin, `{"name":"bench","scopes":["repository:read","repository:write"]}`, 201, &tok))
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+tok.Token))

	var objects []*object
	for _, sz := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"4MiB", 4 << 20}} {
		b := make([]byte, sz.n)
		_, _ = rand.Read(b)
		ob := &object{name: "blob " + sz.name, path: "/generic/bench/blob/1.0/" + sz.name + ".bin", file: sz.name + ".bin", body: b}
		must(origin.Do("PUT", o.URL+ob.path, basic, string(b), 201, nil))
		objects = append(objects, ob)
	}
	tarball := formattest.Tgz(benchT{}, map[string]string{"package/package.json": `{"name":"bench-pkg","version":"1.0.0"}`,
		"package/index.js": strings.Repeat("module.exports = 'depot bench';\n", 200)})
	must(origin.Do("PUT", o.URL+"/npm/js/bench-pkg", basic, string(formattest.NPMDocument("bench-pkg", "1.0.0", "latest", tarball)), 201, nil))
	objects = append(objects,
		&object{name: "npm packument", path: "/npm/js/bench-pkg", file: "packument.json"},
		&object{name: "npm tarball", path: "/npm/js/bench-pkg/-/bench-pkg-1.0.0.tgz", file: "bench-pkg-1.0.0.tgz", body: tarball})

	if *wsBlobs > 0 {
		id, ob := workingSet(o.URL, admin, *wsBlobs, *wsUsers)
		repos = append(repos, id)
		objects = append(objects, ob)
		if *cold {
			coldPass(o.URL, o.PID(), admin, id, ob)
		}
	}

	edge, err := origin.StartEdge(*depot, *dir, o.URL, admin, repos)
	must(err)
	defer edge.Stop()
	log.Printf("downloads: origin %s, edge %s; warming the edge", o.URL, edge.URL)
	for _, ob := range objects {
		for _, p := range ob.paths {
			if err := origin.Do("GET", edge.URL+p, admin, "", 200, nil); err != nil {
				log.Fatalf("warming %s: %v", p, err)
			}
		}
		if ob.paths != nil {
			continue
		}
		for i := 0; i < 3; i++ {
			var body []byte
			if err := origin.Do("GET", edge.URL+ob.path, basic, "", 200, &body); err != nil {
				log.Fatalf("warming %s: %v", ob.path, err)
			}
			if ob.body == nil {
				// The packument names the edge in its tarball URLs; nginx
				// serves the same bytes.
				ob.body = body
			} else if !bytes.Equal(body, ob.body) {
				log.Fatalf("the edge answers %s with other bytes", ob.path)
			}
		}
	}
	ng := startNginx(objects)
	defer ng.stop()

	targets := []target{
		{"edge", edge.URL, basic, func() []int { return []int{edge.PID()} }},
		{"origin", o.URL, basic, func() []int { return []int{o.PID()} }},
		{"nginx", ng.url, "", ng.pids},
	}
	if *only != "" {
		var keep []*object
		for _, ob := range objects {
			for _, w := range strings.Split(*only, ",") {
				if w != "" && strings.Contains(ob.name, w) {
					keep = append(keep, ob)
					break
				}
			}
		}
		objects = keep
	}
	all := map[string][]result{}
	for r := 1; r <= *rounds; r++ {
		for _, ob := range objects {
			for _, tg := range targets {
				res, err := runWrk(tg, ob)
				if err != nil {
					log.Fatalf("%s %s: %v", tg.name, ob.name, err)
				}
				log.Printf("round %d: %-13s %-6s %9.0f req/s %8.1f MB/s p99 %6.2f ms %6.1f µs CPU/req",
					r, ob.name, tg.name, res.reqs, res.bytesPerSec/1e6, res.p99*1e3, res.cpuPerReq*1e6)
				all[ob.name+"/"+tg.name] = append(all[ob.name+"/"+tg.name], res)
			}
		}
	}
	fmt.Printf("\nwrk -t%d -c%d -d%s, %d interleaved rounds (median of rounds); load average before: %s\n\n", *threads, *conns, *duration, *rounds, loadavg())
	fmt.Println("| object | target | req/s | MB/s | p99 ms | server CPU µs/req | req/s vs nginx | MB/s vs nginx |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, ob := range objects {
		ref := median(all[ob.name+"/nginx"])
		for _, tg := range targets {
			m := median(all[ob.name+"/"+tg.name])
			fmt.Printf("| %s | %s | %.0f | %.1f | %.2f | %.1f | %.2fx | %.2fx |\n", ob.name, tg.name, m.reqs, m.bytesPerSec/1e6,
				m.p99*1e3, m.cpuPerReq*1e6, m.reqs/ref.reqs, m.bytesPerSec/ref.bytesPerSec)
		}
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// benchT fails the program where formattest would fail a test.
type benchT struct{}

func (benchT) Helper()           {}
func (benchT) Fatal(args ...any) { log.Fatal(args...) }

func startOrigin() *origin.Process {
	listen, err := origin.FreeAddr()
	must(err)
	raft, err := origin.FreeAddr()
	must(err)
	o, err := origin.Start(origin.Options{Bin: *depot, DataDir: filepath.Join(*dir, "origin"), Listen: listen, RaftAddr: raft,
		Env: []string{"DEPOT_ADMIN_PASSWORD=" + adminPass, "JWT_SECRET=" + secret}, Args: []string{"--rate-limit", "0", "--min-free-bytes", "0", "--log-level", "warn"},
		LogPath: filepath.Join(*dir, "origin.log")})
	must(err)
	if _, err := o.WaitHealthy(time.Minute); err != nil {
		log.Fatal(err)
	}
	return o
}

type nginxProc struct {
	cmd *exec.Cmd
	url string
}

func (n *nginxProc) stop() { _ = n.cmd.Process.Signal(syscall.SIGQUIT); _ = n.cmd.Wait() }

// pids are nginx's master and workers.
func (n *nginxProc) pids() []int {
	pids := []int{n.cmd.Process.Pid}
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", n.cmd.Process.Pid, n.cmd.Process.Pid))
	for _, f := range strings.Fields(string(raw)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// startNginx serves the objects' bytes from disk with sendfile, as many
// workers as cores, no access log: the most a server can do here.
func startNginx(objects []*object) *nginxProc {
	root := filepath.Join(*dir, "nginx")
	must(os.MkdirAll(filepath.Join(root, "www"), 0o755))
	for _, ob := range objects {
		if ob.files == nil {
			must(os.WriteFile(filepath.Join(root, "www", ob.file), ob.body, 0o644))
		}
		for f, b := range ob.files {
			must(os.MkdirAll(filepath.Dir(filepath.Join(root, "www", f)), 0o755))
			must(os.WriteFile(filepath.Join(root, "www", f), b, 0o644))
		}
	}
	listen, err := origin.FreeAddr()
	must(err)
	// Started by root, nginx's workers would become nobody, who cannot
	// read a private work directory: they stay who started them.
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	conf := fmt.Sprintf(`%[3]sworker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  client_body_temp_path %[1]s/tmp;
  proxy_temp_path %[1]s/tmp;
  fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp;
  scgi_temp_path %[1]s/tmp;
  server { listen %[2]s; root %[1]s/www; }
}
`, root, listen, user)
	must(os.WriteFile(filepath.Join(root, "nginx.conf"), []byte(conf), 0o644))
	cmd := exec.Command("nginx", "-c", filepath.Join(root, "nginx.conf"), "-p", root, "-g", "daemon off;")
	out, err := os.Create(filepath.Join(root, "nginx.out"))
	must(err)
	cmd.Stdout, cmd.Stderr = out, out
	must(cmd.Start())
	n := &nginxProc{cmd: cmd, url: "http://" + listen}
	for deadline := time.Now().Add(20 * time.Second); origin.Do("GET", n.url+"/"+objects[0].file, "", "", 200, nil) != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Fatalf("nginx did not come up; see %s", out.Name())
		}
	}
	return n
}

var (
	reqsRe     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	transferRe = regexp.MustCompile(`Transfer/sec:\s+([0-9.]+)([KMG]?B)`)
	p99Re      = regexp.MustCompile(`\n\s+99%\s+([0-9.]+)(us|ms|s)\b`)
	countRe    = regexp.MustCompile(`(\d+) requests in`)
	non2xxRe   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func runWrk(tg target, ob *object) (result, error) {
	args := []string{"-t", strconv.Itoa(*threads), "-c", strconv.Itoa(*conns), "-d", duration.String(), "--latency"}
	path := ob.path
	switch {
	case ob.paths != nil && tg.name == "nginx":
		args, path = append(args, "-s", ob.nginxLua), "/"
	case ob.paths != nil:
		args, path = append(args, "-s", ob.depotLua), "/"
	case tg.name == "nginx":
		path = "/" + ob.file
	}
	if tg.auth != "" && ob.paths == nil {
		args = append(args, "-H", "Authorization: "+tg.auth)
	}
	args = append(args, tg.base+path)
	before := cpu(tg.pids())
	out, err := exec.Command("wrk", args...).CombinedOutput()
	used := cpu(tg.pids()) - before
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	s := string(out)
	if m := non2xxRe.FindStringSubmatch(s); m != nil {
		return result{}, fmt.Errorf("%s non-2xx answers:\n%s", m[1], s)
	}
	var r result
	m1, m2, m3, m4 := reqsRe.FindStringSubmatch(s), transferRe.FindStringSubmatch(s), p99Re.FindStringSubmatch(s), countRe.FindStringSubmatch(s)
	if m1 == nil || m2 == nil || m3 == nil || m4 == nil {
		return result{}, fmt.Errorf("cannot read wrk's output:\n%s", s)
	}
	r.reqs, _ = strconv.ParseFloat(m1[1], 64)
	r.bytesPerSec, _ = strconv.ParseFloat(m2[1], 64)
	r.bytesPerSec *= map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[m2[2]]
	r.p99, _ = strconv.ParseFloat(m3[1], 64)
	r.p99 *= map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1}[m3[2]]
	n, _ := strconv.ParseFloat(m4[1], 64)
	r.cpuPerReq = used / n
	return r, nil
}

// cpu is the user and system CPU seconds the processes have used.
func cpu(pids []int) float64 {
	var ticks float64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): state is
		// field 3; utime and stime are fields 14 and 15.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		u, _ := strconv.ParseFloat(f[11], 64)
		s, _ := strconv.ParseFloat(f[12], 64)
		ticks += u + s
	}
	return ticks / 100 // USER_HZ
}

func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v) == 0 {
			return 0
		}
		if len(v)%2 == 0 {
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		return v[len(v)/2]
	}
	return result{pick(func(r result) float64 { return r.reqs }), pick(func(r result) float64 { return r.bytesPerSec }),
		pick(func(r result) float64 { return r.p99 }), pick(func(r result) float64 { return r.cpuPerReq })}
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
