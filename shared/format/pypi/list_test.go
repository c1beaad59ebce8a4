package pypi_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/pypi"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

func sdistForm(t *testing.T, name, version string) (string, []byte) {
	t.Helper()
	content := "sdist of " + name + " " + version
	s, m := sha256.Sum256([]byte(content)), md5.Sum([]byte(content))
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range [][2]string{{":action", "file_upload"}, {"protocol_version", "1"}, {"name", name}, {"version", version},
		{"filetype", "sdist"}, {"sha256_digest", hex.EncodeToString(s[:])}, {"md5_digest", hex.EncodeToString(m[:])}} {
		if err := w.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("content", name+"-"+version+".tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(content))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

// TestProjectList: the project list names each project with files once,
// in name order, spelled as its newest upload; a project whose spelling
// was not recorded (uploaded before spellings were kept) is named from
// its newest file, and a project whose files are gone is not listed.
func TestProjectList(t *testing.T) {
	e := formattest.New(t)
	repo := e.Repo("py", "pypi")
	srv := e.Node(func(env *format.Env) []format.Format { return []format.Format{pypi.New(env)} })
	upload := func(name, version string) {
		t.Helper()
		ct, body := sdistForm(t, name, version)
		if code, out := e.Do("POST", srv.URL+"/pypi/py/", ct, body); code != http.StatusOK {
			t.Fatalf("upload %s %s: %d %s", name, version, code, out)
		}
	}
	list := func() []string {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/pypi/py/simple/", nil)
		req.SetBasicAuth("admin", e.Token)
		req.Header.Set("Accept", pypi.TypeJSON)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Projects []struct {
				Name string `json:"name"`
			} `json:"projects"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("project list: %d %v", resp.StatusCode, err)
		}
		out := []string{}
		for _, p := range doc.Projects {
			out = append(out, p.Name)
		}
		return out
	}
	upload("Demo_Pkg", "1.0")
	upload("zeta", "0.1")
	upload("alpha.tools", "2.0")
	upload("demo.pkg", "1.1") // the newest spelling names the project
	upload("demo-pkg-extra", "1.0")
	if got, want := list(), []string{"alpha.tools", "demo.pkg", "demo-pkg-extra", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("projects = %v, want %v", got, want)
	}

	var zeta string
	err := e.Store.View(func(tx *meta.Tx) error {
		// One spelling key per project: the older one was replaced.
		n := 0
		tx.KVKeys(repo.ID, "name/demo-pkg/", func(string) bool { n++; return true })
		if n != 1 {
			t.Errorf("%d spelling keys for demo-pkg, want 1", n)
		}
		a, err := tx.ArtifactByPath(repo.ID, "zeta/0.1/zeta-0.1.tar.gz")
		if a != nil {
			zeta = a.ID
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without its spelling key, a project is named from its newest file.
	if _, err := e.Apply(context.Background(), &meta.KVApply{RepoID: repo.ID, Ops: []meta.KVOp{{Key: "name/demo-pkg/demo.pkg"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(context.Background(), &meta.ArtifactDelete{ID: zeta}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), []string{"alpha.tools", "demo.pkg", "demo-pkg-extra"}; !reflect.DeepEqual(got, want) {
		t.Errorf("projects = %v, want %v", got, want)
	}
}
