package edge

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depot-registry/depot/edge/server"
	"github.com/depot-registry/depot/replication/protocol"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/policy"
	"github.com/depot-registry/depot/shared/seen"
)

// maxPendingEvents bounds the download events an edge holds for the
// origins: beyond it (no origin has taken them for a while, at thousands
// of downloads a second) they are dropped, counted and logged.
const maxPendingEvents = 100_000

// maxSeen bounds the artifacts served that wait for a heartbeat to name
// them to an origin (their last download day; protocol.Report.Seen).
const maxSeen = 100_000

// pendingEvents are the downloads this edge served that no origin has
// taken yet, kept raw (what, for whom, from where, when): a download
// answered from memory must not allocate, so the events are built when
// they are shipped.
type pendingEvents struct {
	mu       sync.Mutex
	buf      []pendingDownload
	spare    []pendingDownload // the other buffer, reused
	dropped  atomic.Int64
	lastWarn atomic.Int64
}

type pendingDownload struct {
	d  *server.Download
	ip netip.Addr
	at time.Time
}

// add keeps a download for the origins; false when it was dropped.
func (p *pendingEvents) add(d *server.Download, ip net.IP, at time.Time) bool {
	addr, _ := netip.AddrFromSlice(ip)
	p.mu.Lock()
	full := len(p.buf) >= maxPendingEvents
	if !full {
		p.buf = append(p.buf, pendingDownload{d, addr.Unmap(), at})
	}
	p.mu.Unlock()
	return !full
}

// take removes up to n of the oldest downloads, as reports; those made
// before since are dropped.
func (p *pendingEvents) take(n int, since time.Time) []protocol.Download {
	p.mu.Lock()
	p.dropBefore(since)
	n = min(n, len(p.buf))
	taken := append(p.spare[:0], p.buf[:n]...)
	p.buf = append(p.buf[:0], p.buf[n:]...)
	p.mu.Unlock()
	out := make([]protocol.Download, 0, len(taken))
	for _, x := range taken {
		if x.at.Before(since) {
			continue
		}
		d := protocol.Download{ArtifactID: x.d.Artifact.ID, UserID: x.d.Who.UserID, At: x.at}
		if x.ip.IsValid() {
			d.Remote = x.ip.String()
		}
		out = append(out, d)
	}
	p.mu.Lock()
	p.spare = taken[:0]
	p.mu.Unlock()
	return out
}

// forgetBefore drops the downloads made before t.
func (p *pendingEvents) forgetBefore(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropBefore(t)
}

// dropBefore drops the downloads made before t (they are in the order
// they were made); p.mu is held.
func (p *pendingEvents) dropBefore(t time.Time) {
	i := 0
	for i < len(p.buf) && p.buf[i].at.Before(t) {
		i++
	}
	p.buf = append(p.buf[:0], p.buf[i:]...)
}

// shipper counts the downloads this edge serves and gives them to the
// origins: the count with each heartbeat, the downloads themselves as
// events while the origins want them (a webhook subscribes to them).
type shipper struct {
	client    *protocol.Client
	log       *slog.Logger
	heartbeat time.Duration // how soon the origins' wishes reach the node

	downloads     atomic.Int64                   // served since the last heartbeat an origin took
	seen          *seen.Set                      // the artifacts served since then
	events        pendingEvents                  // downloads no origin has taken yet
	recording     atomic.Pointer[recordingSince] // whether the origins want downloads as events (their last heartbeat)
	originDropped atomic.Int64                   // download events an origin said it dropped
	unsent        []protocol.Download            // a batch no origin took (run's own)

	vmu        sync.Mutex
	violations []protocol.Violation // downloads refused by a policy, for the origins (always wanted)
}

// maxPendingViolations bounds the refusals held for the origins.
const maxPendingViolations = 1000

// refused keeps a download a policy refused, for the origins to record
// as policy.violated.
func (s *shipper) refused(r *format.Request, a *meta.Artifact, _ *meta.Repository, d policy.Decision) {
	v := protocol.Violation{ArtifactID: a.ID, PolicyID: d.PolicyID, At: time.Now()}
	if r.Principal != nil {
		v.UserID = r.Principal.UserID
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		v.Remote = ap.Addr().Unmap().String()
	} else if ip, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		v.Remote = ip.Unmap().String()
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	if len(s.violations) < maxPendingViolations {
		s.violations = append(s.violations, v)
	} else {
		s.events.dropped.Add(1)
	}
}

// shipViolations gives the origins the refusals held; a batch no origin
// took is kept for the next round.
func (s *shipper) shipViolations(ctx context.Context) {
	s.vmu.Lock()
	vs := s.violations[:min(len(s.violations), protocol.MaxEvents)]
	s.vmu.Unlock()
	if len(vs) == 0 {
		return
	}
	if _, err := s.client.SendViolations(ctx, vs); err != nil {
		return
	}
	s.vmu.Lock()
	s.violations = append(s.violations[:0], s.violations[len(vs):]...)
	s.vmu.Unlock()
}

// record counts a download and keeps it for the origins, who take it as
// an event while a webhook wants downloads (the heartbeat says).
func (s *shipper) record(d *server.Download, remote net.IP) {
	s.downloads.Add(1)
	s.seen.Add(d.Artifact.ID)
	if !s.events.add(d, remote, time.Now()) {
		if rec := s.recording.Load(); rec == nil || !rec.on {
			return // nobody wants them: the window kept just got shorter
		}
		s.events.dropped.Add(1)
		if now := time.Now().Unix(); s.events.lastWarn.Load() < now-60 && s.events.lastWarn.Swap(now) < now-60 {
			s.log.Warn("download events are being dropped: no origin has taken them for a while (see depot_edge_events_dropped_total)",
				"held", maxPendingEvents)
		}
	}
}

// counted takes the downloads counted since the last heartbeat; uncount
// gives them back when no origin took the report.
func (s *shipper) counted() int64  { return s.downloads.Swap(0) }
func (s *shipper) uncount(n int64) { s.downloads.Add(n) }
func (s *shipper) want(a protocol.Assignment) {
	s.recording.Store(&recordingSince{on: a.RecordDownloads, since: a.RecordDownloadsSince})
}

// run gives the origins the download events every second, in batches; a
// batch no origin took goes again next round.
func (s *shipper) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flush(context.Background(), 5*time.Second) // what is left, briefly
			return
		case <-t.C:
		}
		s.flush(ctx, 30*time.Second)
	}
}

// recordingSince is what the origins said with the last heartbeat:
// whether downloads are events, and from when.
type recordingSince struct {
	on    bool
	since time.Time
}

// flush ships what the origins want. While they want no downloads, the
// recent ones are kept a while all the same: a webhook that has just
// subscribed is known here only at the next heartbeat, and gets the
// downloads from its subscription on.
func (s *shipper) flush(ctx context.Context, within time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	s.shipViolations(ctx)
	rec := s.recording.Load()
	if rec == nil || !rec.on {
		s.events.forgetBefore(time.Now().Add(-2*s.heartbeat - 5*time.Second))
		return
	}
	for {
		if len(s.unsent) == 0 {
			s.unsent = s.events.take(protocol.MaxEvents, rec.since)
		}
		if len(s.unsent) == 0 {
			return
		}
		a, err := s.client.SendEvents(ctx, s.unsent)
		if err != nil {
			return // the batch goes again next round; behind it the buffer fills, up to its bound
		}
		if lost := len(s.unsent) - a.Accepted; lost > 0 {
			s.originDropped.Add(int64(lost))
			if now := time.Now().Unix(); s.events.lastWarn.Load() < now-60 && s.events.lastWarn.Swap(now) < now-60 {
				s.log.Warn("an origin is dropping download events: its queue is full (see its depot_events_dropped_total)",
					"dropped_so_far", s.originDropped.Load())
			}
		}
		s.unsent = nil
	}
}
