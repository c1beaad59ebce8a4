package origin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/depot-registry/depot/cluster/leader"
	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/origin/fsm"
	"github.com/depot-registry/depot/origin/service/audit"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/meta"
)

// AdminSocket is the unix socket, in the data directory, on which a
// running origin serves local administration (today: password resets).
// It is created 0600: whoever can open it could read the data directory
// anyway, and that access is its only authentication.
const AdminSocket = "admin.sock"

// errDataDirInUse: a running origin holds the metadata store's lock.
var errDataDirInUse = errors.New("the data directory is in use by a running origin")

// ResetPassword gives username a new random password that must be changed
// at the next login, and signs out every session of the user. On a
// stopped data directory it starts the raft node there and commits the
// change through raft; when a running origin holds the directory it asks
// that origin over its admin socket. online says which was done.
func ResetPassword(ctx context.Context, dataDir, username string, log *slog.Logger) (password string, online bool, err error) {
	password, err = resetOffline(ctx, dataDir, username, log)
	if errors.Is(err, errDataDirInUse) {
		online = true
		password, err = resetOnline(ctx, dataDir, username)
	}
	var client *apierr.Error
	if errors.As(err, &client) {
		err = errors.New(client.Message) // for a person, without the API's code
	}
	return password, online, err
}

// resetOffline applies the reset on a data directory no origin runs on,
// through a one-voter raft node (the change is in the replicated log,
// like any other).
func resetOffline(ctx context.Context, dataDir, username string, log *slog.Logger) (string, error) {
	metaPath := filepath.Join(dataDir, "meta.db")
	if _, err := os.Stat(metaPath); err != nil {
		return "", fmt.Errorf("%s is not the data directory of an origin: %w", dataDir, err)
	}
	// bbolt's file lock says whether an origin runs here; a shared lock
	// with a short timeout asks without waiting for it.
	probe, err := bolt.Open(metaPath, 0o600, &bolt.Options{ReadOnly: true, Timeout: 300 * time.Millisecond})
	if errors.Is(err, bolt.ErrTimeout) {
		return "", errDataDirInUse
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", metaPath, err)
	}
	probe.Close()

	nodeID, err := os.ReadFile(filepath.Join(dataDir, "node-id"))
	if err != nil {
		return "", fmt.Errorf("%s is not the data directory of an origin: %w", dataDir, err)
	}
	store, err := meta.Open(metaPath)
	if err != nil {
		return "", err
	}
	defer store.Close()
	// No peer ever talks to this node: a throwaway cluster key keeps the
	// raft port closed to everyone, and any free port does.
	node, err := raftnode.New(raftnode.Config{
		NodeID: strings.TrimSpace(string(nodeID)), BindAddr: "127.0.0.1:0", Dir: filepath.Join(dataDir, "raft"),
		Key: peerauth.NewKey(), Logger: log, HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
	}, fsm.New(store))
	if err != nil {
		return "", err
	}
	defer func() {
		if err := node.Shutdown(); err != nil {
			log.Warn("raft shutdown", "err", err)
		}
	}()
	switch n := node.Voters(); {
	case n == 0:
		return "", fmt.Errorf("%s holds no raft state", dataDir)
	case n > 1:
		return "", fmt.Errorf("this node is one of %d voters of a cluster and cannot commit alone: run the command while its origin runs", n)
	}
	if err := node.WaitLeader(ctx); err != nil {
		return "", err
	}
	return resetPassword(ctx, store, &leader.Local{Node: node}, time.Now(), username)
}

// resetPassword commits the reset and returns the new password.
func resetPassword(ctx context.Context, store *meta.Store, commit leader.Applier, now time.Time, username string) (string, error) {
	var u *meta.User
	err := store.View(func(tx *meta.Tx) error {
		var err error
		u, err = tx.UserByName(username)
		return err
	})
	if errors.Is(err, meta.ErrNotFound) {
		return "", apierr.New(apierr.NotFound, "there is no user %q", username)
	}
	if err != nil {
		return "", err
	}
	if u.Source != "" && u.Source != "local" {
		return "", apierr.New(apierr.Forbidden, "the password of %s is managed by its %s directory", u.Username, u.Source)
	}
	pw := auth.RandomPassword()
	hash, err := auth.HashPassword(pw)
	if err != nil {
		return "", err
	}
	must := true
	_, err = commit.Apply(ctx, &meta.UserUpdate{ID: u.ID, PasswordHash: &hash, MustChangePassword: &must,
		RevokeSessions: true, At: now.UTC()})
	return pw, err
}

// resetRequest and resetAnswer cross the admin socket.
type resetRequest struct {
	Username string `json:"username"`
}

type resetAnswer struct {
	Password string `json:"password"`
}

// serveAdmin serves the admin socket until the returned server closes.
func (o *Origin) serveAdmin() (*http.Server, error) {
	path := filepath.Join(o.cfg.DataDir, AdminSocket)
	// A socket left by a crashed run: this process holds the data
	// directory's lock, so nobody else serves it.
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /reset-password", o.adminReset)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

func (o *Origin) adminReset(w http.ResponseWriter, r *http.Request) {
	var req resetRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil || req.Username == "" {
		apierr.Write(w, apierr.Invalid("username", "a JSON object with username is expected"))
		return
	}
	pw, err := resetPassword(r.Context(), o.store, o.commit, o.now(), req.Username)
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	o.audit.Record(audit.Event{Time: o.now().UTC(), Actor: "local-admin", Action: "admin.reset-password",
		Target: req.Username, Remote: "unix:" + AdminSocket, Outcome: outcome})
	var client *apierr.Error
	switch {
	case errors.As(err, &client):
		apierr.Write(w, client)
	case err != nil:
		o.log.Error("admin password reset failed", "username", req.Username, "err", err)
		apierr.Write(w, apierr.New(apierr.Internal, "the reset failed; the origin's log says why"))
	default:
		o.log.Info("password reset through the admin socket", "username", req.Username)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resetAnswer{Password: pw})
	}
}

// resetOnline asks the origin running on dataDir over its admin socket.
func resetOnline(ctx context.Context, dataDir, username string) (string, error) {
	path := filepath.Join(dataDir, AdminSocket)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
	body, _ := json.Marshal(resetRequest{Username: username})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://origin/reset-password", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w, and its admin socket does not answer: %v", errDataDirInUse, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error apierr.Error `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			return "", errors.New(e.Error.Message)
		}
		return "", fmt.Errorf("the origin answered %s", resp.Status)
	}
	var a resetAnswer
	if err := json.Unmarshal(data, &a); err != nil || a.Password == "" {
		return "", fmt.Errorf("the origin answered an unreadable reset: %q", data)
	}
	return a.Password, nil
}
