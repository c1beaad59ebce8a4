package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The event log kind, the cluster's own bookkeeping (one record per key:
// how far the event log has been trimmed), and their commands. Neither is
// in the change feed.
const (
	KindEvent        Kind    = 11
	KindState        Kind    = 13
	CmdEventsRecord  CmdType = 29
	CmdEventsCompact CmdType = 34
)

func init() {
	declareKind(KindEvent, kindDecl{Name: "events", Bucket: "events", Repo: eventRepo, Unfed: true})
	declareKind(KindState, kindDecl{Name: "cluster state", Bucket: "state", Unfed: true})
	declareCommand(CmdEventsRecord, func() Command { return new(EventsRecord) })
	declareCommand(CmdEventsCompact, func() Command { return new(EventsCompact) })
}

// Events: what happened, as the log decided it. The commands that upload,
// delete and create things record their events while they apply, from
// what they carry and what the store holds, so every replica records the
// same events under the same cursors, a refused command records none, and
// a failover neither invents nor loses one. Downloads are not commands:
// each node batches its own into EventsRecord. Events are records of
// their own kind, kept out of the change feed (edges never need them);
// the leader trims the log by age and size (EventsCompact).

// Event names.
const (
	EventArtifactUploaded   = "artifact.uploaded"
	EventArtifactDownloaded = "artifact.downloaded"
	EventArtifactDeleted    = "artifact.deleted"
	EventScanCompleted      = "scan.completed"
	EventRepoCreated        = "repository.created"
	EventRepoDeleted        = "repository.deleted"
	EventUserCreated        = "user.created"
	EventPolicyViolated     = "policy.violated"
	EventWebhookTest        = "webhook.test"
)

// EventNames lists every event a webhook may subscribe to.
var EventNames = []string{EventArtifactUploaded, EventArtifactDownloaded, EventArtifactDeleted, EventScanCompleted,
	EventRepoCreated, EventRepoDeleted, EventUserCreated, EventPolicyViolated, EventWebhookTest, EventSettingsUpdated}

// Actor is who did something. IPAddress is set for downloads only.
type Actor struct {
	UserID    string `json:"user_id"`
	Username  string `json:"username"`
	IPAddress string `json:"ip_address,omitempty"`
}

// Event is one entry of the event log: the envelope a webhook receives
// (name, timestamp, data) and what its filters match on.
type Event struct {
	Name      string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	// Filter attributes: the repository and format concerned, the acting
	// user, and (scan.completed) the severities found.
	RepositoryID string   `json:"repository_id,omitempty"`
	Format       string   `json:"format,omitempty"`
	UserID       string   `json:"user_id,omitempty"`
	Severity     []string `json:"severity,omitempty"`
}

// Envelope renders the body a webhook receives.
func (e *Event) Envelope() []byte {
	b, _ := json.Marshal(struct {
		Event     string          `json:"event"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{e.Name, e.Timestamp.UTC(), e.Data})
	return b
}

// LoggedEvent is an event with its place in the log: Cursor orders all
// events; Index is the log index of the command that recorded it.
type LoggedEvent struct {
	Cursor string
	Index  uint64
	Event
}

// eventKey is the cursor of the n-th event recorded at log index idx.
func eventKey(idx uint64, n int) string { return fmt.Sprintf("%016x%08x", idx, n) }

// EventIndex is the log index an event cursor lies in (0 for "").
func EventIndex(cursor string) uint64 {
	if len(cursor) < 16 {
		return 0
	}
	v, _ := strconv.ParseUint(cursor[:16], 16, 64)
	return v
}

// ValidCursor reports whether c is an event cursor.
func ValidCursor(c string) bool {
	if len(c) != 24 {
		return false
	}
	_, err := strconv.ParseUint(c[:16], 16, 64)
	_, err2 := strconv.ParseUint(c[16:], 16, 32)
	return err == nil && err2 == nil
}

// EventAfterIndex is the cursor just before the first event of index
// idx+1: reading after it skips everything up to idx.
func EventAfterIndex(idx uint64) string { return eventKey(idx, 0xffffffff) }

// emit records an event of the command being applied.
func (tx *Tx) emit(e Event) error {
	if tx.evIdx != tx.idx {
		tx.evIdx, tx.evN = tx.idx, 0
	}
	k := eventKey(tx.idx, tx.evN)
	tx.evN++
	e.Timestamp = e.Timestamp.UTC()
	return tx.putRec(KindEvent, k, e)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and numbers
	}
	return b
}

// The data of the artifact events (the spec's shapes).
type (
	uploadedData struct {
		ArtifactID     string `json:"artifact_id"`
		RepositoryID   string `json:"repository_id"`
		RepositoryName string `json:"repository_name"`
		PackageName    string `json:"package_name"`
		Version        string `json:"version"`
		Format         string `json:"format"`
		SizeBytes      int64  `json:"size_bytes"`
		ChecksumSHA256 string `json:"checksum_sha256"`
		Uploader       Actor  `json:"uploader"`
	}
	downloadedData struct {
		ArtifactID     string `json:"artifact_id"`
		RepositoryName string `json:"repository_name"`
		PackageName    string `json:"package_name"`
		Version        string `json:"version"`
		Downloader     Actor  `json:"downloader"`
	}
	deletedData struct {
		ArtifactID     string `json:"artifact_id"`
		RepositoryName string `json:"repository_name"`
		PackageName    string `json:"package_name"`
		Version        string `json:"version"`
		DeletedBy      Actor  `json:"deleted_by"`
	}
	repoData struct {
		RepositoryID   string `json:"repository_id"`
		RepositoryName string `json:"repository_name"`
		Format         string `json:"format"`
		CreatedBy      *Actor `json:"created_by,omitempty"`
		DeletedBy      *Actor `json:"deleted_by,omitempty"`
	}
	userData struct {
		UserID    string `json:"user_id"`
		Username  string `json:"username"`
		Role      Role   `json:"role"`
		CreatedBy Actor  `json:"created_by"`
	}
)

// anyone is the actor of a change nobody in particular made (the initial
// administrator, a command without one).
func anyone(a *Actor) Actor {
	if a == nil || a.Username == "" {
		return Actor{Username: "system"}
	}
	return *a
}

func (tx *Tx) emitUploaded(a *Artifact, r *Repository) error {
	who := Actor{UserID: a.UploaderID, Username: a.UploadedBy}
	return tx.emit(Event{Name: EventArtifactUploaded, Timestamp: a.UploadedAt, RepositoryID: r.ID, Format: r.Format, UserID: who.UserID,
		Data: mustJSON(uploadedData{ArtifactID: a.ID, RepositoryID: r.ID, RepositoryName: r.Name, PackageName: a.PackageName,
			Version: a.Version, Format: r.Format, SizeBytes: a.SizeBytes, ChecksumSHA256: a.Checksums.SHA256, Uploader: who})})
}

func (tx *Tx) emitDeleted(a *Artifact, r *Repository, by *Actor, at time.Time) error {
	who := anyone(by)
	return tx.emit(Event{Name: EventArtifactDeleted, Timestamp: at, RepositoryID: r.ID, Format: r.Format, UserID: who.UserID,
		Data: mustJSON(deletedData{ArtifactID: a.ID, RepositoryName: r.Name, PackageName: a.PackageName, Version: a.Version, DeletedBy: who})})
}

// DownloadEvent is the event of a download of a from r by who, at.
func DownloadEvent(a *Artifact, r *Repository, who Actor, at time.Time) Event {
	return Event{Name: EventArtifactDownloaded, Timestamp: at.UTC(), RepositoryID: r.ID, Format: r.Format, UserID: who.UserID,
		Data: mustJSON(downloadedData{ArtifactID: a.ID, RepositoryName: r.Name, PackageName: a.PackageName, Version: a.Version, Downloader: who})}
}

func (tx *Tx) emitRepo(name string, r *Repository, by *Actor, at time.Time) error {
	who := anyone(by)
	d := repoData{RepositoryID: r.ID, RepositoryName: r.Name, Format: r.Format}
	if name == EventRepoCreated {
		d.CreatedBy = &who
	} else {
		d.DeletedBy = &who
	}
	return tx.emit(Event{Name: name, Timestamp: at, RepositoryID: r.ID, Format: r.Format, UserID: who.UserID, Data: mustJSON(d)})
}

func (tx *Tx) emitUserCreated(u *User, by *Actor) error {
	who := anyone(by)
	return tx.emit(Event{Name: EventUserCreated, Timestamp: u.CreatedAt, UserID: who.UserID,
		Data: mustJSON(userData{UserID: u.ID, Username: u.Username, Role: u.Role, CreatedBy: who})})
}

// MaxRecordedEvents bounds one EventsRecord command.
const MaxRecordedEvents = 10_000

// Recordable checks an event that comes to be recorded from outside the
// log (EventsRecord): only downloads, of a bounded size, are.
func (e *Event) Recordable() error {
	if e.Name != EventArtifactDownloaded || len(e.Data) > 4096 || !json.Valid(e.Data) {
		return Invalidf("only artifact.downloaded events of at most 4 KiB are recorded this way")
	}
	return nil
}

// EventsRecord records events that happened outside the log: a node's
// batch of downloads. Only downloads come this way; every other event is
// recorded by the command that caused it.
type EventsRecord struct {
	Events []Event `json:"events"`
}

func (*EventsRecord) Type() CmdType { return CmdEventsRecord }
func (*EventsRecord) Scope() string { return "" }

func (c *EventsRecord) apply(tx *Tx) error {
	if len(c.Events) > MaxRecordedEvents {
		return Invalidf("%d events in one batch (at most %d)", len(c.Events), MaxRecordedEvents)
	}
	for _, e := range c.Events {
		if err := e.Recordable(); err != nil {
			return err
		}
	}
	for _, e := range c.Events {
		if err := tx.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// Events lists the events after cursor (""= from the oldest kept), in
// order: about limit of them, never stopping inside one log index (a
// reader that follows by index sees each index whole).
func (tx *Tx) Events(after string, limit int) ([]LoggedEvent, error) {
	var out []LoggedEvent
	cur := tx.space(Space(KindEvent)).Cursor()
	k, v := cur.First()
	if after != "" {
		k, v = cur.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, v = cur.Next()
		}
	}
	for ; k != nil; k, v = cur.Next() {
		idx := EventIndex(string(k))
		if limit > 0 && len(out) >= limit && idx != out[len(out)-1].Index {
			break
		}
		var e Event
		if err := json.Unmarshal(v[8:], &e); err != nil {
			return nil, err
		}
		out = append(out, LoggedEvent{Cursor: string(k), Index: idx, Event: e})
	}
	return out, nil
}

// EventsNewestFirst reads up to limit events logged before the cursor
// before ("": the newest), newest first.
func (tx *Tx) EventsNewestFirst(before string, limit int) ([]LoggedEvent, error) {
	var out []LoggedEvent
	cur := tx.space(Space(KindEvent)).Cursor()
	var k, v []byte
	if before == "" {
		k, v = cur.Last()
	} else if k, v = cur.Seek([]byte(before)); k == nil {
		k, v = cur.Last() // every key is before it
	} else {
		k, v = cur.Prev()
	}
	for ; k != nil && len(out) < limit; k, v = cur.Prev() {
		var e Event
		if err := json.Unmarshal(v[8:], &e); err != nil {
			return nil, err
		}
		out = append(out, LoggedEvent{Cursor: string(k), Index: EventIndex(string(k)), Event: e})
	}
	return out, nil
}

// OldestEvent is the cursor of the oldest event kept and how many are
// kept ("" and 0 when none).
func (tx *Tx) OldestEvent() (string, int) {
	b := tx.space(Space(KindEvent))
	k, _ := b.Cursor().First()
	if k == nil {
		return "", 0
	}
	return string(k), tx.Count(KindEvent)
}

// EventsBefore is the cursor of the first event at or after t, walking
// at most max events from the oldest ("" when all those are older).
func (tx *Tx) EventsBefore(t time.Time, max int) (string, error) {
	cur := tx.space(Space(KindEvent)).Cursor()
	n := 0
	for k, v := cur.First(); k != nil && n < max; k, v = cur.Next() {
		var e struct {
			Timestamp time.Time `json:"timestamp"`
		}
		if err := json.Unmarshal(v[8:], &e); err != nil {
			return "", err
		}
		if !e.Timestamp.Before(t) {
			return string(k), nil
		}
		n++
	}
	return "", nil
}

// NthEvent is the cursor of the n-th oldest event kept ("" if fewer).
func (tx *Tx) NthEvent(n int) string {
	cur := tx.space(Space(KindEvent)).Cursor()
	i := 0
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if i == n {
			return string(k)
		}
		i++
	}
	return ""
}

// dropEventsBefore forgets the events before cursor
// and remembers the last one forgotten (EventsTrimmed).
func (tx *Tx) dropEventsBefore(cursor string) error {
	var drop []string
	cur := tx.space(Space(KindEvent)).Cursor()
	for k, _ := cur.First(); k != nil && bytes.Compare(k, []byte(cursor)) < 0; k, _ = cur.Next() {
		drop = append(drop, string(k))
	}
	if len(drop) == 0 {
		return nil
	}
	if err := tx.delAll(KindEvent, drop); err != nil {
		return err
	}
	return tx.putRec(KindState, stateEventsTrimmed, drop[len(drop)-1])
}

const stateEventsTrimmed = "events_trimmed"

// EventsTrimmed is the cursor of the last event the log has forgotten
// ("" if none): a reader whose cursor is before it has missed events.
func (tx *Tx) EventsTrimmed() string {
	raw, _ := tx.lookup(Space(KindState), stateEventsTrimmed)
	var c string
	if raw != nil {
		_ = json.Unmarshal(raw, &c)
	}
	return c
}

func eventRepo(_ string, body []byte) string {
	var e struct {
		Repo string `json:"repository_id"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Repo
}

type actorKey struct{}

type acting struct {
	who Actor
	at  time.Time
}

// WithActor tells the commands decided under ctx who acts, and when, for
// the events they record (see Stamp).
func WithActor(ctx context.Context, who Actor, at time.Time) context.Context {
	return context.WithValue(ctx, actorKey{}, acting{who, at.UTC()})
}

// ActorOf is the actor WithActor put in ctx.
func ActorOf(ctx context.Context) (Actor, bool) {
	v, ok := ctx.Value(actorKey{}).(acting)
	return v.who, ok
}

// Stamp writes the actor and time of ctx (WithActor) into a command whose
// events name them, unless it names them already. Decide stamps what it
// commits; a caller committing otherwise stamps itself.
func Stamp(ctx context.Context, c Command) {
	v, ok := ctx.Value(actorKey{}).(acting)
	if !ok {
		return
	}
	who := v.who
	switch c := c.(type) {
	case *Checked:
		Stamp(ctx, c.Cmd)
	case *ArtifactDelete:
		if c.Actor == nil {
			c.Actor, c.At = &who, v.at
		}
	case *ArtifactsApply:
		if c.Actor == nil {
			c.Actor, c.At = &who, v.at
		}
	case *RepoDelete:
		if c.Actor == nil {
			c.Actor, c.At = &who, v.at
		}
	case *RepoCreate:
		if c.Actor == nil {
			c.Actor = &who
		}
	case *UserCreate:
		if c.Actor == nil {
			c.Actor = &who
		}
	}
}
