package clienttest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/origin/origintest"
)

// WantEvents checks that the event log holds events of the given type
// naming each of want ("package@version"), with the repository's format;
// downloads are recorded in batches, so it waits a little for them.
func WantEvents(t *testing.T, e *origintest.Env, event, format string, want ...string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out struct {
			Events []struct {
				Data map[string]any `json:"data"`
			} `json:"events"`
		}
		e.Do("GET", "/api/v1/events?limit=1000&types="+event, e.Admin, nil).Want(200).JSON(&out)
		got = got[:0]
		formats := map[string]bool{}
		for _, x := range out.Events {
			got = append(got, fmt.Sprintf("%v@%v", x.Data["package_name"], x.Data["version"]))
			if f, ok := x.Data["format"]; ok {
				formats[fmt.Sprint(f)] = true
			}
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(got, w) })
		if len(missing) == 0 {
			if len(formats) > 0 && (len(formats) != 1 || !formats[format]) {
				t.Errorf("%s events of formats %v, want %s", event, formats, format)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s events: %s; missing %s", event, strings.Join(got, " "), strings.Join(missing, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SubscribeDownloads subscribes a webhook to artifact.downloaded, as a
// user who wants download events does: downloads are recorded as events
// only while one does (its deliveries go nowhere here).
func SubscribeDownloads(t *testing.T, e *origintest.Env) {
	t.Helper()
	e.Do("POST", "/api/v1/webhooks", e.Admin, map[string]any{"url": "https://downloads.example.invalid/hook",
		"events": []string{"artifact.downloaded"}}).Want(201)
}
