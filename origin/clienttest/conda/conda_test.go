package conda_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/formattest"
)

// tarBz2 is a .tar.bz2 package (compressed by the bzip2 program: Go
// reads bzip2 but does not write it).
func tarBz2(t *testing.T, info, payload map[string]string) []byte {
	t.Helper()
	all := map[string]string{}
	for k, v := range info {
		all[k] = v
	}
	for k, v := range payload {
		all[k] = v
	}
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = bytes.NewReader(formattest.Tar(t, all))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRattlerSolveInstall: .tar.bz2 and .conda packages are uploaded
// (metadata from their info/index.json; a wrong file name or subdir is
// refused); py-rattler solves "greet" against the channel (picking the
// newest, a .conda, and its dependency from another subdir), fetches and
// installs both into a prefix; the hashes rattler read from repodata are
// the files' own and the installed files hold what was packaged. A
// private channel asks for credentials.
func TestRattlerSolveInstall(t *testing.T) {
	bins := clienttest.RequireClients(t, "python3", "bzip2")
	if out, err := exec.Command(bins["python3"], "-c", "import rattler").CombinedOutput(); err != nil {
		if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
			t.Fatalf("py-rattler is required: %v\n%s", err, out)
		}
		t.Skipf("py-rattler not installed: %s", out)
	}
	clienttest.Targets(t, clienttest.Start, func(t *testing.T, e *origintest.Env) {
		chanID := e.CreateRepo("chan", "conda", true)
		privID := e.CreateRepo("private", "conda", false)
		alice := clienttest.NewUser(e, "alice")
		e.Grant(chanID, alice.ID, false, "write")
		e.Grant(privID, alice.ID, false, "write")

		files := map[string][]byte{}
		i, p := formattest.CondaFiles("base", "1.0.0", "linux-64", []string{}, "base 1.0.0\n")
		files["linux-64/base-1.0.0-0.tar.bz2"] = tarBz2(t, i, p)
		i, p = formattest.CondaFiles("greet", "1.0.0", "noarch", []string{"base >=1"}, "greet 1.0.0\n")
		files["noarch/greet-1.0.0-0.tar.bz2"] = tarBz2(t, i, p)
		i, p = formattest.CondaFiles("greet", "1.1.0", "noarch", []string{"base >=1"}, "greet 1.1.0\n")
		files["noarch/greet-1.1.0-0.conda"] = formattest.DotConda(t, "greet-1.1.0-0", i, p)
		e.Do("PUT", "/conda/chan/linux-64/base-1.0.0-0.tar.bz2", alice.Basic(), files["linux-64/base-1.0.0-0.tar.bz2"]).Want(201)
		e.Do("PUT", "/conda/chan/noarch/greet-1.0.0-0.tar.bz2", alice.Basic(), files["noarch/greet-1.0.0-0.tar.bz2"]).Want(201)
		e.Do("PUT", "/conda/chan/greet-1.1.0-0.conda", alice.Basic(), files["noarch/greet-1.1.0-0.conda"]).Want(201) // subdir from index.json
		e.Do("PUT", "/conda/chan/noarch/greet-1.0.0-0.tar.bz2", alice.Basic(), files["noarch/greet-1.0.0-0.tar.bz2"]).Want(409)
		e.Do("PUT", "/conda/chan/linux-64/greet-1.0.0-0.tar.bz2", alice.Basic(), files["noarch/greet-1.0.0-0.tar.bz2"]).Want(400)
		e.Do("PUT", "/conda/chan/noarch/other-1.0.0-0.tar.bz2", alice.Basic(), files["noarch/greet-1.0.0-0.tar.bz2"]).Want(400)
		e.Do("PUT", "/conda/chan/noarch/junk-1.0.0-0.tar.bz2", alice.Basic(), []byte("junk")).Want(400)
		e.Do("GET", "/conda/chan/osx-arm64/repodata.json", "", nil).Want(200) // empty but valid
		e.Do("GET", "/conda/chan/noarch/current_repodata.json", "", nil).Want(404)
		e.Do("PUT", "/conda/private/linux-64/base-1.0.0-0.tar.bz2", alice.Basic(), files["linux-64/base-1.0.0-0.tar.bz2"]).Want(201)
		e.Do("GET", "/conda/private/linux-64/repodata.json", "", nil).Want(401)
		if r := e.Do("GET", "/conda/private/linux-64/repodata.json", alice.Basic(), nil).Want(200); !strings.Contains(string(r.Body), "base-1.0.0-0.tar.bz2") {
			t.Fatalf("private repodata: %s", r.Body)
		}

		work := t.TempDir()
		prefix := filepath.Join(work, "prefix")
		script, _ := filepath.Abs("solve.py")
		out := clienttest.Run(t, clienttest.Cmd{Dir: work, Env: []string{"HOME=" + clienttest.Home(t)}, Name: bins["python3"],
			Args: []string{script, e.URL + "/conda/chan", prefix, filepath.Join(work, "cache"), "greet"}})
		var solved []struct{ Name, Version, URL, Sha256, Md5 string }
		if err := json.Unmarshal([]byte(lastLine(out)), &solved); err != nil || len(solved) != 2 {
			t.Fatalf("rattler solved (%v):\n%s", err, out)
		}
		for _, s := range solved {
			key := strings.TrimPrefix(s.URL, e.URL+"/conda/chan/")
			body, ok := files[key]
			if !ok {
				t.Fatalf("solved %s %s at %s, not a file of ours", s.Name, s.Version, s.URL)
			}
			sha, m5 := sha256.Sum256(body), md5.Sum(body)
			if s.Sha256 != hex.EncodeToString(sha[:]) || s.Md5 != hex.EncodeToString(m5[:]) {
				t.Errorf("%s: repodata hashes %s %s, the file's %x %x", key, s.Sha256, s.Md5, sha, m5)
			}
			if s.Name == "greet" && s.Version != "1.1.0" {
				t.Errorf("solved greet %s, want the newest, 1.1.0", s.Version)
			}
		}
		for name, want := range map[string]string{"greet": "greet 1.1.0\n", "base": "base 1.0.0\n"} {
			if got, err := os.ReadFile(filepath.Join(prefix, "share", name, "hello.txt")); err != nil || string(got) != want {
				t.Errorf("installed %s: %q %v", name, got, err)
			}
		}
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
