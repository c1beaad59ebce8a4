// Package membership is the gossip pool of a depot cluster, on
// hashicorp/memberlist: which nodes there are, what each is (an origin
// with its raft and API addresses, or an edge), and whether each is
// alive. Gossip is encrypted and authenticated with a key derived from
// the cluster key (memberlist's keyring), so a node without the key
// neither reads nor joins the pool.
//
// Membership says who is there; raft decides who votes. The raft leader
// reconciles the two (cluster/leader).
package membership

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/shared/logx"
	"github.com/depot-registry/depot/shared/progress"
)

// Roles of members.
const (
	RoleOrigin = "origin"
	RoleEdge   = "edge"
)

// Statuses of members.
const (
	Alive = "alive"
	Dead  = "dead"
	Left  = "left"
)

// Meta is what a node tells the pool about itself.
type Meta struct {
	Role     string `json:"role"`
	RaftAddr string `json:"raft,omitempty"` // origins: where peers reach its raft
	APIURL   string `json:"api,omitempty"`  // where clients and edges reach it
	Expect   int    `json:"expect,omitempty"`
	// Applied is the node's last applied log index, refreshed now and
	// then (see Pool.SetApplied): for the cluster view, not for decisions.
	Applied uint64 `json:"applied,omitempty"`
	// Downloads is how many downloads the node counted over the last 24
	// hours (its own and its edges'), refreshed like Applied.
	Downloads int64 `json:"downloads,omitempty"`
	// Commands is the set of command types the node's build can apply
	// (meta.KnownCommands); "" from a build before it was said.
	Commands string `json:"commands,omitempty"`
	// BlobCopies is how many origins the node has keep each blob (0:
	// every one, and a build before it was said): every origin should
	// say the same.
	BlobCopies int `json:"copies,omitempty"`
	// Leaving is said just before a graceful leave, so the others record
	// the node as left rather than dead (memberlist's own event does not
	// tell them apart).
	Leaving bool `json:"leaving,omitempty"`
	// Sync is the origin's blob repair progress, refreshed like Applied
	// (nil from a build before it was said).
	Sync *Sync `json:"sync,omitempty"`
}

// Sync is a progress.Sync in few bytes (a node's meta is bounded).
type Sync struct {
	State   string `json:"s"`
	Missing int64  `json:"m,omitempty"`
	Done    int64  `json:"d,omitempty"`
	Total   int64  `json:"t,omitempty"`
	Failed  int64  `json:"f,omitempty"`
	Bytes   int64  `json:"b,omitempty"`
	Rate    int64  `json:"r,omitempty"`
	ETA     *int64 `json:"e,omitempty"`
}

// SyncOf is s in few bytes.
func SyncOf(s *progress.Sync) *Sync {
	if s == nil {
		return nil
	}
	return &Sync{State: s.State, Missing: s.Missing, Done: s.Done, Total: s.Total, Failed: s.Failed, Bytes: s.Bytes,
		Rate: s.BytesPerSecond, ETA: s.ETASeconds}
}

// Progress is the sync said, of operation (nil when none was said).
func (s *Sync) Progress(operation string) *progress.Sync {
	if s == nil {
		return nil
	}
	return &progress.Sync{State: s.State, Missing: s.Missing, Status: progress.Status{Operation: operation,
		Running: s.State == progress.Syncing, Done: s.Done, Total: s.Total, Failed: s.Failed, Bytes: s.Bytes,
		BytesPerSecond: s.Rate, ETASeconds: s.ETA}}
}

// Member is one node of the pool.
type Member struct {
	ID     string
	Addr   string // gossip host:port
	Status string
	Meta
}

// Config of a node's place in the pool.
type Config struct {
	NodeID string
	// BindAddr is host:port for gossip (UDP and TCP); port 0 picks one.
	// Empty: the node gossips with nobody (an origin alone), and the
	// pool is this node.
	BindAddr  string
	Advertise string // host:port others reach it at; BindAddr when empty
	Key       peerauth.Key
	Meta      Meta
	Logger    *slog.Logger
	// OnChange is told, on its own goroutine, when a member joins,
	// leaves, fails or changes its meta.
	OnChange func()
	// Fast uses short probe and gossip intervals (tests on loopback).
	Fast bool
}

// Pool is this node's membership.
type Pool struct {
	id   string
	ml   *memberlist.Memberlist
	mu   sync.Mutex
	meta Meta
	// members is the pool as the event callbacks told it (memberlist's
	// own node structs change under its lock, so they are copied there):
	// those that left or died stay until they return or are forgotten.
	members map[string]Member
	log     *slog.Logger

	changed chan struct{}
	done    chan struct{}
}

// ErrOtherKey is Join answered by a pool whose messages this node cannot
// read, nor they its: their cluster key is not this node's.
var ErrOtherKey = errors.New("this node's cluster key differs from the pool's")

// ErrAlone is Join on a node that gossips with nobody.
var ErrAlone = errors.New("this node gossips with nobody (it was started without a gossip address)")

// Start joins nobody yet: the node is a pool of one until Join.
func Start(cfg Config) (*Pool, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BindAddr == "" {
		p := &Pool{id: cfg.NodeID, meta: cfg.Meta, members: map[string]Member{}, log: cfg.Logger, done: make(chan struct{})}
		p.members[p.id] = Member{ID: p.id, Status: Alive, Meta: p.meta}
		return p, nil
	}
	mc := memberlist.DefaultLANConfig()
	if cfg.Fast {
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval = 200*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
		mc.SuspicionMult, mc.PushPullInterval = 2, 2*time.Second
	}
	mc.Name = cfg.NodeID
	host, port, err := splitHostPort(cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip address %q: %w", cfg.BindAddr, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	if cfg.Advertise != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = splitHostPort(cfg.Advertise); err != nil {
			return nil, fmt.Errorf("gossip advertise address %q: %w", cfg.Advertise, err)
		}
	}
	secret, err := hkdf.Key(sha256.New, cfg.Key[:], nil, "depot gossip", 32)
	if err != nil {
		return nil, err
	}
	if mc.Keyring, err = memberlist.NewKeyring(nil, secret); err != nil {
		return nil, err
	}
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	// A stranger's packets each make memberlist log a line: see throttle.
	mc.Logger = log.New(newThrottle(memberlistLog(cfg.Logger), logEvery, time.Now), "", 0)
	p := &Pool{id: cfg.NodeID, meta: cfg.Meta, members: map[string]Member{}, log: cfg.Logger, changed: make(chan struct{}, 1), done: make(chan struct{})}
	mc.Delegate = delegate{p}
	mc.Events = events{p}
	if p.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("gossip on %s: %w", cfg.BindAddr, err)
	}
	if cfg.OnChange != nil {
		go func() {
			for {
				select {
				case <-p.done:
					return
				case <-p.changed:
					cfg.OnChange()
				}
			}
		}()
	}
	return p, nil
}

// memberlistLog is where memberlist's lines go: into l, at the level
// each line names, but for what gossip says in a cluster's normal life.
func memberlistLog(l *slog.Logger) io.Writer {
	return logx.HCLogDemoting(l, "memberlist", chatter).StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
}

// chatter is memberlist's warning that this node, suspected or declared
// dead by another (a slow probe, a restart, a healed partition), tells
// the pool it is alive: the protocol doing its work.
func chatter(msg string) bool {
	return strings.Contains(msg, "Refuting a suspect message") || strings.Contains(msg, "Refuting a dead message")
}

// splitHostPort splits addr, resolving a host name to its address
// (memberlist binds and advertises addresses only): in a container, the
// container's own name.
func splitHostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("bad port %q", port)
	}
	if host != "" && net.ParseIP(host) == nil {
		ip, err := net.ResolveIPAddr("ip4", host)
		if err != nil {
			return "", 0, err
		}
		host = ip.IP.String()
	}
	return host, n, nil
}

// Addr is where the pool is reached (host:port), for others to join (as
// the join event of this node said: memberlist's own record of it changes
// in place).
func (p *Pool) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.members[p.id].Addr
}

// Join contacts the given pool members (host:port); it succeeds when one
// answered.
func (p *Pool) Join(addrs []string) error {
	if p.ml == nil {
		return ErrAlone
	}
	n, err := p.ml.Join(addrs)
	if n == 0 && err != nil {
		if strings.Contains(err.Error(), errUndecryptable) {
			return fmt.Errorf("joining %v: %w (%v)", addrs, ErrOtherKey, err)
		}
		return fmt.Errorf("joining %v: %w", addrs, err)
	}
	return nil
}

// Members lists every node the pool knows of, this one included, by id:
// the live ones, and those that left or died.
func (p *Pool) Members() []Member {
	p.mu.Lock()
	out := make([]Member, 0, len(p.members))
	for _, m := range p.members {
		out = append(out, m)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Forget drops a member that left or died from the list (a peer replaced
// for good).
func (p *Pool) Forget(id string) {
	p.mu.Lock()
	if m, ok := p.members[id]; ok && m.Status != Alive {
		delete(p.members, id)
	}
	p.mu.Unlock()
}

// member copies n; memberlist holds its lock while it calls the events.
func member(n *memberlist.Node) Member {
	m := Member{ID: n.Name, Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))}
	_ = json.Unmarshal(n.Meta, &m.Meta)
	return m
}

// Update changes what this node tells the pool about itself (its applied
// index now and then, its API URL once it listens).
func (p *Pool) Update(change func(*Meta)) {
	p.mu.Lock()
	before := p.meta
	change(&p.meta)
	same := p.meta == before
	if p.ml == nil {
		self := p.members[p.id]
		self.Meta = p.meta
		p.members[p.id] = self
	}
	p.mu.Unlock()
	if !same && p.ml != nil {
		_ = p.ml.UpdateNode(time.Second)
	}
}

// Leave tells the pool this node is going (it is then "left", not
// "dead") and stops gossiping.
func (p *Pool) Leave(timeout time.Duration) error {
	if p.ml == nil {
		return p.Shutdown()
	}
	p.mu.Lock()
	p.meta.Leaving = true
	p.mu.Unlock()
	_ = p.ml.UpdateNode(timeout)
	err := p.ml.Leave(timeout)
	if serr := p.Shutdown(); err == nil {
		err = serr
	}
	return err
}

// Shutdown stops gossiping without a word (others will find the node
// dead).
func (p *Pool) Shutdown() error {
	select {
	case <-p.done:
		return nil
	default:
		close(p.done)
	}
	if p.ml == nil {
		return nil
	}
	return p.ml.Shutdown()
}

func (p *Pool) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// delegate gives memberlist this node's meta.
type delegate struct{ p *Pool }

func (d delegate) NodeMeta(limit int) []byte {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	b, _ := json.Marshal(d.p.meta)
	if len(b) > limit {
		d.p.log.Error("gossip meta too large; sending none", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}
func (delegate) NotifyMsg([]byte)                           {}
func (delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (delegate) LocalState(join bool) []byte                { return nil }
func (delegate) MergeRemoteState(buf []byte, join bool)     {}

// events turns memberlist's notifications into OnChange.
type events struct{ p *Pool }

func (e events) NotifyJoin(n *memberlist.Node) { e.p.record(member(n), Alive) }

// NotifyLeave is told of a node that left or was found dead: one that
// said it was leaving left.
func (e events) NotifyLeave(n *memberlist.Node) {
	m := member(n)
	if m.Leaving {
		e.p.record(m, Left)
		return
	}
	e.p.record(m, Dead)
}

func (e events) NotifyUpdate(n *memberlist.Node) { e.p.record(member(n), Alive) }

func (p *Pool) record(m Member, status string) {
	m.Status = status
	p.mu.Lock()
	p.members[m.ID] = m
	p.mu.Unlock()
	p.notify()
}
