package edge

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/seen"
)

// BenchmarkRecordDownload is what keeping a download for the origins
// costs on the hot path, every core at it.
func BenchmarkRecordDownload(b *testing.B) {
	s := &shipper{log: slog.New(slog.NewTextHandler(io.Discard, nil)), seen: seen.New(maxSeen)}
	d := &server.Download{Artifact: &meta.Artifact{ID: "a"}}
	ip := net.ParseIP("127.0.0.1")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.record(d, ip)
		}
	})
}

// TestPendingDownloads: the downloads kept are handed over from a time
// on, the older dropped; the buffer is bounded.
func TestPendingDownloads(t *testing.T) {
	var p pendingEvents
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	repo := &meta.Repository{ID: "r1", Name: "files", Format: "generic"}
	for i := range 5 {
		d := &server.Download{Artifact: &meta.Artifact{ID: "a", RepositoryID: "r1", PackageName: "p"}, Repo: repo, Who: meta.Actor{Username: "u"}}
		if !p.add(d, net.ParseIP("192.0.2.1"), t0.Add(time.Duration(i)*time.Second)) {
			t.Fatal("refused with room")
		}
	}
	got := p.take(2, t0.Add(2*time.Second))
	if len(got) != 2 || !got[0].At.Equal(t0.Add(2*time.Second)) || got[0].ArtifactID != "a" || got[0].Remote != "192.0.2.1" {
		t.Fatalf("from t0+2s, two: %+v", got)
	}
	p.forgetBefore(t0.Add(10 * time.Second))
	if rest := p.take(10, time.Time{}); len(rest) != 0 {
		t.Fatalf("after forgetting: %d left", len(rest))
	}
	for range maxPendingEvents {
		p.add(&server.Download{Artifact: &meta.Artifact{}}, nil, t0)
	}
	if p.add(&server.Download{Artifact: &meta.Artifact{}}, nil, t0) {
		t.Error("a full buffer took one more")
	}
}
