package meta

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
)

// The webhook delivery kind (the queue and its history) and its commands.
// Not in the change feed.
const (
	KindDelivery         Kind    = 12
	CmdDeliveriesEnqueue CmdType = 30
	CmdDeliveryCreate    CmdType = 31
	CmdDeliveryAttempt   CmdType = 32
	CmdDeliveryRedeliver CmdType = 33
)

var (
	bDeliveryDue    = []byte("delivery_due")    // next attempt (unix ns), delivery id -> "" (pending only)
	bHookDeliveries = []byte("hook_deliveries") // webhook \0 created (unix ns) delivery id -> ""
)

func init() {
	declareKind(KindDelivery, kindDecl{Name: "webhook deliveries", Bucket: "deliveries", Index: indexDelivery,
		Derived: [][]byte{bDeliveryDue, bHookDeliveries}, Unfed: true})
	declareCommand(CmdDeliveriesEnqueue, func() Command { return new(DeliveriesEnqueue) })
	declareCommand(CmdDeliveryCreate, func() Command { return new(DeliveryCreate) })
	declareCommand(CmdDeliveryAttempt, func() Command { return new(DeliveryAttempt) })
	declareCommand(CmdDeliveryRedeliver, func() Command { return new(DeliveryRedeliver) })
}

// Deliveries: the webhook delivery queue, in replicated state. The leader
// reads the event log after each webhook's cursor, enqueues a delivery
// for each event the webhook wants and moves the cursor in one command
// (DeliveriesEnqueue, refused unless the cursor is where the leader read
// it), makes the attempts, and commits each outcome with the next retry
// time it chose (DeliveryAttempt, refused unless the delivery is still at
// the attempt the leader made). A new leader therefore carries on from the
// same queue, schedules and cursors; a delivery whose outcome was lost
// with the old leader is sent again (receivers tolerate duplicates).

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	Event     string `json:"event"`
	// EventCursor is the event's place in the log ("" for webhook.test).
	EventCursor string `json:"event_cursor,omitempty"`
	// Body is the envelope exactly as sent and signed, every attempt.
	Body      json.RawMessage `json:"body"`
	CreatedAt time.Time       `json:"created_at"`
	State     string          `json:"state"`
	// NextAttemptAt is when a pending delivery is due.
	NextAttemptAt time.Time `json:"next_attempt_at"`
	// Manual deliveries (the test endpoint, a redelivery) are made even
	// while the webhook is inactive.
	Manual bool `json:"manual,omitempty"`
	// The last attempt.
	Attempts    int        `json:"attempts"`
	StatusCode  int        `json:"status_code"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	DurationMS  int64      `json:"duration_ms"`
	Error       string     `json:"error,omitempty"`
}

// RetryPending reports whether a retry is scheduled: a pending delivery
// that has been attempted.
func (d *Delivery) RetryPending() bool { return d.State == DeliveryPending && d.Attempts > 0 }

// WebhookStats count a webhook's delivery attempts.
type WebhookStats struct {
	Total      int        `json:"total"`
	Successful int        `json:"successful"`
	Failed     int        `json:"failed"`
	LastAt     *time.Time `json:"last_at,omitempty"`
	LastStatus int        `json:"last_status,omitempty"`
}

// DeliveriesEnqueue enqueues deliveries for webhook WebhookID and moves
// its cursor from From (what the leader read) to To: the events up to log
// index To have been considered.
type DeliveriesEnqueue struct {
	WebhookID  string     `json:"webhook_id"`
	From       uint64     `json:"from"`
	To         uint64     `json:"to"`
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// DeliveryCreate enqueues one delivery outside the event log (the test
// endpoint's webhook.test).
type DeliveryCreate struct {
	Delivery Delivery `json:"delivery"`
}

// DeliveryAttempt records the outcome of attempt number Attempt (1 = the
// first) of delivery ID: succeeded, or failed with a retry at Retry, or
// failed for good (Retry nil).
type DeliveryAttempt struct {
	ID         string     `json:"id"`
	Attempt    int        `json:"attempt"`
	At         time.Time  `json:"at"`
	StatusCode int        `json:"status_code"`
	DurationMS int64      `json:"duration_ms"`
	Error      string     `json:"error,omitempty"`
	Succeeded  bool       `json:"succeeded,omitempty"`
	Retry      *time.Time `json:"retry,omitempty"`
}

// DeliveryRedeliver makes a delivery due At: a pending one keeps its
// schedule of retries after that; a finished one becomes pending again
// as a manual delivery (one attempt, made even while the webhook is
// inactive).
type DeliveryRedeliver struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// EventsCompact is the leader's housekeeping: the events before
// EventsBefore are forgotten, the deliveries in Drop too, and the pending
// deliveries in Expire are given up (their webhook stayed inactive past
// the give-up time).
type EventsCompact struct {
	EventsBefore string    `json:"events_before,omitempty"`
	Drop         []string  `json:"drop,omitempty"`
	Expire       []string  `json:"expire,omitempty"`
	At           time.Time `json:"at"`
}

func (*DeliveriesEnqueue) Type() CmdType { return CmdDeliveriesEnqueue }
func (*DeliveryCreate) Type() CmdType    { return CmdDeliveryCreate }
func (*DeliveryAttempt) Type() CmdType   { return CmdDeliveryAttempt }
func (*DeliveryRedeliver) Type() CmdType { return CmdDeliveryRedeliver }
func (*EventsCompact) Type() CmdType     { return CmdEventsCompact }
func (*DeliveriesEnqueue) Scope() string { return "" }
func (*DeliveryCreate) Scope() string    { return "" }
func (*DeliveryAttempt) Scope() string   { return "" }
func (*DeliveryRedeliver) Scope() string { return "" }
func (*EventsCompact) Scope() string     { return "" }

func (c *DeliveriesEnqueue) apply(tx *Tx) error {
	h, err := tx.Webhook(c.WebhookID)
	if err != nil {
		return err
	}
	if h.Cursor != c.From || c.To < c.From {
		return Conflictf("webhook %s: the event cursor moved (at %d, not %d)", h.ID, h.Cursor, c.From)
	}
	for _, d := range c.Deliveries {
		if d.WebhookID != h.ID {
			return Invalidf("delivery %s is not for webhook %s", d.ID, h.ID)
		}
		if err := tx.putDelivery(d); err != nil {
			return err
		}
	}
	h.Cursor = c.To
	return tx.putRec(KindWebhook, h.ID, h)
}

func (c *DeliveryCreate) apply(tx *Tx) error {
	if !tx.exists(KindWebhook, c.Delivery.WebhookID) {
		return NotFoundf("webhook %s", c.Delivery.WebhookID)
	}
	return tx.putDelivery(c.Delivery)
}

func (tx *Tx) putDelivery(d Delivery) error {
	if d.ID == "" || d.Event == "" || !json.Valid(d.Body) {
		return Invalidf("delivery id, event and body required")
	}
	if tx.exists(KindDelivery, d.ID) {
		return Conflictf("delivery id %q exists", d.ID)
	}
	d.State, d.Attempts = DeliveryPending, 0
	return tx.putRec(KindDelivery, d.ID, d)
}

func (c *DeliveryAttempt) apply(tx *Tx) error {
	d, err := tx.Delivery(c.ID)
	if err != nil {
		return err
	}
	if d.State != DeliveryPending || d.Attempts+1 != c.Attempt {
		return Conflictf("delivery %s is %s after %d attempts, not awaiting attempt %d", d.ID, d.State, d.Attempts, c.Attempt)
	}
	h, err := tx.Webhook(d.WebhookID)
	if err != nil {
		return err
	}
	at := c.At.UTC()
	d.Attempts, d.StatusCode, d.DurationMS, d.Error, d.DeliveredAt = c.Attempt, c.StatusCode, c.DurationMS, c.Error, &at
	switch {
	case c.Succeeded:
		d.State = DeliverySucceeded
		h.Stats.Successful++
	case c.Retry != nil:
		d.NextAttemptAt = c.Retry.UTC()
		h.Stats.Failed++
	default:
		d.State = DeliveryFailed
		h.Stats.Failed++
	}
	h.Stats.Total++
	h.Stats.LastAt, h.Stats.LastStatus = &at, c.StatusCode
	if err := tx.putRec(KindDelivery, d.ID, d); err != nil {
		return err
	}
	return tx.putRec(KindWebhook, h.ID, h)
}

func (c *DeliveryRedeliver) apply(tx *Tx) error {
	d, err := tx.Delivery(c.ID)
	if err != nil {
		return err
	}
	if d.State != DeliveryPending {
		d.State, d.Manual = DeliveryPending, true
	}
	d.NextAttemptAt = c.At.UTC()
	return tx.putRec(KindDelivery, d.ID, d)
}

func (c *EventsCompact) apply(tx *Tx) error {
	if c.EventsBefore != "" {
		if err := tx.dropEventsBefore(c.EventsBefore); err != nil {
			return err
		}
	}
	for _, id := range c.Drop {
		if tx.exists(KindDelivery, id) { // its webhook may have gone meanwhile
			if err := tx.delRec(KindDelivery, id); err != nil {
				return err
			}
		}
	}
	for _, id := range c.Expire {
		d, err := tx.Delivery(id)
		if err != nil || d.State != DeliveryPending {
			continue
		}
		d.State, d.Error = DeliveryFailed, "given up: the webhook was inactive until the give-up time"
		if err := tx.putRec(KindDelivery, d.ID, d); err != nil {
			return err
		}
	}
	return nil
}

// dropDeliveries forgets every delivery of a webhook (it is being
// deleted).
func (tx *Tx) dropDeliveries(webhookID string) error {
	return tx.delAll(KindDelivery, tx.hookDeliveryIDs(webhookID))
}

// hookDeliveryIDs are a webhook's deliveries, oldest first.
func (tx *Tx) hookDeliveryIDs(webhookID string) []string {
	p := []byte(webhookID + "\x00")
	var ids []string
	cur := tx.bucket(bHookDeliveries).Cursor()
	for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
		ids = append(ids, string(k[len(p)+8:]))
	}
	return ids
}

// Delivery reads one delivery.
func (tx *Tx) Delivery(id string) (*Delivery, error) {
	return getRec[Delivery](tx, KindDelivery, id, "delivery")
}

// DeliveriesOf lists a webhook's deliveries newest first, skipping
// offset and returning at most limit, with how many there are.
func (tx *Tx) DeliveriesOf(webhookID string, offset, limit int) ([]Delivery, int, error) {
	ids := tx.hookDeliveryIDs(webhookID)
	slices.Reverse(ids)
	total := len(ids)
	ids = ids[min(offset, total):]
	ids = ids[:min(limit, len(ids))]
	out := make([]Delivery, 0, len(ids))
	for _, id := range ids {
		d, err := tx.Delivery(id)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *d)
	}
	return out, total, nil
}

// DueDeliveries lists the pending deliveries due at or before t, soonest
// first, at most limit.
func (tx *Tx) DueDeliveries(t time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	cur := tx.bucket(bDeliveryDue).Cursor()
	for k, _ := cur.First(); k != nil && len(out) < limit; k, _ = cur.Next() {
		if int64(getU64(k[:8])) > t.UnixNano() {
			break
		}
		d, err := tx.Delivery(string(k[8:]))
		if err != nil {
			return nil, err
		}
		out = append(out, *d)
	}
	return out, nil
}

// PendingDeliveries counts the pending deliveries, up to max.
func (tx *Tx) PendingDeliveries(max int) int {
	n := 0
	cur := tx.bucket(bDeliveryDue).Cursor()
	for k, _ := cur.First(); k != nil && n < max; k, _ = cur.Next() {
		n++
	}
	return n
}

// FinishedDeliveries calls fn with each webhook's deliveries that are not
// pending, newest first, with their rank among the webhook's deliveries.
func (tx *Tx) FinishedDeliveries(fn func(d *Delivery, rank int)) error {
	var hook []byte
	var ids []string
	flush := func() error {
		for i := len(ids) - 1; i >= 0; i-- {
			d, err := tx.Delivery(ids[i])
			if err != nil {
				return err
			}
			if d.State != DeliveryPending {
				fn(d, len(ids)-1-i)
			}
		}
		ids = ids[:0]
		return nil
	}
	cur := tx.bucket(bHookDeliveries).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		i := bytes.IndexByte(k, 0)
		if !bytes.Equal(k[:i], hook) {
			if err := flush(); err != nil {
				return err
			}
			hook = bytes.Clone(k[:i])
		}
		ids = append(ids, string(k[i+9:]))
	}
	return flush()
}

func dueKey(d *Delivery) []byte {
	return append(u64(uint64(d.NextAttemptAt.UnixNano())), d.ID...)
}

func hookKey(d *Delivery) []byte {
	k := append([]byte(d.WebhookID+"\x00"), u64(uint64(d.CreatedAt.UnixNano()))...)
	return append(k, d.ID...)
}

func indexDelivery(tx *Tx, _ string, before, after []byte) error {
	o, n, err := decodePair[Delivery](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.bucket(bDeliveryDue).Delete(dueKey(o)); err != nil {
			return err
		}
		if err := tx.bucket(bHookDeliveries).Delete(hookKey(o)); err != nil {
			return err
		}
	}
	if n == nil {
		return nil
	}
	if n.State == DeliveryPending {
		if err := tx.bucket(bDeliveryDue).Put(dueKey(n), []byte{}); err != nil {
			return err
		}
	}
	return tx.bucket(bHookDeliveries).Put(hookKey(n), []byte{})
}
