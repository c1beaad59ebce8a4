package oci

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Upload sessions live on the node that started them, under
// ScratchDir/oci/uploads/<id>/ as "data" (the bytes so far) and
// "session.json" (whose session it is). They are not metadata: a session
// becomes a blob, and then one KV command links it, only when it is
// closed with a digest that matches.

type session struct {
	ID      string `json:"id"`
	RepoID  string `json:"repo_id"`
	Name    string `json:"name"`  // full OCI name it was started under
	Owner   string `json:"owner"` // user id; only they may continue it
	Started string `json:"started"`
	dir     string
	size    int64
}

func (f *Format) uploadsDir() string { return filepath.Join(f.d.ScratchDir, "oci", "uploads") }

func newUploadID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sweep drops sessions idle for longer than SessionTTL and reports how
// many remain, in all and of owner, so abandoned uploads neither fill the
// disk nor the limits.
func (f *Format) sweep(owner string) (live, mine int, err error) {
	dir := f.uploadsDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	now := f.d.Time()
	for _, e := range entries {
		if !e.IsDir() || !ValidUploadID(e.Name()) {
			continue
		}
		// A session being created may not have its data file yet: judge
		// it by the directory then.
		fi, err := os.Stat(filepath.Join(dir, e.Name(), "data"))
		if errors.Is(err, fs.ErrNotExist) {
			fi, err = e.Info()
		}
		if err != nil {
			continue // gone meanwhile
		}
		if now.Sub(fi.ModTime()) <= SessionTTL {
			live++
			if raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "session.json")); err == nil {
				var s session
				if json.Unmarshal(raw, &s) == nil && s.Owner == owner {
					mine++
				}
			}
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	return live, mine, nil
}

// createSession starts an empty session.
func (f *Format) createSession(repoID, name, owner string) (*session, error) {
	live, mine, err := f.sweep(owner)
	if err != nil {
		return nil, err
	}
	if live >= MaxSessions || mine >= MaxSessionsPerUser {
		return nil, errf(http.StatusTooManyRequests, codeTooManyRequests, "too many uploads in progress; retry later")
	}
	s := &session{ID: newUploadID(), RepoID: repoID, Name: name, Owner: owner, Started: f.d.Time().UTC().Format(time.RFC3339)}
	s.dir = filepath.Join(f.uploadsDir(), s.ID)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	meta, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(s.dir, "session.json"), meta, 0o600); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "data"), nil, 0o600); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
}

// openSession finds a live session of name started by owner; anything
// else is BLOB_UPLOAD_UNKNOWN, so ids of other people's uploads reveal
// nothing.
func (f *Format) openSession(id, repoID, name, owner string) (*session, error) {
	unknown := errf(http.StatusNotFound, codeBlobUploadUnknown, "upload %s not found", id)
	if !ValidUploadID(id) {
		return nil, unknown
	}
	dir := filepath.Join(f.uploadsDir(), id)
	raw, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		return nil, unknown
	}
	var s session
	if json.Unmarshal(raw, &s) != nil || s.ID != id || s.RepoID != repoID || s.Name != name || s.Owner != owner {
		return nil, unknown
	}
	fi, err := os.Stat(filepath.Join(dir, "data"))
	if err != nil || f.d.Time().Sub(fi.ModTime()) > SessionTTL {
		return nil, unknown
	}
	s.dir, s.size = dir, fi.Size()
	return &s, nil
}

// appendData adds body to the session, at most max bytes in all (0 =
// unlimited). On any failure the data is cut back, so a failed chunk can
// be retried.
func (s *session) appendData(body io.Reader, max int64) (int64, error) {
	fh, err := os.OpenFile(filepath.Join(s.dir, "data"), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	src := body
	if max > 0 {
		src = io.LimitReader(body, max-s.size+1)
	}
	n, err := io.Copy(fh, src)
	if err == nil && max > 0 && s.size+n > max {
		err = errf(http.StatusRequestEntityTooLarge, codeSizeInvalid, "blob exceeds the upload limit of %d bytes", max)
	}
	if err != nil {
		if terr := fh.Truncate(s.size); terr != nil {
			return 0, fmt.Errorf("oci: truncating failed chunk: %w", terr)
		}
		return 0, err
	}
	s.size += n
	return n, nil
}

func (s *session) truncate(size int64) error {
	if err := os.Truncate(filepath.Join(s.dir, "data"), size); err != nil {
		return err
	}
	s.size = size
	return nil
}

func (s *session) open() (*os.File, error) { return os.Open(filepath.Join(s.dir, "data")) }

func (s *session) remove() { _ = os.RemoveAll(s.dir) }

// rangeHeader is the spec's inclusive "0-<last>", without "bytes=".
func (s *session) rangeHeader() string {
	if s.size == 0 {
		return "0-0"
	}
	return fmt.Sprintf("0-%d", s.size-1)
}
