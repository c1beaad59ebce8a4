// Command npmflood measures what concurrent large npm publishes cost an
// origin process: for each phase it starts a fresh origin from the given
// binary in a temporary data directory, creates an npm repository and a
// write token through the REST API, sends -n concurrent publishes of a
// -size byte tarball (a body of about 4/3 of that), and reports the
// origin's peak resident memory (VmHWM, and the highest VmRSS sampled).
//
// Phases: "wrong" publishes carry a wrong dist.shasum (each is refused
// after its body is read), "correct" ones are accepted. Tarballs are
// generated while they are sent, so the client holds none of them. Linux
// only (/proc).
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/depot-registry/depot/bench/internal/proc"
)

func main() {
	depot := flag.String("depot", "", "depot binary to run (required)")
	n := flag.Int("n", 4, "concurrent publishes per phase")
	size := flag.Int("size", 127<<20, "tarball bytes (the body is about 4/3 of it)")
	phases := flag.String("phases", "wrong,correct", "phases to run, in order: wrong, correct")
	flag.Parse()
	if *depot == "" {
		fmt.Fprintln(os.Stderr, "npmflood: -depot is required")
		os.Exit(2)
	}
	fmt.Printf("| phase | publishes | body MiB each | statuses | seconds | baseline RSS MiB | peak RSS MiB (VmHWM) | peak RSS MiB (sampled) |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|\n")
	for _, ph := range strings.Split(*phases, ",") {
		if ph != "wrong" && ph != "correct" {
			fmt.Fprintf(os.Stderr, "npmflood: unknown phase %q\n", ph)
			os.Exit(2)
		}
		if err := phase(*depot, ph, *n, *size); err != nil {
			fmt.Fprintf(os.Stderr, "npmflood: %s: %v\n", ph, err)
			os.Exit(1)
		}
	}
}

// phase runs one flood against a fresh origin and prints its row.
func phase(bin, kind string, n, size int) error {
	dir, err := os.MkdirTemp("", "npmflood-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o, err := startOrigin(bin, dir)
	if err != nil {
		return err
	}
	defer o.stop()
	token, err := setup(o.url)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, o.log.String())
	}
	base, _ := proc.Memory(o.pid())
	stopSampling := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var peak int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _ := proc.Memory(o.pid()); rss > peak {
				peak = rss
			}
			select {
			case <-stopSampling:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	statuses := make([]string, n)
	bodySize := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("flood%d", i)
			code, sent, err := publish(o.url, token, name, size, kind == "wrong")
			bodySize[i] = sent
			if err != nil {
				statuses[i] = "error: " + err.Error()
				return
			}
			statuses[i] = strconv.Itoa(code)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	peak := <-sampled
	_, hwm := proc.Memory(o.pid())
	fmt.Printf("| %s shasum | %d | %.0f | %s | %.1f | %d | %d | %d |\n", kind, n, float64(bodySize[0])/(1<<20),
		strings.Join(statuses, " "), elapsed.Seconds(), base>>20, hwm>>20, peak>>20)
	return nil
}

type origin struct {
	cmd *exec.Cmd
	url string
	log *bytes.Buffer
}

func (o *origin) pid() int { return o.cmd.Process.Pid }

func (o *origin) stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = o.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = o.cmd.Process.Kill()
		<-done
	}
}

const initialPassword = "bench-initial-pw-1"
const password = "bench-Secret-pw-2"

func startOrigin(bin, dir string) (*origin, error) {
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	raft, err := freeAddr()
	if err != nil {
		return nil, err
	}
	gossip, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "origin", "--data-dir", dir+"/data", "--listen", listen, "--raft-addr", raft, "--gossip-addr", gossip)
	cmd.Env = append(os.Environ(), "DEPOT_ADMIN_PASSWORD="+initialPassword,
		"JWT_SECRET=npmflood-secret-npmflood-secret-0123456789")
	o := &origin{cmd: cmd, url: "http://" + listen, log: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = o.log, o.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(o.url + "/api/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return o, nil
			}
		}
		if time.Now().After(deadline) {
			o.stop()
			return nil, fmt.Errorf("origin did not come up:\n%s", o.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// setup changes the admin's initial password, creates the repository
// "js" and returns a token that may write there.
func setup(url string) (string, error) {
	var login struct {
		AccessToken string `json:"access_token"`
	}
	if err := api(url, "POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": initialPassword}, &login); err != nil {
		return "", err
	}
	if err := api(url, "PUT", "/api/v1/users/me", login.AccessToken, map[string]string{"current_password": initialPassword, "password": password}, nil); err != nil {
		return "", err
	}
	if err := api(url, "POST", "/api/v1/auth/login", "", map[string]string{"username": "admin", "password": password}, &login); err != nil {
		return "", err
	}
	if err := api(url, "POST", "/api/v1/repositories", login.AccessToken, map[string]any{"name": "js", "format": "npm"}, nil); err != nil {
		return "", err
	}
	var tok struct {
		Token string `json:"token"`
	}
	err := api(url, "POST", "/api/v1/users/me/tokens", login.AccessToken, map[string]any{"name": "npmflood", "scopes": []string{"repository:write:js"}}, &tok)
	return tok.Token, err
}

func api(url, method, path, bearer string, body, out any) error {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// publish PUTs name@1.0.0 as npm lays the document out (versions before
// _attachments), generating the tarball as it is sent; a correct shasum
// needs a first pass over the tarball to compute it. It returns the
// status and the bytes sent.
func publish(url, token, name string, size int, wrong bool) (int, int64, error) {
	shasum, integrity := strings.Repeat("0", 40), ""
	if !wrong {
		s1, s512 := sha1.New(), sha512.New()
		if err := writeTgz(io.MultiWriter(s1, s512), name, size); err != nil {
			return 0, 0, err
		}
		shasum = hex.EncodeToString(s1.Sum(nil))
		integrity = "sha512-" + base64.StdEncoding.EncodeToString(s512.Sum(nil))
	}
	fields := map[string]string{"shasum": shasum}
	if integrity != "" {
		fields["integrity"] = integrity
	}
	dist, _ := json.Marshal(fields)
	head := fmt.Sprintf(`{"_id":%q,"name":%q,"dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":%q,"version":"1.0.0","dist":%s}},`+
		`"_attachments":{"%s-1.0.0.tgz":{"content_type":"application/octet-stream","data":"`, name, name, name, dist, name)
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 256<<10)
		_, _ = io.WriteString(bw, head)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		err := writeTgz(enc, name, size)
		if err == nil {
			err = enc.Close()
		}
		if err == nil {
			_, err = io.WriteString(bw, `"}}}`)
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()
	counted := &counter{r: pr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", url+"/npm/js/"+name, counted)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, counted.n, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = pr.Close() // a refused body is not sent to the end
	return resp.StatusCode, counted.n, nil
}

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// writeTgz writes a package tarball holding size bytes of noise, stored
// uncompressed so that the tarball is as large as its content; the same
// name gives the same bytes.
func writeTgz(w io.Writer, name string, size int) error {
	zw, err := gzip.NewWriterLevel(w, gzip.NoCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	manifest := fmt.Sprintf(`{"name":%q,"version":"1.0.0"}`, name)
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, manifest); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "package/noise.bin", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	var seed [32]byte
	copy(seed[:], name)
	rng := rand.NewChaCha8(seed)
	chunk := make([]byte, 256<<10)
	for left := size; left > 0; left -= len(chunk) {
		_, _ = rng.Read(chunk)
		if _, err := tw.Write(chunk[:min(left, len(chunk))]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
