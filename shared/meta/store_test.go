package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/depot-registry/depot/shared/blob"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// script is a sequence of commands touching every command type, each of
// which must succeed on the state the previous ones built.
func script() []Command {
	exp := t0.Add(time.Hour)
	role := RoleAdmin // u2, the other admin, is deleted at the end
	cmds := []Command{
		&UserCreate{User: User{ID: "u1", Username: "alice", Email: "a@x", Role: RoleUser, PasswordHash: "h1", CreatedAt: t0, UpdatedAt: t0}},
		&UserCreate{User: User{ID: "u2", Username: "bob", Email: "b@x", Role: RoleAdmin, PasswordHash: "h2", MustChangePassword: true, CreatedAt: t0}},
		&UserUpdate{ID: "u1", Email: ptr("alice@x"), PasswordHash: ptr("h1b"), Role: &role, MustChangePassword: ptr(false), At: t0.Add(time.Minute)},
		&TokenCreate{Token: Token{ID: "t1", UserID: "u1", Name: "ci", Scopes: []string{"repository:read"}, Hash: "hash1", Hint: "dpt_abcd", ExpiresAt: &exp, CreatedAt: t0}},
		&TokenCreate{Token: Token{ID: "t2", UserID: "u2", Name: "x", Scopes: []string{"admin"}, Hash: "hash2", CreatedAt: t0}},
		&TokenRevoke{ID: "t2", UserID: "u2"},
		&SessionCreate{Session: Session{ID: "s1", UserID: "u1", CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}},
		&SessionCreate{Session: Session{ID: "s2", UserID: "u1", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}},
		&SessionRevoke{ID: "s1", At: t0.Add(time.Second)},
		&SessionPurge{Before: t0.Add(2 * time.Minute)},
		&GroupCreate{Group: Group{ID: "g1", Name: "devs", Description: "developers", CreatedAt: t0}},
		&GroupAddMembers{GroupID: "g1", UserIDs: []string{"u2", "u1", "u2"}},
		&RepoCreate{Repo: Repository{ID: "r1", Name: "files", Format: "generic", Public: true, CreatedAt: t0, UpdatedAt: t0},
			CreatorGrant: &Permission{ID: "p0", UserID: "u1", Permissions: []string{"admin"}, CreatedAt: t0}},
		&RepoCreate{Repo: Repository{ID: "r2", Name: "other", Format: "npm", CreatedAt: t0, UpdatedAt: t0}},
		&RepoUpdate{ID: "r1", Description: ptr("desc"), Public: ptr(false), Settings: map[string]string{"k": "v"}, At: t0.Add(time.Hour)},
		&PermissionCreate{Permission: Permission{ID: "p1", RepositoryID: "r1", GroupID: "g1", Permissions: []string{"read", "write"}, CreatedAt: t0}},
		&PermissionCreate{Permission: Permission{ID: "p2", RepositoryID: "r2", UserID: "u1", Permissions: []string{"delete"}, CreatedAt: t0}},
		&PermissionDelete{ID: "p2"},
		&ArtifactPut{Artifact: Artifact{ID: "a1", RepositoryID: "r1", Path: "tool/1.0/t.bin", PackageName: "tool", Version: "1.0",
			SizeBytes: 10, Digest: "sha256:aa", Checksums: blob.Checksums{SHA256: "aa"}, UploadedAt: t0, UploadedBy: "alice"}},
		&ArtifactPut{Artifact: Artifact{ID: "a2", RepositoryID: "r1", Path: "tool/1.0/t.bin", PackageName: "tool", Version: "1.0",
			SizeBytes: 20, Digest: "sha256:bb", UploadedAt: t0.Add(time.Second), UploadedBy: "alice"}, Replace: true},
		&KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/latest", Value: json.RawMessage(`"a2"`)}, {Key: "tag/old", Value: json.RawMessage(`"x"`)}}},
		&ArtifactPut{Artifact: Artifact{ID: "a3", RepositoryID: "r1", Path: "tool/2.0/t.bin", PackageName: "tool", Version: "2.0",
			SizeBytes: 5, Digest: "sha256:cc", UploadedAt: t0.Add(2 * time.Second), UploadedBy: "bob", Attrs: json.RawMessage(`{"k":1}`), Refs: []string{"sha256:dd"}},
			KV: []KVOp{{Key: "tag/old"}, {Key: "tag/two", Value: json.RawMessage(`"a3"`)}}},
		&ArtifactPut{Artifact: Artifact{ID: "a4", RepositoryID: "r2", Path: "x/-/x-1.tgz", PackageName: "x", Version: "1",
			SizeBytes: 7, Digest: "sha256:dd", UploadedAt: t0}},
		&KVApply{RepoID: "r2", Ops: []KVOp{{Key: "dist-tags/x", Value: json.RawMessage(`{"latest":"1"}`)}}},
		&ArtifactsApply{RepoID: "r2", Drop: []string{"a4"}, Put: []Artifact{
			{ID: "a5", RepositoryID: "r2", Path: "x/-/x-2.tgz", PackageName: "x", Version: "2", SizeBytes: 9, Digest: "sha256:ee", UploadedAt: t0},
			{ID: "a6", RepositoryID: "r2", Path: "x/-/x-3.tgz", PackageName: "x", Version: "3", SizeBytes: 1, Digest: "sha256:ff", UploadedAt: t0},
		}, KV: []KVOp{{Key: "dist-tags/x", Value: json.RawMessage(`{"latest":"3"}`)}}},
		&ArtifactDelete{IDs: []string{"a3"}, RepoID: "r1", KV: []KVOp{{Key: "tag/two"}}},
		&Checked{Pre: []Pre{{Space: Space(KindKV), Key: key("r1", "tag/new")}, {Space: SpaceArtifactPaths, Key: key("r1", "tool/"), Prefix: true, Count: 1, Index: 20}},
			Cmd: &KVApply{RepoID: "r1", Ops: []KVOp{{Key: "tag/new", Value: json.RawMessage(`"a2"`), Blobs: []string{"sha256:bb"}}}}},
		&EdgeCreate{Edge: EdgeNode{ID: "e1", Name: "near-ci", URL: "http://edge:8081", Region: "eu", TokenHash: "ehash1", CreatedAt: t0, UpdatedAt: t0}},
		&EdgeCreate{Edge: EdgeNode{ID: "e2", Name: "gone", URL: "http://edge2:8081", TokenHash: "ehash2", CreatedAt: t0, UpdatedAt: t0}},
		&EdgeAssign{ID: "e1", RepoIDs: []string{"r2", "r1", "r2"}, At: t0.Add(time.Minute)},
		&EdgeHeartbeat{ID: "e1", Report: EdgeReport{At: t0.Add(2 * time.Minute), AppliedIndex: 30, CachedBytes: 100, MissingBlobs: 2, Version: "v1"}},
		&EdgeUnassign{ID: "e1", RepoID: "r1", At: t0.Add(3 * time.Minute)},
		&EdgeDelete{ID: "e2"},
		&WebhookCreate{Webhook: Webhook{ID: "w1", URL: "https://ci.example.com/hook", Events: []string{"*"}, Secret: "s", Active: true, CreatedAt: t0, UpdatedAt: t0}},
		&WebhookCreate{Webhook: Webhook{ID: "w2", URL: "https://ci.example.com/other", Events: []string{"artifact.uploaded"}, CreatedAt: t0, UpdatedAt: t0}},
		&WebhookUpdate{ID: "w1", Active: new(bool), Filters: &WebhookFilters{RepositoryID: "r2"}, At: t0.Add(time.Minute)},
		&WebhookDelete{ID: "w2"},
		&WebhookCreate{Webhook: Webhook{ID: "w3", URL: "https://ci.example.com/3", Events: []string{"*"}, Active: true, CreatedAt: t0, UpdatedAt: t0}},
	}
	// w3's cursor is the index it was created at: each command takes one.
	w3 := uint64(len(cmds))
	body := json.RawMessage(`{"event":"artifact.uploaded","timestamp":"2026-01-02T03:04:05Z","data":{}}`)
	retry := t0.Add(time.Hour)
	return append(cmds,
		&EventsRecord{Events: []Event{DownloadEvent(&Artifact{ID: "a2", PackageName: "tool", Version: "1.0"},
			&Repository{ID: "r1", Name: "files", Format: "generic"}, Actor{UserID: "u1", Username: "alice", IPAddress: "192.0.2.1"}, t0)}},
		&DeliveriesEnqueue{WebhookID: "w3", From: w3, To: w3 + 1, Deliveries: []Delivery{
			{ID: "d1", WebhookID: "w3", Event: "artifact.downloaded", EventCursor: eventKey(w3+1, 0), Body: body, CreatedAt: t0, NextAttemptAt: t0},
			{ID: "d2", WebhookID: "w3", Event: "artifact.downloaded", EventCursor: eventKey(w3+1, 0), Body: body, CreatedAt: t0.Add(time.Second), NextAttemptAt: t0}}},
		&DeliveryAttempt{ID: "d1", Attempt: 1, At: t0, StatusCode: 500, DurationMS: 3, Retry: &retry},
		&DeliveryAttempt{ID: "d2", Attempt: 1, At: t0, StatusCode: 204, DurationMS: 2, Succeeded: true},
		&DeliveryRedeliver{ID: "d2", At: t0.Add(time.Minute)},
		&DeliveryCreate{Delivery: Delivery{ID: "d3", WebhookID: "w3", Event: "webhook.test", Body: body, CreatedAt: t0, NextAttemptAt: t0, Manual: true}},
		&EventsCompact{EventsBefore: eventKey(w3+1, 0), Drop: []string{"d1"}, Expire: []string{"d3"}, At: t0.Add(time.Hour)},
		&RepoDelete{ID: "r2", Actor: &Actor{UserID: "u1", Username: "alice"}, At: t0}, // also unassigns it from e1
		&UserDelete{ID: "u2"},
		&UserProvision{User: User{ID: "u3", Username: "carol", Email: "c@x", Role: RoleUser, Source: SourceLDAP},
			NewGroups: []Group{{ID: "g2", Name: "ops"}}, Groups: []string{"g2", "g1"}, At: t0},
		&UserProvision{User: User{ID: "u3", Username: "carol", Email: "carol@x", Role: RoleViewer, Source: SourceLDAP},
			Groups: []string{"g1"}, At: t0.Add(time.Minute)},
		&UserProvision{User: User{ID: "u4", Username: "dave", Role: RoleUser, Source: SourceLDAP}, At: t0},
		&TokenCreate{Token: Token{ID: "t4", UserID: "u4", Name: "dave's", Scopes: []string{"repository:read"}, Hash: "hash4", CreatedAt: t0}},
		&UserDisable{ID: "u4", Disabled: true, By: DisabledByDirectory, At: t0.Add(time.Minute)},
		&DirectorySynced{Result: DirectorySync{StartedAt: t0, EndedAt: t0.Add(time.Second), Users: 2, Disabled: 1}},
		&DirectorySynced{Result: DirectorySync{StartedAt: t0.Add(time.Hour), EndedAt: t0.Add(time.Hour), Error: "directory down"}},
		&UserDisplayName{ID: "u3", DisplayName: "Carol Example", At: t0.Add(2 * time.Minute)},
		&DownloadsCounted{Hours: map[int64]int64{490000: 3, 490001: 1}},
		&GroupRemoveMembers{GroupID: "g1", UserIDs: []string{"u3"}},
		&PackageInfoPut{Infos: []PackageInfo{{RepositoryID: "r1", Name: "tool", ArtifactID: "a2", Summary: "A tool for things",
			Keywords: []string{"cli"}, Licenses: []string{"MIT"}}}, To: 30, Read: 1},
		&ReindexStart{By: "u1", At: t0, Total: 1},
		&PackageInfoPut{To: 40, Read: 1, Finished: true, At: &t0},
		&SettingsSet{Set: map[string]json.RawMessage{"a.b": json.RawMessage(`true`), "c.d": json.RawMessage(`5`)}, Actor: &Actor{UserID: "u1", Username: "alice"}, At: t0},
		&SettingsSet{Set: map[string]json.RawMessage{"c.d": json.RawMessage(`6`)}, Reset: []string{"a.b"}, At: t0.Add(time.Minute)},
		&BackupPut{Backup: Backup{ID: "b1", Status: BackupPending, Description: "nightly", CreatedAt: t0}, Create: true},
		&BackupPut{Backup: Backup{ID: "b1", Status: BackupCompleted, Description: "nightly", CreatedAt: t0, Digest: "sha256:bk", SizeBytes: 9}, Was: BackupPending},
		&BackupPut{Backup: Backup{ID: "b2", Status: BackupPending, CreatedAt: t0}, Create: true},
		&BackupDelete{ID: "b2"},
		&RestoreStateSet{State: RestoreState{BackupID: "b1", Status: "requested", RequestedAt: t0}, Request: true},
		&RepoRetain{ID: "r1", Rule: &Retention{KeepLast: 3, KeepDownloadedDays: 30}, At: t0},
		&DownloadsSeen{Day: 20000, ArtifactIDs: []string{"a2", "gone"}},
		&RetentionRan{Run: &RetentionRun{StartedAt: t0, FinishedAt: t0.Add(time.Second), By: "schedule", Repositories: 1}, Day: 20001},
		&AdvisoriesSet{DB: AdvisoryDB{Digest: "sha256:adv", Advisories: 2, Ecosystems: map[string]int{"npm": 2}, LoadedAt: t0, LoadedBy: "alice",
			Loads: []AdvisoryLoad{{At: t0, By: "alice", Source: "osv.zip", Read: 2, Added: 2}}}},
		&ScansRequest{Scans: []Scan{{ID: "s1", ArtifactID: "a2", Scanner: "osv", Status: ScanQueued, Trigger: "request", CreatedAt: t0}}},
		&ScanUpdate{Scan: Scan{ID: "s1", ArtifactID: "a2", RepositoryID: "r1", Scanner: "osv", Status: ScanRunning, CreatedAt: t0, StartedAt: &t0}, Was: ScanQueued},
		&ScanUpdate{Scan: Scan{ID: "s1", ArtifactID: "a2", RepositoryID: "r1", Scanner: "osv", Status: ScanCompleted, CreatedAt: t0, StartedAt: &t0,
			ScannedAt: &t0, Vulnerabilities: Vulnerabilities{High: 1, Unknown: 2}, Report: "sha256:rep", ReportURL: "http://depot/api/v1/security/scans/s1"}, Was: ScanRunning,
			Findings: []Flagged{{ID: "GHSA-1", Severity: "high", Package: "tool"}}},
		&PolicyPut{Policy: Policy{ID: "p1", Name: "no criticals", Enabled: true, Rules: PolicyRules{SeverityThreshold: "critical", BlockDownload: true,
			Allow: []Allowed{{ID: "GHSA-1", Reason: "not reachable", AddedAt: t0}}}, CreatedAt: t0, UpdatedAt: t0}, Create: true},
		&PolicyPut{Policy: Policy{ID: "p2", Name: "gone", CreatedAt: t0, UpdatedAt: t0}, Create: true},
		&PolicyDelete{ID: "p2"},
		&ViolationsRecord{Events: []Event{ViolationEvent("download", &Artifact{ID: "a2", PackageName: "tool", Version: "1.0"},
			&Repository{ID: "r1", Name: "files", Format: "generic"}, "p1", "no criticals", "blocked", []string{"GHSA-1"}, Actor{UserID: "u1", Username: "alice"}, t0)}},
		NewMigrationPut(Migration{ID: "m1", Status: MigrationPending, Source: MigrationSource{Type: "artifactory", URL: "https://af.example/artifactory",
			Username: "admin", Password: "secret"}, Repositories: []string{"libs-release"}, CreatedAt: t0, CreatedBy: "alice", CreatedByID: "u1"}, true, ""),
		&MigrationEntries{ID: "m1", Entries: []MigrationEntry{{At: t0, Kind: "log", Level: "info", Message: "listing libs-release"},
			{At: t0, Kind: "failure", Message: "checksum mismatch", Repository: "libs-release", Path: "a/b.jar", Size: 3}}},
		&ArtifactProperties{ID: "a2", RepoID: "r1", Set: map[string][]string{"build.number": {"42"}, "qa": {"passed", "signed"}}},
		&ArtifactProperties{ID: "a2", RepoID: "r1", Set: map[string][]string{"build.number": {"43"}}, Remove: []string{"qa"}},
		&SigningKeyCreate{Key: SigningKey{ID: "k1", Name: "release", Algorithm: "ed25519", Fingerprint: "ff", PublicKey: "-----BEGIN PUBLIC KEY-----",
			CreatedAt: t0, CreatedBy: "alice"}, Sealed: []byte("sealed")},
		&SigningKeyCreate{Key: SigningKey{ID: "k2", Name: "old", Algorithm: "openpgp", Fingerprint: "ee", PublicKey: "armored", CreatedAt: t0}, Sealed: []byte("s2")},
		&SignatureAdd{Signature: Signature{ArtifactID: "a2", RepositoryID: "r1", KeyID: "k1", Algorithm: "ed25519", Digest: "", Value: []byte("sig"),
			Signer: "alice", SignedAt: t0}},
		&SignaturesAdd{Signatures: []Signature{{ArtifactID: "a2", RepositoryID: "r1", KeyID: "k1", Algorithm: "ed25519", Value: []byte("sig2"),
			Signer: "auto", SignedAt: t0}, {ArtifactID: "gone", RepositoryID: "r1", KeyID: "k1", Value: []byte("x")}}, From: 0, To: 40},
		&SigningKeyRetire{ID: "k1", At: t0},
		&PluginSet{State: PluginState{ID: "npm", Enabled: false, UpdatedAt: t0, UpdatedBy: "alice"}},
		&PluginSet{State: PluginState{ID: "pypi", Enabled: true, UpdatedAt: t0}},
		&SigningKeyDelete{ID: "k2"},
		&PluginInstall{Plugin: InstalledPlugin{ID: "terraform", Name: "Terraform", Version: "1.0.0", Format: "terraform", Prefix: "/terraform",
			Roots: []string{"/.well-known/terraform.json"}, Digest: "sha256:m1", Size: 10, InstalledAt: t0, InstalledBy: "alice"}},
		&PluginInstall{Plugin: InstalledPlugin{ID: "pub", Name: "Pub", Version: "0.1.0", Format: "pub", Prefix: "/pub", Digest: "sha256:m2", Size: 5, InstalledAt: t0}},
		&PluginSet{State: PluginState{ID: "terraform", Enabled: false, UpdatedAt: t0}},
		&PluginInstall{Plugin: InstalledPlugin{ID: "terraform", Name: "Terraform", Version: "1.1.0", Format: "terraform", Prefix: "/terraform",
			Digest: "sha256:m3", Size: 11, InstalledAt: t0}, Replaces: "sha256:m1"},
		&PluginUninstall{ID: "pub"},
	)
}

// testLog applies commands to a store one index after another, as the log
// would: apply answers a command's error, must fails the test on one.
type testLog struct {
	t   *testing.T
	s   *Store
	idx uint64
}

func (l *testLog) apply(c Command) error { l.idx++; return l.s.Apply(l.idx, c) }

func (l *testLog) must(c Command) {
	l.t.Helper()
	if err := l.apply(c); err != nil {
		l.t.Fatalf("%T: %v", c, err)
	}
}

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dump renders every bucket, in key order, for comparing stores.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	var buf bytes.Buffer
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if bytes.Equal(name, bSys) && (bytes.Equal(k, keyLastApplied) || bytes.Equal(k, keyIndexedTo)) {
					return nil // the log position moves whatever the command did
				}
				fmt.Fprintf(&buf, "%s %q=%q\n", name, k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// snapshotBytes is a whole snapshot of s.
func snapshotBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	snap, err := s.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func snapshotInto(t *testing.T, from *Store) *Store {
	t.Helper()
	to := open(t)
	if err := to.Restore(bytes.NewReader(snapshotBytes(t, from))); err != nil {
		t.Fatal(err)
	}
	return to
}

func TestScriptCoversEveryCommandType(t *testing.T) {
	seen := map[CmdType]bool{}
	for _, c := range script() {
		seen[c.Type()] = true
	}
	for _, ty := range CommandTypes() {
		if !seen[ty] {
			t.Errorf("command type %d (%T) is not in the round-trip script", ty, commands[ty]())
		}
	}
}

// TestCommandRoundTrip: every command survives encode/decode, apply,
// snapshot and restore, step by step.
func TestCommandRoundTrip(t *testing.T) {
	s := open(t)
	for i, c := range script() {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(data)
		if err != nil {
			t.Fatalf("decode %T: %v", c, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%T changed in encode/decode:\n got %+v\nwant %+v", c, back, c)
		}
		before := dump(t, s)
		if err := s.ApplyBatch([]Entry{{Index: uint64(i + 1), Data: data}})[0].Err; err != nil {
			t.Fatalf("apply %T: %v", c, err)
		}
		after := dump(t, s)
		if after == before {
			t.Errorf("%T changed nothing", c)
		}
		restored := snapshotInto(t, s)
		if got := dump(t, restored); got != after {
			t.Fatalf("after %T, restored store differs:\n got %s\nwant %s", c, got, after)
		}
		if restored.LastApplied() != uint64(i+1) {
			t.Fatalf("restored last_applied = %d, want %d", restored.LastApplied(), i+1)
		}
	}
	// The state the script built, read back through the queries.
	err := s.View(func(tx *Tx) error {
		u, err := tx.UserByName("ALICE")
		if err != nil || u.Email != "alice@x" || u.Role != RoleAdmin || u.PasswordHash != "h1b" {
			t.Errorf("alice = %+v, %v", u, err)
		}
		if _, err := tx.User("u2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted user still there: %v", err)
		}
		if _, err := tx.TokenByHash("hash1"); err != nil {
			t.Errorf("token t1: %v", err)
		}
		if _, err := tx.TokenByHash("hash2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoked token found: %v", err)
		}
		if s, err := tx.Session("s1"); err != nil || s.RevokedAt == nil {
			t.Errorf("s1 = %+v, %v", s, err)
		}
		if _, err := tx.Session("s2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("purged session s2 still there: %v", err)
		}
		g, _ := tx.Group("g1")
		if !reflect.DeepEqual(g.Members, []string{"u1"}) {
			t.Errorf("group members = %v, want [u1] (u2 deleted, u3 given by its directory and taken out)", g.Members)
		}
		if ops, err := tx.GroupByRef("ops"); err != nil || len(ops.Members) != 0 {
			t.Errorf("ops = %+v, %v; want it without members (the directory no longer lists it)", ops, err)
		}
		if u, err := tx.UserByName("dave"); err != nil || !u.Disabled {
			t.Errorf("dave = %+v, %v; want disabled", u, err)
		}
		if _, err := tx.TokenByID("t4"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a disabled user's token is still there: %v", err)
		}
		if last, ok := tx.DirectorySyncs(); last == nil || last.Error != "directory down" || ok == nil || ok.Disabled != 1 {
			t.Errorf("directory syncs: last %+v, last successful %+v", last, ok)
		}
		if u, err := tx.UserByName("carol"); err != nil || u.Source != SourceLDAP || u.Email != "carol@x" || u.Role != RoleViewer || u.DisplayName != "Carol Example" ||
			!reflect.DeepEqual(u.DirectoryGroups, []string{"g1"}) {
			t.Errorf("carol = %+v, %v", u, err)
		}
		r, err := tx.Repo("r1")
		if err != nil || r.ArtifactCount != 1 || r.SizeBytes != 20 || r.Description != "desc" || r.Public || r.Settings["k"] != "v" {
			t.Errorf("r1 = %+v, %v", r, err)
		}
		if _, err := tx.RepoByName("other"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted repo found: %v", err)
		}
		e, err := tx.EdgeByTokenHash("ehash1")
		if err != nil || e.ID != "e1" || len(e.Repositories) != 0 || e.Report == nil || e.Report.AppliedIndex != 30 ||
			!e.UpdatedAt.Equal(t0.Add(3*time.Minute)) {
			t.Errorf("edge e1 = %+v, %v (want no repository left, its report, updated when r1 was unassigned)", e, err)
		}
		if _, err := tx.EdgeByTokenHash("ehash2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deregistered edge's credential still found: %v", err)
		}
		// sha256:bb is kept by artifact a2 and by a format key, both of r1;
		// sha256:ee went with r2.
		if got := tx.BlobRepos("sha256:bb"); !reflect.DeepEqual(got, []string{"r1"}) {
			t.Errorf("repositories of sha256:bb = %v, want [r1]", got)
		}
		if got := tx.BlobRepos("sha256:ee"); len(got) != 0 {
			t.Errorf("repositories of sha256:ee = %v, want none", got)
		}
		if got, err := tx.RepoBlobs("r1"); err != nil || !reflect.DeepEqual(got, []string{"sha256:bb"}) {
			t.Errorf("blobs of r1 = %v, %v; want [sha256:bb]", got, err)
		}
		if _, err := tx.Artifact("a4"); !errors.Is(err, ErrNotFound) {
			t.Errorf("artifact of deleted repo still there: %v", err)
		}
		a, err := tx.ArtifactByPath("r1", "tool/1.0/t.bin")
		if err != nil || a.ID != "a2" || a.Format != "generic" {
			t.Errorf("replaced artifact = %+v, %v", a, err)
		}
		if v, ok := tx.KV("r1", "tag/latest"); !ok || string(v) != `"a2"` {
			t.Errorf("kv tag/latest = %s %v", v, ok)
		}
		if kv := tx.KVList("r1", "tag/"); len(kv) != 2 || kv[0].Key != "tag/latest" || kv[1].Key != "tag/new" {
			t.Errorf("kv of r1 = %+v, want tag/latest and tag/new", kv)
		}
		if kv := tx.KVList("r2", ""); len(kv) != 0 {
			t.Errorf("kv of deleted repo r2 = %+v", kv)
		}
		perms, _ := tx.Permissions(nil)
		if len(perms) != 2 {
			t.Errorf("permissions = %+v, want p0 and p1", perms)
		}
		pkgs, total, _ := tx.Packages(PackageFilter{})
		if total != 1 || len(pkgs) != 1 || pkgs[0].Name != "tool" || pkgs[0].VersionCount != 1 || pkgs[0].TotalSizeBytes != 20 {
			t.Errorf("packages = %+v", pkgs)
		}
		st, _ := tx.Stats()
		if st != (Stats{Repositories: 1, Artifacts: 1, TotalSizeBytes: 20, Users: 3}) {
			t.Errorf("stats = %+v", st)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFailedCommandChangesNothing(t *testing.T) {
	s := open(t)
	for _, c := range script()[:14] {
		if err := s.Apply(0, c); err != nil {
			t.Fatal(err)
		}
	}
	bad := []struct {
		c    Command
		want error
	}{
		{&UserCreate{User: User{ID: "u9", Username: "Alice"}}, ErrConflict},
		{&RepoCreate{Repo: Repository{ID: "r9", Name: "FILES", Format: "generic"}}, ErrConflict},
		{&RepoCreate{Repo: Repository{ID: "r9", Name: "new"}, CreatorGrant: &Permission{ID: "p9", UserID: "nobody"}}, ErrNotFound},
		{&PermissionCreate{Permission: Permission{ID: "p9", RepositoryID: "r1"}}, ErrInvalid},
		{&PermissionCreate{Permission: Permission{ID: "p9", RepositoryID: "nope", UserID: "u1"}}, ErrNotFound},
		{&GroupAddMembers{GroupID: "g1", UserIDs: []string{"u1", "ghost"}}, ErrNotFound},
		{&TokenRevoke{ID: "t1", UserID: "u2"}, ErrNotFound},
		{&ArtifactPut{Artifact: Artifact{ID: "a9", RepositoryID: "nope", Path: "p", Digest: "d"}}, ErrNotFound},
		{&UserDelete{ID: "ghost"}, ErrNotFound},
		{&KVApply{RepoID: "nope", Ops: []KVOp{{Key: "k", Value: json.RawMessage(`1`)}}}, ErrNotFound},
		{&KVApply{RepoID: "r1", Ops: []KVOp{{Key: "ok", Value: json.RawMessage(`1`)}, {Key: ""}}}, ErrInvalid},
		{&ArtifactPut{Artifact: Artifact{ID: "a9", RepositoryID: "r1", Path: "q", Digest: "d"}, KV: []KVOp{{Key: "a\x00b"}}}, ErrInvalid},
		{&ArtifactDelete{IDs: []string{"ghost"}}, ErrNotFound},
		{&ArtifactsApply{RepoID: "r1", Drop: []string{"ghost"}}, ErrNotFound},
		{&ArtifactsApply{RepoID: "r1", Put: []Artifact{{ID: "n1", RepositoryID: "r2", Path: "p", Digest: "d"}}}, ErrInvalid},
		{&ArtifactsApply{RepoID: "r1", Put: []Artifact{{ID: "n1", RepositoryID: "r1", Path: "p", Digest: "d"}, {ID: "n2", RepositoryID: "r1", Path: "p", Digest: "d"}}}, ErrInvalid},
	}
	for _, b := range bad {
		before := dump(t, s)
		err := s.ApplyBatch([]Entry{{Index: 0, Data: must(Encode(b.c))}})[0].Err
		if !errors.Is(err, b.want) {
			t.Errorf("%T: err = %v, want %v", b.c, err, b.want)
		}
		if after := dump(t, s); after != before {
			t.Errorf("%T failed but changed the store", b.c)
		}
	}
	// Same path twice without Replace.
	a := Artifact{ID: "a1", RepositoryID: "r1", Path: "p/1/f", Digest: "d", SizeBytes: 3}
	if err := s.Apply(0, &ArtifactPut{Artifact: a}); err != nil {
		t.Fatal(err)
	}
	a.ID = "a2"
	before := dump(t, s)
	if err := s.Apply(0, &ArtifactPut{Artifact: a}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate path: %v", err)
	}
	if dump(t, s) != before {
		t.Fatal("conflicting put changed the store")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestReplayedEntriesAreSkipped(t *testing.T) {
	s := open(t)
	c := &UserCreate{User: User{ID: "u1", Username: "alice"}}
	data := must(Encode(c))
	if err := s.ApplyBatch([]Entry{{Index: 5, Data: data}})[0].Err; err != nil {
		t.Fatal(err)
	}
	// After a restart raft may hand the same entry again: it must be a
	// no-op, not a conflict.
	if err := s.ApplyBatch([]Entry{{Index: 5, Data: data}})[0].Err; err != nil {
		t.Fatalf("replayed entry: %v", err)
	}
	if s.LastApplied() != 5 {
		t.Fatalf("last applied = %d", s.LastApplied())
	}
	// A batch mixing old and new entries applies only the new ones.
	c2 := must(Encode(&UserCreate{User: User{ID: "u2", Username: "bob"}}))
	res := s.ApplyBatch([]Entry{{Index: 4, Data: data}, {Index: 6, Data: c2}})
	if res[0].Err != nil || res[1].Err != nil || s.LastApplied() != 6 {
		t.Fatalf("mixed batch: %+v, last %d", res, s.LastApplied())
	}
}

// TestUnknownCommandPanics: an entry this build cannot apply (a type
// only a newer build knows, another wire version, garbage) is never
// skipped (Applicable says so first); one whose type is marked ignorable
// is skipped, the applied index moving past it.
func TestUnknownCommandPanics(t *testing.T) {
	s := open(t)
	for _, data := range [][]byte{{1, 0x7f, 0xff, '{', '}'}, {9, 0, 1, '{', '}'}, {1}} {
		if err := Applicable(data); err == nil {
			t.Errorf("%v is applicable", data)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("applying %v did not panic", data)
				}
			}()
			s.ApplyBatch([]Entry{{Index: 1, Data: data}})
		}()
	}
	ignorable := []byte{1, 0xff, 0xff, '{', '}'}
	if err := Applicable(ignorable); err != nil {
		t.Fatalf("an ignorable command: %v", err)
	}
	if res := s.ApplyBatch([]Entry{{Index: 1, Data: ignorable}}); res[0].Err != nil || s.LastApplied() != 1 {
		t.Fatalf("an ignorable command: %+v, applied %d", res, s.LastApplied())
	}
	if !errors.Is(Applicable([]byte{1, 0x7f, 0xff, '{', '}'}), ErrUnknownCommand) {
		t.Fatal("a newer build's command is not ErrUnknownCommand")
	}
}

// TestKnownCommands: the set this build advertises names every declared
// type and nothing else; a build from before the sets were advertised
// knows types 1 to 34; a checked command names the type it wraps.
func TestKnownCommands(t *testing.T) {
	set := KnownCommands()
	for _, ty := range CommandTypes() {
		if !Knows(set, ty) {
			t.Errorf("%q does not name %d", set, ty)
		}
	}
	if Knows(set, 0x7ffe) || Knows("", 35) || !Knows("", 34) || !Knows("1-3,7", 7) || Knows("1-3,7", 5) || !Knows("", 0x8123) {
		t.Errorf("Knows is wrong (set %q)", set)
	}
	data := must(Encode(&Checked{Cmd: &UserDelete{ID: "u"}}))
	if types, err := CommandTypesOf(data); err != nil || len(types) != 2 || types[0] != CmdChecked || types[1] != CmdUserDelete {
		t.Fatalf("types of a checked command: %v %v", types, err)
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	s := open(t)
	if err := s.Apply(1, &UserCreate{User: User{ID: "u1", Username: "alice"}}); err != nil {
		t.Fatal(err)
	}
	before := dump(t, s)
	if err := s.Restore(bytes.NewReader([]byte("not a snapshot"))); err == nil {
		t.Fatal("garbage snapshot accepted")
	}
	// A real snapshot cut short is refused too: no end frame.
	full := snapshotBytes(t, s)
	for _, cut := range []int{len(full) - 1, len(full) / 2, len(snapMagic) + 1} {
		if err := s.Restore(bytes.NewReader(full[:cut])); err == nil {
			t.Fatalf("snapshot cut to %d of %d bytes accepted", cut, len(full))
		}
	}
	if dump(t, s) != before {
		t.Fatal("a failed restore changed the store")
	}
	if dump(t, s) != before {
		t.Fatal("failed restore changed the store")
	}
}

func TestReopenKeepsState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range script() {
		if err := s.Apply(uint64(i+1), c); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(t, s)
	s.Close()
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if dump(t, s2) != want || s2.LastApplied() != uint64(len(script())) {
		t.Fatal("reopened store differs")
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range script() {
		f.Add(must(Encode(c)))
	}
	f.Add([]byte{1, 0, 1, 'n', 'u', 'l', 'l'})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Encode(c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("decode of re-encoded command: %v", err)
		}
	})
}
