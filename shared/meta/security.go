package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Security: the advisory database (one record naming the blob that holds
// it, so every origin evaluates the same data) and the scans of
// artifacts (a record each; the report with its findings is a blob). The
// origin's scan service writes them; edges never need them.

const (
	KindAdvisoryDB   Kind    = 18
	KindScan         Kind    = 19
	CmdAdvisoriesSet CmdType = 50
	CmdScansRequest  CmdType = 51
	CmdScanUpdate    CmdType = 52
)

var (
	bScansByArtifact = []byte("scans_by_artifact") // artifact \0 created (unix nanos, hex) \0 id -> ""
	bScanQueue       = []byte("scan_queue")        // created \0 id -> "" (queued and running scans)
	bScanOrder       = []byte("scan_order")        // created \0 id -> repo \0 status \0 artifact
)

func init() {
	declareKind(KindAdvisoryDB, kindDecl{Name: "advisory database", Bucket: "advisory_db", Index: indexBlob(KindAdvisoryDB, func(r *AdvisoryDB) string { return r.Digest }), Unfed: true})
	declareKind(KindScan, kindDecl{Name: "security scans", Bucket: "scans", Repo: scanRepo, Index: indexScan,
		Derived: [][]byte{bScansByArtifact, bScanQueue, bScanOrder}, Unfed: true})
	declareCommand(CmdAdvisoriesSet, func() Command { return new(AdvisoriesSet) })
	declareCommand(CmdScansRequest, func() Command { return new(ScansRequest) })
	declareCommand(CmdScanUpdate, func() Command { return new(ScanUpdate) })
}

// AdvisoryDB is the advisory database in force: a blob of the cluster
// holding its records (zstd-compressed JSON lines, one OSV record each).
type AdvisoryDB struct {
	Digest     string         `json:"digest"`
	SizeBytes  int64          `json:"size_bytes"`
	Advisories int            `json:"advisories"`
	Ecosystems map[string]int `json:"ecosystems"` // advisories naming a package of each
	LoadedAt   time.Time      `json:"loaded_at"`
	LoadedBy   string         `json:"loaded_by"`
	// Loads are the last loads that made it, newest first.
	Loads []AdvisoryLoad `json:"loads,omitempty"`
}

// AdvisoryLoad is one load of advisories into the database.
type AdvisoryLoad struct {
	At      time.Time `json:"at"`
	By      string    `json:"by"`
	Source  string    `json:"source"` // what was loaded: a file's name, a directory
	Read    int       `json:"read"`   // records read
	Added   int       `json:"added"`
	Updated int       `json:"updated"`
}

// MaxAdvisoryLoads is how many loads the record remembers.
const MaxAdvisoryLoads = 20

const advisoryDBKey = "current"

// AdvisoriesSet puts a new advisory database in force, refused (a
// conflict) unless the one in force is still Was (its digest, "" for
// none): two loads at once do not lose each other's records.
type AdvisoriesSet struct {
	DB  AdvisoryDB `json:"db"`
	Was string     `json:"was"`
}

func (*AdvisoriesSet) Type() CmdType { return CmdAdvisoriesSet }
func (*AdvisoriesSet) Scope() string { return "" }

func (c *AdvisoriesSet) apply(tx *Tx) error {
	cur := tx.AdvisoryDB()
	was := ""
	if cur != nil {
		was = cur.Digest
	}
	if was != c.Was {
		return Conflictf("the advisory database changed meanwhile (it is %q, not %q): load again", was, c.Was)
	}
	if c.DB.Digest == "" || len(c.DB.Loads) > MaxAdvisoryLoads {
		return Invalidf("an advisory database needs its blob and at most %d loads", MaxAdvisoryLoads)
	}
	return tx.putRec(KindAdvisoryDB, advisoryDBKey, c.DB)
}

// AdvisoryDB reads the database in force (nil: none loaded).
func (tx *Tx) AdvisoryDB() *AdvisoryDB {
	db, err := getRec[AdvisoryDB](tx, KindAdvisoryDB, advisoryDBKey, "advisory database")
	if err != nil {
		return nil
	}
	return db
}

// Scan statuses.
const (
	ScanQueued    = "queued"
	ScanRunning   = "running"
	ScanCompleted = "completed"
	ScanFailed    = "failed"
)

// Vulnerabilities counts findings by severity (the spec's four, and
// those whose advisory says none).
type Vulnerabilities struct {
	Critical int `json:"critical"`
	High     int `json:"high"`
	Medium   int `json:"medium"`
	Low      int `json:"low"`
	Unknown  int `json:"unknown"`
}

// Severities lists the severities with findings, most severe first.
func (v Vulnerabilities) Severities() []string {
	var out []string
	for _, s := range []struct {
		name string
		n    int
	}{{"critical", v.Critical}, {"high", v.High}, {"medium", v.Medium}, {"low", v.Low}, {"unknown", v.Unknown}} {
		if s.n > 0 {
			out = append(out, s.name)
		}
	}
	return out
}

// Scan is one scan of an artifact.
type Scan struct {
	ID           string `json:"id"`
	ArtifactID   string `json:"artifact_id"`
	RepositoryID string `json:"repository_id"`
	PackageName  string `json:"package_name"`
	Version      string `json:"version"`
	Format       string `json:"format"`
	Scanner      string `json:"scanner"`
	Status       string `json:"status"`
	// Error says why a scan failed.
	Error           string          `json:"error,omitempty"`
	Vulnerabilities Vulnerabilities `json:"vulnerabilities"`
	// Packages is how many packages were matched (the package and its
	// dependencies), NotScanned how many could not be, said in the report.
	Packages   int `json:"packages_scanned"`
	NotScanned int `json:"not_scanned"`
	// Report is the blob of the report (findings and what was not
	// scanned); ReportURL where the API serves it.
	Report      string     `json:"report_digest,omitempty"`
	ReportURL   string     `json:"report_url,omitempty"`
	Advisories  string     `json:"advisories,omitempty"` // the database's digest it was matched against
	Trigger     string     `json:"trigger"`              // request, upload, advisories
	RequestedBy string     `json:"requested_by,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	ScannedAt   *time.Time `json:"scanned_at,omitempty"`
	Node        string     `json:"node,omitempty"` // the origin that ran it
}

func scanRepo(_ string, body []byte) string {
	var s struct {
		Repo string `json:"repository_id"`
	}
	_ = json.Unmarshal(body, &s)
	return s.Repo
}

// scanOrder is a scan's place in the order indexes: its creation time,
// fixed-width hex, so keys sort by it.
func scanOrder(s *Scan) string { return fmt.Sprintf("%016x", uint64(s.CreatedAt.UnixNano())) }

func indexScan(tx *Tx, id string, before, after []byte) error {
	o, n, err := decodePair[Scan](before, after)
	if err != nil {
		return err
	}
	if o != nil {
		if err := tx.delKey(bScansByArtifact, key(o.ArtifactID, scanOrder(o), id)); err != nil {
			return err
		}
		if err := tx.delKey(bScanQueue, key(scanOrder(o), id)); err != nil {
			return err
		}
		if err := tx.delKey(bScanOrder, key(scanOrder(o), id)); err != nil {
			return err
		}
		if o.Report != "" {
			if err := tx.unref(KindScan, id, o.Report); err != nil {
				return err
			}
		}
	}
	if n == nil {
		return nil
	}
	if err := tx.setKey(bScansByArtifact, key(n.ArtifactID, scanOrder(n), id)); err != nil {
		return err
	}
	if err := tx.bucket(bScanOrder).Put([]byte(key(scanOrder(n), id)), []byte(key(n.RepositoryID, n.Status, n.ArtifactID))); err != nil {
		return err
	}
	if n.Status == ScanQueued || n.Status == ScanRunning {
		if err := tx.setKey(bScanQueue, key(scanOrder(n), id)); err != nil {
			return err
		}
	}
	if n.Report != "" {
		return tx.ref(KindScan, id, n.Report)
	}
	return nil
}

// Bounds of scans.
const (
	MaxScansPerRequest = 1000
	// ScansKept is how many scans of one artifact are kept: older ones
	// go as new ones complete.
	ScansKept = 5
)

// ScansRequest queues scans (each new, queued); an artifact gone
// meanwhile is skipped, and so is one that has a scan queued already.
// With To set it is the scan-on-upload follower's: it moves the
// follower's cursor in the change feed from From (refused, a conflict,
// when the cursor is elsewhere) to To.
type ScansRequest struct {
	Scans    []Scan `json:"scans,omitempty"`
	From, To uint64 `json:",omitempty"`
	// Rescan, when set, is how far the re-scan of what was scanned
	// against an older advisory database has gone.
	Rescan *Rescan `json:"rescan,omitempty"`
}

// Rescan is the re-scan of every artifact with a verdict once the
// advisory database changed: against database Digest, the artifacts up
// to After (in id order) are queued; Done when all are.
type Rescan struct {
	Digest string `json:"digest"`
	After  string `json:"after,omitempty"`
	Done   bool   `json:"done,omitempty"`
}

func (*ScansRequest) Type() CmdType { return CmdScansRequest }
func (*ScansRequest) Scope() string { return "" }

// ScannerState is the scan-on-upload follower's replicated state: how
// far it has read the change feed.
type ScannerState struct {
	Cursor uint64  `json:"cursor"`
	Rescan *Rescan `json:"rescan,omitempty"`
}

const stateScanner = "scanner"

// Scanner reads the follower's state.
func (tx *Tx) Scanner() ScannerState {
	var s ScannerState
	if raw, _ := tx.lookup(Space(KindState), stateScanner); raw != nil {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (c *ScansRequest) apply(tx *Tx) error {
	if len(c.Scans) > MaxScansPerRequest || len(c.Scans) == 0 && c.To == 0 && c.Rescan == nil {
		return Invalidf("a scans request holds 1 to %d scans, or moves the cursor or the re-scan", MaxScansPerRequest)
	}
	if c.To != 0 || c.Rescan != nil {
		st := tx.Scanner()
		if c.To != 0 {
			if st.Cursor != c.From {
				return Conflictf("the scanner's cursor is at %d, not %d", st.Cursor, c.From)
			}
			st.Cursor = c.To
		}
		if c.Rescan != nil {
			st.Rescan = c.Rescan
		}
		if err := tx.putRec(KindState, stateScanner, st); err != nil {
			return err
		}
	}
	bulk := len(c.Scans) > 1 || c.To != 0 || c.Rescan != nil
	for _, s := range c.Scans {
		if s.ID == "" || s.Status != ScanQueued {
			return Invalidf("a scan is requested with an id, queued")
		}
		if tx.exists(KindScan, s.ID) {
			return Conflictf("scan %s exists", s.ID)
		}
		a, err := tx.Artifact(s.ArtifactID)
		if err != nil {
			if !bulk {
				return err
			}
			continue
		}
		if q := tx.QueuedScanOf(a.ID); q != nil {
			if !bulk {
				return Conflictf("artifact %s has scan %s %s already", a.ID, q.ID, q.Status)
			}
			continue
		}
		s.RepositoryID, s.PackageName, s.Version, s.Format = a.RepositoryID, a.PackageName, a.Version, a.Format
		if err := tx.putRec(KindScan, s.ID, s); err != nil {
			return err
		}
	}
	return nil
}

// ScanUpdate moves a scan on from status Was (a conflict otherwise: the
// scan another origin took stays its own): to running, or to completed
// or failed with its outcome, or a running scan back to queued (its
// origin stopped leading before it finished). Completing one records the scan.completed
// event and forgets the artifact's scans beyond ScansKept.
type ScanUpdate struct {
	Scan Scan   `json:"scan"`
	Was  string `json:"was"`
	// Findings of a completed scan become the artifact's verdict.
	Findings []Flagged `json:"findings,omitempty"`
}

func (*ScanUpdate) Type() CmdType   { return CmdScanUpdate }
func (c *ScanUpdate) Scope() string { return c.Scan.RepositoryID }

func (c *ScanUpdate) apply(tx *Tx) error {
	s := c.Scan
	old, err := tx.Scan(s.ID)
	if err != nil {
		return err
	}
	switch {
	case old.Status != c.Was:
		return Conflictf("scan %s is %s, not %s", s.ID, old.Status, c.Was)
	case old.ArtifactID != s.ArtifactID:
		return Invalidf("a scan keeps its artifact")
	case !slices.Contains([]string{ScanRunning, ScanCompleted, ScanFailed}, s.Status) && !(s.Status == ScanQueued && c.Was == ScanRunning):
		return Invalidf("a scan moves on to running, completed or failed, or back to queued from running")
	}
	s.Error = clip(s.Error, 1024)
	if err := tx.putRec(KindScan, s.ID, s); err != nil {
		return err
	}
	if s.Status != ScanCompleted && s.Status != ScanFailed {
		return nil
	}
	if err := tx.pruneScans(s.ArtifactID); err != nil {
		return err
	}
	if s.Status != ScanCompleted {
		return nil
	}
	at := s.CreatedAt
	if s.ScannedAt != nil {
		at = *s.ScannedAt
	}
	if err := tx.putVerdict(Verdict{ArtifactID: s.ArtifactID, RepositoryID: s.RepositoryID, ScanID: s.ID, ScannedAt: at,
		Advisories: s.Advisories, Findings: c.Findings}); err != nil {
		return err
	}
	v := s.Vulnerabilities
	return tx.emit(Event{Name: EventScanCompleted, Timestamp: at, RepositoryID: s.RepositoryID, Format: s.Format,
		Severity: v.Severities(), Data: mustJSON(scanData{ScanID: s.ID, ArtifactID: s.ArtifactID, PackageName: s.PackageName,
			Version: s.Version, Scanner: s.Scanner, Status: s.Status, Vulnerabilities: scanCounts{v.Critical, v.High, v.Medium, v.Low},
			Unknown: v.Unknown, ReportURL: s.ReportURL})})
}

type (
	scanCounts struct {
		Critical int `json:"critical"`
		High     int `json:"high"`
		Medium   int `json:"medium"`
		Low      int `json:"low"`
	}
	scanData struct {
		ScanID          string     `json:"scan_id"`
		ArtifactID      string     `json:"artifact_id"`
		PackageName     string     `json:"package_name"`
		Version         string     `json:"version"`
		Scanner         string     `json:"scanner"`
		Status          string     `json:"status"`
		Vulnerabilities scanCounts `json:"vulnerabilities"`
		Unknown         int        `json:"unknown_severity"`
		ReportURL       string     `json:"report_url"`
	}
)

// pruneScans forgets the finished scans of an artifact beyond ScansKept,
// oldest first.
func (tx *Tx) pruneScans(artifactID string) error {
	ids := tx.scanIDsOf(artifactID)
	var done []string
	for _, id := range ids {
		if s, err := tx.Scan(id); err == nil && (s.Status == ScanCompleted || s.Status == ScanFailed) {
			done = append(done, id)
		}
	}
	for len(done) > ScansKept {
		if err := tx.delRec(KindScan, done[0]); err != nil {
			return err
		}
		done = done[1:]
	}
	return nil
}

// scanIDsOf lists an artifact's scans, oldest first.
func (tx *Tx) scanIDsOf(artifactID string) []string {
	var out []string
	for _, k := range tx.prefixKeys(bScansByArtifact, key(artifactID, "")) {
		out = append(out, k[bytes.LastIndexByte([]byte(k), 0)+1:])
	}
	return out
}

// forgetScans drops the scans and the verdict of an artifact that goes.
func (tx *Tx) forgetScans(artifactID string) error {
	for _, id := range tx.scanIDsOf(artifactID) {
		if err := tx.delRec(KindScan, id); err != nil {
			return err
		}
	}
	return tx.forgetVerdict(artifactID)
}

// VerdictIDs lists up to n artifact ids with a verdict, after after, in
// order.
func (tx *Tx) VerdictIDs(after string, n int) []string {
	var out []string
	cur := tx.space(Space(KindVerdict)).Cursor()
	k, _ := cur.Seek([]byte(after))
	if k != nil && after != "" && string(k) == after {
		k, _ = cur.Next()
	}
	for ; k != nil && len(out) < n; k, _ = cur.Next() {
		out = append(out, string(k))
	}
	return out
}

// Scan reads one scan.
func (tx *Tx) Scan(id string) (*Scan, error) { return getRec[Scan](tx, KindScan, id, "scan") }

// ScansOf lists an artifact's scans, newest first.
func (tx *Tx) ScansOf(artifactID string) []Scan {
	ids := tx.scanIDsOf(artifactID)
	out := make([]Scan, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		if s, err := tx.Scan(ids[i]); err == nil {
			out = append(out, *s)
		}
	}
	return out
}

// QueuedScanOf is an artifact's scan that is queued or running, if any.
func (tx *Tx) QueuedScanOf(artifactID string) *Scan {
	ids := tx.scanIDsOf(artifactID)
	for i := len(ids) - 1; i >= 0; i-- {
		if s, err := tx.Scan(ids[i]); err == nil && (s.Status == ScanQueued || s.Status == ScanRunning) {
			return s
		}
	}
	return nil
}

// ScanQueue lists up to n scans queued or running, oldest first.
func (tx *Tx) ScanQueue(n int) []Scan {
	var out []Scan
	cur := tx.bucket(bScanQueue).Cursor()
	for k, _ := cur.First(); k != nil && len(out) < n; k, _ = cur.Next() {
		id := k[bytes.LastIndexByte(k, 0)+1:]
		if s, err := tx.Scan(string(id)); err == nil {
			out = append(out, *s)
		}
	}
	return out
}

// ScanFilter narrows Scans.
type ScanFilter struct {
	ArtifactID, RepositoryID, Status string
	// Repos, when not nil, are the repositories the caller may read.
	Repos         []string
	Offset, Limit int
}

// Scans lists scans, newest first: the window [Offset, Offset+Limit) of
// those the filter keeps, and how many it keeps in all. The filter is
// read from the scans' order index; only the window's records are read.
func (tx *Tx) Scans(f ScanFilter) ([]Scan, int) {
	var out []Scan
	total := 0
	cur := tx.bucket(bScanOrder).Cursor()
	for k, v := cur.Last(); k != nil; k, v = cur.Prev() {
		parts := bytes.SplitN(v, []byte{0}, 3)
		if len(parts) != 3 {
			continue
		}
		repo, status, art := string(parts[0]), string(parts[1]), string(parts[2])
		switch {
		case f.ArtifactID != "" && art != f.ArtifactID, f.RepositoryID != "" && repo != f.RepositoryID,
			f.Status != "" && status != f.Status, f.Repos != nil && !slices.Contains(f.Repos, repo):
			continue
		}
		total++
		if total <= f.Offset || (f.Limit > 0 && len(out) >= f.Limit) {
			continue
		}
		if s, err := tx.Scan(string(k[bytes.LastIndexByte(k, 0)+1:])); err == nil {
			out = append(out, *s)
		}
	}
	return out, total
}
