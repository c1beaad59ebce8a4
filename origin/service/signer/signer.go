// Package signer signs uploads: the cluster's leader follows the change
// feed for new artifacts and signs each one of a repository whose
// signing_key setting names a key, recording the signatures with its
// cursor in one command, so a new leader carries on where the last one
// left off and nothing is signed twice. A follower that never committed
// starts at the feed's end: what was uploaded before a repository had a
// key is signed on request (POST /signing/sign).
package signer

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/depot-registry/depot/shared/format/oci"
	"github.com/depot-registry/depot/shared/meta"
)

// Config of a Service.
type Config struct {
	Store  *meta.Store
	Commit meta.Committer
	// Sign signs an uploaded artifact with key keyID (the application's
	// UploadSignature), answering the signature to record.
	Sign func(ctx context.Context, a *meta.Artifact, keyID string) (meta.Signature, error)
	Log  *slog.Logger
	// Poll bounds a wait for new entries (they usually wake it first).
	Poll time.Duration
}

// Service is the sign-on-upload follower.
type Service struct{ cfg Config }

// New makes the service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	return &Service{cfg: cfg}
}

// batch is how many changes a step reads.
const batch = 100

// position is how far this leader has read: from base, the replicated
// cursor it read from, up to read (ahead of the cursor when what it
// read since needed no signature: the cursor moves with signatures only).
type position struct{ base, read uint64 }

// Run signs new uploads while ctx lasts (the leader's job).
func (s *Service) Run(ctx context.Context) {
	var pos position
	s.cfg.Store.FollowLog(ctx, s.cfg.Poll, func(ctx context.Context) (bool, error) { return s.step(ctx, &pos) },
		func(err error) { s.cfg.Log.Warn("signing uploads", "err", err) })
}

// step reads a batch of the feed, signs its uploads and records the
// signatures with the cursor moved past them.
func (s *Service) step(ctx context.Context, pos *position) (more bool, err error) {
	type todo struct {
		art   meta.Artifact
		keyID string
	}
	var work []todo
	var from, next, applied uint64
	err = s.cfg.Store.View(func(tx *meta.Tx) error {
		from, applied = tx.Signer().Cursor, tx.Applied()
		if pos.base != from || pos.read == 0 { // a new leader, or the cursor moved elsewhere
			pos.base, pos.read = from, max(from, pos.read)
			if from == 0 {
				pos.read = applied // never committed: from the feed's end
			}
		}
		read := pos.read
		filter := meta.ChangeFilter{Kinds: []meta.Kind{meta.KindArtifact}}
		changes, n, err := tx.Changes(read, filter, batch)
		if errors.Is(err, meta.ErrCompacted) {
			changes, n, err = tx.Changes(tx.Horizon(), filter, batch)
		}
		if err != nil {
			return err
		}
		next = n
		for _, c := range changes {
			var a meta.Artifact
			if c.Deleted || json.Unmarshal(c.Value, &a) != nil || oci.SignatureArtifact(&a) {
				continue
			}
			repo, err := tx.Repo(a.RepositoryID)
			if err != nil || repo.Settings["signing_key"] == "" {
				continue
			}
			keyID := repo.Settings["signing_key"]
			sigs, _ := tx.Signatures(a.ID)
			if signedBy(sigs, keyID, a.Checksums.SHA256) {
				continue // a record changed (its properties): signed already
			}
			work = append(work, todo{a, keyID})
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	if len(work) == 0 {
		pos.read = max(next, pos.read)
		return next < applied, nil
	}
	var sigs []meta.Signature
	for _, w := range work {
		sig, err := s.cfg.Sign(ctx, &w.art, w.keyID)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			s.cfg.Log.Warn("an upload could not be signed", "artifact", w.art.ID, "path", w.art.Path, "key", w.keyID, "err", err)
			continue
		}
		sigs = append(sigs, sig)
	}
	if _, err := s.cfg.Commit.Apply(ctx, &meta.SignaturesAdd{Signatures: sigs, From: from, To: max(next, 1)}); err != nil {
		return false, err
	}
	pos.base, pos.read = max(next, 1), max(next, 1)
	return next < applied, nil
}

func signedBy(sigs []meta.Signature, keyID, sha256 string) bool {
	for _, s := range sigs {
		if s.KeyID == keyID && s.Digest == sha256 {
			return true
		}
	}
	return false
}
