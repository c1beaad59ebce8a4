package protocol

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// TestFeedQueryRoundTrip: what a node encodes, an origin parses back the
// same; bounds and malformed values are refused naming the parameter.
func TestFeedQueryRoundTrip(t *testing.T) {
	for _, q := range []FeedQuery{
		{},
		{Since: 42, Wait: 30 * time.Second, Limit: 10, Kinds: []meta.Kind{1, 2, 8}},
		{Repo: "r1"},
		{Principals: []string{"u1", "g2"}},
		{Since: 7, Global: true, Kinds: []meta.Kind{}},
	} {
		got, err := ParseFeedQuery(q.Values())
		if q.Kinds != nil && len(q.Kinds) == 0 {
			q.Kinds = nil // an empty list is not sent
		}
		if err != nil || !reflect.DeepEqual(got, q) {
			t.Errorf("%+v came back as %+v, %v", q, got, err)
		}
	}
	for field, raw := range map[string]string{
		"since":      "since=-1",
		"limit":      "limit=10001",
		"wait":       "wait=61",
		"principals": "principals=" + strings.Repeat("u,", MaxPrincipals+1),
		"kinds":      "kinds=1,x",
	} {
		v, _ := url.ParseQuery(raw)
		_, err := ParseFeedQuery(v)
		if e, ok := err.(*apierr.Error); !ok || e.Details["field"] != field {
			t.Errorf("%.40s: %v", raw, err)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "1": true, "2": false, "x": false, "0": false} {
		h := http.Header{}
		if v != "" {
			h.Set(VersionHeader, v)
		}
		if err := CheckVersion(h); (err == nil) != ok {
			t.Errorf("version %q: %v", v, err)
		}
	}
}

// FuzzParseFeedQuery: any query parses or is refused, within bounds.
func FuzzParseFeedQuery(f *testing.F) {
	f.Add("since=1&kinds=1,2&principals=a,b&wait=3")
	f.Add("kinds=" + strings.Repeat("1,", 300))
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := ParseFeedQuery(v)
		if err == nil && (len(q.Kinds) > 256 || len(q.Principals) > MaxPrincipals || q.Limit > MaxLimit || q.Wait > MaxWait) {
			t.Fatalf("out of bounds: %+v", q)
		}
	})
}
