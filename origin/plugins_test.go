package origin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
	"github.com/depot-registry/depot/shared/format/plugin/plugintest"
)

// TestHostilePlugin: an installed plugin that loops for ever, allocates
// without end, panics or answers 20 MiB fails that request with a 500
// saying only its request id, within the call's time bound; the next
// request is served and the origin stays healthy. It reads only the
// repository of the request (a path out of it is refused by the host),
// and its routes serve only repositories of its format, to those who
// may read them.
func TestHostilePlugin(t *testing.T) {
	e := origintest.Start(t, origintest.Options{})
	e.Do("POST", "/api/v1/plugins", e.Admin, plugintest.Hostile(t)).Want(http.StatusCreated)
	e.CreateRepo("h", "hostile", false)
	e.CreateRepo("files", "generic", false)
	e.Do("PUT", "/generic/files/pkg/1.0/secret.bin", e.Admin, "secret").Want(http.StatusCreated)
	works := func() {
		t.Helper()
		if r := e.Do("GET", "/hostile/h/hello", e.Admin, nil).Want(http.StatusOK); !strings.Contains(string(r.Body), `"echo":"/hello"`) {
			t.Fatalf("an ordinary request: %s", r.Body)
		}
		e.Do("GET", "/api/v1/health", "", nil).Want(http.StatusOK)
	}
	works()
	for _, op := range []string{"loop", "alloc", "panic", "huge"} {
		start := time.Now()
		r := e.Do("GET", "/hostile/h/"+op, e.Admin, nil).Want(http.StatusInternalServerError)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s answered after %v", op, el)
		}
		if body := string(r.Body); !strings.Contains(body, "request") || strings.Contains(body, "wasm") || strings.Contains(body, "plugin") {
			t.Errorf("%s: the answer says more than its request id: %s", op, body)
		}
		works()
	}
	for _, escape := range []string{"../files/pkg/1.0/secret.bin", "/files/pkg/1.0/secret.bin", "pkg/../../files/pkg/1.0/secret.bin"} {
		if r := e.Do("GET", "/hostile/h/artifact?arg="+escape, e.Admin, nil).Want(http.StatusOK); !strings.Contains(string(r.Body), `"code":-1`) {
			t.Errorf("reading %s: %s", escape, r.Body)
		}
	}
	if r := e.Do("GET", "/hostile/h/artifact?arg=pkg/1.0/secret.bin", e.Admin, nil).Want(http.StatusOK); !strings.Contains(string(r.Body), `"code":0`) {
		t.Errorf("the path in its own repository, where there is nothing: %s", r.Body)
	}
	e.Do("GET", "/hostile/files/hello", e.Admin, nil).Want(http.StatusNotFound) // another format's repository
	e.Do("GET", "/hostile/h/hello", "", nil).Want(http.StatusUnauthorized)
}
