package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/meta"
	"github.com/depot-registry/depot/shared/metrics"
)

// Config is the delivery loop's: the spec's WEBHOOK_* settings and the
// event log's retention.
type Config struct {
	// Enabled: deliveries are made at all (WEBHOOKS_ENABLED). Events are
	// logged either way.
	Enabled bool
	// Timeout bounds one attempt (WEBHOOK_TIMEOUT_SECONDS).
	Timeout time.Duration
	// MaxRetries is how many retries follow a failed first attempt
	// (WEBHOOK_MAX_RETRIES).
	MaxRetries int
	// Backoff is "exponential" (1 m, 5 m, 30 m, 2 h, 6 h, then 6 h) or
	// "linear" (1 m, 2 m, 3 m...) (WEBHOOK_RETRY_BACKOFF).
	Backoff string
	// Concurrency bounds attempts in flight (WEBHOOK_CONCURRENCY).
	Concurrency int
	// QueueSize bounds the pending deliveries: events wait in the log
	// while it is full (WEBHOOK_QUEUE_SIZE).
	QueueSize int
	// RateLimit bounds attempts per webhook per minute, 0 = none
	// (WEBHOOK_RATE_LIMIT).
	RateLimit int
	// AllowPrivate lets deliveries reach private, loopback and link-local
	// addresses (DEPOT_WEBHOOK_ALLOW_PRIVATE_NETWORKS).
	AllowPrivate bool
	// GiveUp: a delivery not made this long after its event is failed.
	GiveUp time.Duration
	// EventRetention and MaxEvents bound the event log; DeliveryHistory
	// is how many finished deliveries each webhook keeps (also at most
	// EventRetention old).
	EventRetention  time.Duration
	MaxEvents       int
	DeliveryHistory int
	// LogDownloads records every download as an event, even while no
	// webhook subscribes to downloads (--event-log-downloads).
	LogDownloads bool
	// Poll is how often the loop looks for work when nothing wakes it.
	Poll time.Duration
}

// Defaults are the spec's and Depot's defaults.
func Defaults() Config {
	return Config{Enabled: true, Timeout: 30 * time.Second, MaxRetries: 5, Backoff: "exponential", Concurrency: 10,
		QueueSize: 10_000, RateLimit: 600, GiveUp: 24 * time.Hour, EventRetention: 7 * 24 * time.Hour,
		MaxEvents: 1_000_000, DeliveryHistory: 1000, Poll: time.Second}
}

// Check validates c.
func (c Config) Check() error {
	switch {
	case c.Backoff != "exponential" && c.Backoff != "linear":
		return fmt.Errorf("webhook retry backoff %q: exponential or linear", c.Backoff)
	case c.Timeout <= 0 || c.Timeout > 10*time.Minute:
		return fmt.Errorf("webhook timeout %s: between 1 second and 10 minutes", c.Timeout)
	case c.MaxRetries < 0 || c.MaxRetries > 100:
		return errors.New("webhook max retries: 0 to 100")
	case c.Concurrency < 1 || c.Concurrency > 1000:
		return errors.New("webhook concurrency: 1 to 1000")
	case c.QueueSize < 1 || c.QueueSize > 10_000_000:
		return errors.New("webhook queue size: 1 to 10000000")
	case c.RateLimit < 0:
		return errors.New("webhook rate limit: 0 (none) or more")
	}
	return nil
}

// exponential is the spec's retry schedule.
var exponential = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

// RetryDelay is the wait before retry n (1 = the first retry).
func (c Config) RetryDelay(n int) time.Duration {
	if c.Backoff == "linear" {
		return time.Duration(n) * time.Minute
	}
	return exponential[min(n, len(exponential))-1]
}

// Queue is the delivery loop: run by the leader (Run), it turns the event
// log into deliveries, makes the attempts and keeps the log trimmed; every
// decision is a command, so the next leader carries on from it.
type Queue struct {
	cfg     Config
	store   *meta.Store
	commit  meta.Committer
	sender  *Sender
	now     func() time.Time
	newID   func() string
	log     *slog.Logger
	metrics *metrics.Events

	// overlay, when set, gives the settings changed at run time (the
	// webhooks.* settings) over cfg; set before Run.
	overlay func(Config) Config

	mu       sync.Mutex
	inflight map[string]bool
	sent     map[string][]time.Time // attempts per webhook in the last minute
	wake     chan struct{}
}

// NewQueue makes the loop; now is its clock (tests move it), newID makes
// delivery ids.
func NewQueue(cfg Config, store *meta.Store, commit meta.Committer, now func() time.Time, newID func() string,
	log *slog.Logger, m *metrics.Events) *Queue {
	// The sender's own bound is the longest a setting may ask; each
	// attempt is bounded by the timeout in effect (conf).
	return &Queue{cfg: cfg, store: store, commit: commit, sender: NewSender(10*time.Minute, cfg.AllowPrivate), now: now,
		newID: newID, log: log, metrics: m, inflight: map[string]bool{}, sent: map[string][]time.Time{},
		wake: make(chan struct{}, 1)}
}

// SetOverlay makes the loop read the run-time settings: fn gives them
// over the startup configuration, each time the loop decides.
func (q *Queue) SetOverlay(fn func(Config) Config) { q.overlay = fn }

// Config is the loop's configuration in effect now.
func (q *Queue) Config() Config {
	if q.overlay == nil {
		return q.cfg
	}
	return q.overlay(q.cfg)
}

// nudge makes the loop look for work now (an attempt ended, or the log
// moved).
func (q *Queue) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends (the leadership went).
func (q *Queue) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer q.metrics.Pending.Set(0) // the next leader reports it
	defer wg.Wait()
	sem := make(chan struct{}, q.cfg.Concurrency)
	var lastHousekeeping time.Time
	t := time.NewTicker(q.cfg.Poll)
	defer t.Stop()
	for {
		applied := q.store.LastApplied()
		if q.Config().Enabled {
			if err := q.enqueue(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("webhooks: enqueueing deliveries", "err", err)
			}
		}
		q.dispatch(ctx, &wg, sem)
		if now := q.now(); now.Sub(lastHousekeeping) >= time.Minute {
			if err := q.housekeep(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("webhooks: trimming the event log", "err", err)
			} else {
				lastHousekeeping = now
			}
		}
		// Wait for the tick, a wake-up or a new entry in the log.
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			if q.store.WaitIndex(wctx, applied+1) == nil {
				q.nudge()
			}
		}()
		select {
		case <-ctx.Done():
			cancel()
			return
		case <-t.C:
		case <-q.wake:
		}
		cancel()
	}
}

// enqueue moves each active webhook's cursor over the events logged since,
// enqueuing a delivery for each it wants, while the queue has room.
func (q *Queue) enqueue(ctx context.Context) error {
	var hooks []meta.Webhook
	pending := 0
	err := q.store.View(func(tx *meta.Tx) error {
		var err error
		hooks, err = tx.Webhooks()
		pending = tx.PendingDeliveries(q.cfg.QueueSize)
		return err
	})
	if err != nil {
		return err
	}
	q.metrics.Pending.Set(float64(pending))
	for _, h := range hooks {
		if !h.Active {
			continue
		}
		if pending >= q.cfg.QueueSize {
			return nil // the events wait in the log
		}
		var evs []meta.LoggedEvent
		if err := q.store.View(func(tx *meta.Tx) error {
			var err error
			evs, err = tx.Events(meta.EventAfterIndex(h.Cursor), min(500, q.cfg.QueueSize-pending))
			return err
		}); err != nil || len(evs) == 0 {
			if err != nil {
				return err
			}
			continue
		}
		now := q.now().UTC()
		cmd := &meta.DeliveriesEnqueue{WebhookID: h.ID, From: h.Cursor, To: evs[len(evs)-1].Index}
		for i := range evs {
			e := &evs[i]
			if !h.Wants(&e.Event) {
				continue
			}
			if now.Sub(e.Timestamp) > q.cfg.GiveUp {
				q.metrics.Dropped.WithLabelValues("expired").Inc()
				continue
			}
			cmd.Deliveries = append(cmd.Deliveries, meta.Delivery{ID: q.newID(), WebhookID: h.ID, Event: e.Name,
				EventCursor: e.Cursor, Body: e.Envelope(), CreatedAt: now, NextAttemptAt: now})
		}
		if _, err := q.commit.Apply(ctx, cmd); err != nil {
			if errors.Is(err, meta.ErrConflict) || errors.Is(err, meta.ErrNotFound) {
				continue // the webhook changed meanwhile: next round
			}
			return err
		}
		pending += len(cmd.Deliveries)
	}
	return nil
}

// dispatch starts attempts for the due deliveries while workers are free.
func (q *Queue) dispatch(ctx context.Context, wg *sync.WaitGroup, sem chan struct{}) {
	now := q.now()
	var due []meta.Delivery
	hooks := map[string]*meta.Webhook{}
	err := q.store.View(func(tx *meta.Tx) error {
		var err error
		if due, err = tx.DueDeliveries(now, 4*q.cfg.Concurrency+1000); err != nil {
			return err
		}
		for _, d := range due {
			if _, ok := hooks[d.WebhookID]; !ok {
				hooks[d.WebhookID], _ = tx.Webhook(d.WebhookID)
			}
		}
		return nil
	})
	if err != nil {
		q.log.Warn("webhooks: reading due deliveries", "err", err)
		return
	}
	enabled := q.Config().Enabled
	for _, d := range due {
		h := hooks[d.WebhookID]
		if h == nil || !enabled || (!d.Manual && !h.Active) || !q.claim(d.ID, h.ID, now) {
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			q.release(d.ID)
			return // every worker is busy
		}
		wg.Go(func() {
			defer func() { <-sem; q.release(d.ID); q.nudge() }()
			// The list was read before the claim: an attempt that ended
			// meanwhile may have moved the delivery on.
			var now *meta.Delivery
			_ = q.store.View(func(tx *meta.Tx) error { now, _ = tx.Delivery(d.ID); return nil })
			if now == nil || now.State != meta.DeliveryPending || now.Attempts != d.Attempts || now.NextAttemptAt.After(q.now()) {
				return
			}
			q.attempt(ctx, *now, h)
		})
	}
}

// claim takes a delivery for an attempt unless one is in flight or its
// webhook has had its minute's worth.
func (q *Queue) claim(id, hook string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inflight[id] {
		return false
	}
	if limit := q.Config().RateLimit; limit > 0 {
		recent := q.sent[hook][:0]
		for _, t := range q.sent[hook] {
			if now.Sub(t) < time.Minute {
				recent = append(recent, t)
			}
		}
		q.sent[hook] = recent
		if len(recent) >= limit {
			return false
		}
		q.sent[hook] = append(recent, now)
	}
	q.inflight[id] = true
	return true
}

func (q *Queue) release(id string) {
	q.mu.Lock()
	delete(q.inflight, id)
	q.mu.Unlock()
}

// attempt makes one attempt and commits its outcome with the next retry.
func (q *Queue) attempt(ctx context.Context, d meta.Delivery, h *meta.Webhook) {
	n := d.Attempts + 1
	cfg := q.Config()
	actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	res := q.sender.Send(actx, h.URL, h.ID, fmt.Sprintf("%s.%d", d.ID, n), d.Event, h.Secret, d.Body)
	cancel()
	if ctx.Err() != nil {
		return // the leadership went mid-attempt: the next leader makes it again
	}
	at := q.now().UTC()
	cmd := &meta.DeliveryAttempt{ID: d.ID, Attempt: n, At: at, StatusCode: res.StatusCode,
		DurationMS: res.Duration.Milliseconds(), Succeeded: res.OK()}
	outcome := "success"
	if !res.OK() {
		outcome = "failure"
		cmd.Error = res.Describe()
		// Retries are counted from the first attempt; a manual redelivery
		// is one attempt more.
		if retry := n; !d.Manual && retry <= cfg.MaxRetries {
			next := at.Add(cfg.RetryDelay(retry))
			if next.Sub(d.CreatedAt) <= q.cfg.GiveUp {
				cmd.Retry = &next
			}
		}
	}
	q.metrics.Attempts.WithLabelValues(outcome).Inc()
	if _, err := q.commit.Apply(ctx, cmd); err != nil && ctx.Err() == nil && !errors.Is(err, meta.ErrNotFound) {
		q.log.Warn("webhooks: recording a delivery attempt", "delivery", d.ID, "webhook", h.ID, "err", err)
	}
}

// housekeep trims the event log (age, size) and the finished deliveries
// (age, count per webhook), and gives up the deliveries of webhooks that
// stayed inactive past the give-up time. One bounded command per round.
func (q *Queue) housekeep(ctx context.Context) error {
	now := q.now().UTC()
	cmd := &meta.EventsCompact{At: now}
	var minCursor uint64 = 1<<64 - 1
	unseen := 0 // events trimmed before an active webhook was offered them
	err := q.store.View(func(tx *meta.Tx) error {
		oldest, count := tx.OldestEvent()
		const most = 10_000 // events forgotten per command
		// The first event young enough to keep, among the first most.
		before, err := tx.EventsBefore(now.Add(-q.cfg.EventRetention), most)
		if err != nil {
			return err
		}
		if before == "" && count > 0 { // all of those are old
			before = tx.NthEvent(most)
			if before == "" {
				before = meta.EventAfterIndex(1<<64 - 1) // every one
			}
		}
		if over := count - q.cfg.MaxEvents; over > 0 {
			if c := tx.NthEvent(min(over, most)); c > before {
				before = c
			}
		}
		if before > oldest {
			cmd.EventsBefore = before
		}
		hooks, err := tx.Webhooks()
		if err != nil {
			return err
		}
		active := map[string]bool{}
		for _, h := range hooks {
			active[h.ID] = h.Active
			if h.Active && h.Cursor < minCursor {
				minCursor = h.Cursor
			}
		}
		if cmd.EventsBefore != "" && minCursor < 1<<64-1 {
			evs, err := tx.Events(meta.EventAfterIndex(minCursor), most)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if e.Cursor < cmd.EventsBefore {
					unseen++
				}
			}
		}
		if err := tx.FinishedDeliveries(func(d *meta.Delivery, rank int) {
			if len(cmd.Drop) < most && (rank >= q.cfg.DeliveryHistory || now.Sub(d.CreatedAt) > q.cfg.EventRetention) {
				cmd.Drop = append(cmd.Drop, d.ID)
			}
		}); err != nil {
			return err
		}
		due, err := tx.DueDeliveries(now, most)
		for _, d := range due {
			if !active[d.WebhookID] && !d.Manual && now.Sub(d.CreatedAt) > q.cfg.GiveUp {
				cmd.Expire = append(cmd.Expire, d.ID)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if cmd.EventsBefore == "" && len(cmd.Drop) == 0 && len(cmd.Expire) == 0 {
		return nil
	}
	if _, err := q.commit.Apply(ctx, cmd); err != nil {
		return err
	}
	if unseen > 0 {
		q.metrics.Dropped.WithLabelValues("trimmed").Add(float64(unseen))
		q.log.Warn("webhooks: the event log was trimmed past events a webhook had not been offered yet (the queue was full or deliveries were disabled too long)",
			"events", unseen, "trimmed_before", cmd.EventsBefore)
	}
	return nil
}
