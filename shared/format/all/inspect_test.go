package all_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/all"
	"github.com/depot-registry/depot/shared/formattest"
)

// TestEveryFormatInspects: every format says what its stored files hold,
// so a scan, a search or an import never meets one that cannot.
func TestEveryFormatInspects(t *testing.T) {
	for _, f := range all.Build(&format.Env{}) {
		if _, ok := f.(format.Inspector); !ok {
			t.Errorf("format %s has no inspector", f.Name())
		}
	}
}

// TestInspectorsRefuseBombs: the archives that once made uploads unpack
// without bound are refused by the inspectors too, quickly.
func TestInspectorsRefuseBombs(t *testing.T) {
	formats := map[string]format.Format{}
	for _, f := range all.Build(&format.Env{}) {
		formats[f.Name()] = f
	}
	for _, b := range formattest.Bombs(t) {
		t.Run(b.Name, func(t *testing.T) {
			in, ok := formats[b.Repo[1]].(format.Inspector)
			if !ok {
				t.Fatalf("no inspector for %s", b.Repo[1])
			}
			start := time.Now()
			info, err := in.Inspect(t.Context(), format.Stored{Path: b.StoredPath, File: bytes.NewReader(b.File), Size: int64(len(b.File))})
			if err == nil {
				t.Fatalf("inspected: %+v", info)
			}
			if format.Classify(err).Status() != 400 {
				t.Errorf("refused with %v, not as a bad request", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refused after %v", d)
			}
		})
	}
}
