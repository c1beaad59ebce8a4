package peerrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// Leader is an origin's side of the leader's routes (ApplyPath,
// IndexPath, RemovePeerPath). ErrNotLeader from any method is 421.
type Leader interface {
	// Apply commits cmd, an encoded command. A BadRequest is 400; any
	// other error 503 (the entry's fate is unknown).
	Apply(ctx context.Context, cmd []byte) (ApplyAnswer, error)
	// Index is the last index this node's store applied.
	Index(ctx context.Context) (uint64, error)
	// RemovePeer takes node id out of the raft configuration; an error
	// other than ErrNotLeader is 503.
	RemovePeer(ctx context.Context, id string) error
}

// Blobs is an origin's side of BlobsPath.
type Blobs interface {
	// OpenHere opens a blob this origin holds, never asking its peers.
	OpenHere(ctx context.Context, digest string) (blob.File, error)
	// Take stores the blob digest a peer pushes, checked against the
	// digest; created is false when it was here already.
	Take(ctx context.Context, digest string, body io.Reader) (created bool, err error)
}

// Uploads is an origin's side of UploadsPath.
type Uploads interface {
	// ResumeHere continues an upload this origin holds (never another
	// origin's); its Commit makes the blob as durable as a write here.
	ResumeHere(ctx context.Context, id string) (blob.Upload, error)
}

// Services are what an origin answers on the peers' RPC; the routes of a
// nil one answer 404.
type Services struct {
	Leader  Leader
	Blobs   Blobs
	Uploads Uploads
}

// Handler serves s on the routes of routes.go.
func Handler(s Services) http.Handler {
	mux := http.NewServeMux()
	if s.Leader != nil {
		mux.Handle(ApplyPath, applyHandler(s.Leader))
		mux.Handle(IndexPath, indexHandler(s.Leader))
		mux.Handle(RemovePeerPath, removePeerHandler(s.Leader))
	}
	if s.Blobs != nil {
		mux.Handle(BlobsPath, blobHandler(s.Blobs))
	}
	if s.Uploads != nil {
		mux.Handle(UploadsPath, uploadHandler(s.Uploads))
	}
	return mux
}

func answerJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func applyHandler(l Leader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCommand))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		a, err := l.Apply(r.Context(), data)
		var bad BadRequest
		switch {
		case errors.Is(err, ErrNotLeader):
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
		case errors.As(err, &bad):
			http.Error(w, bad.Error(), http.StatusBadRequest)
		case err != nil: // the leadership was lost with the entry in flight, say
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			answerJSON(w, a)
		}
	})
}

func indexHandler(l Leader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idx, err := l.Index(r.Context())
		if err != nil {
			http.Error(w, "not the leader", http.StatusMisdirectedRequest)
			return
		}
		answerJSON(w, IndexAnswer{Index: idx})
	})
}

func removePeerHandler(l Leader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxNodeID))
		if err != nil || r.Method != http.MethodPost || len(id) == 0 {
			http.Error(w, "POST a node id", http.StatusBadRequest)
			return
		}
		if err := l.RemovePeer(r.Context(), string(id)); err != nil {
			status := http.StatusServiceUnavailable
			if errors.Is(err, ErrNotLeader) {
				status = http.StatusMisdirectedRequest
			}
			http.Error(w, err.Error(), status)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func blobHandler(b Blobs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		digest := strings.TrimPrefix(r.URL.Path, BlobsPath)
		if _, _, err := blob.ParseDigest(digest); err != nil {
			http.Error(w, "bad digest", http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPut:
			created, err := b.Take(r.Context(), digest, r.Body)
			switch {
			case err != nil:
				http.Error(w, err.Error(), statusOf(err, pushRefusals))
			case created:
				w.WriteHeader(http.StatusCreated)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
			return
		default:
			http.Error(w, "GET, HEAD or PUT", http.StatusMethodNotAllowed)
			return
		}
		f, err := b.OpenHere(r.Context(), digest)
		if errors.Is(err, blob.ErrNotFound) {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", time.Time{}, f)
	})
}

// maxExpect bounds a commit's JSON body.
const maxExpect = 4 << 10

func uploadHandler(ups Uploads) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(err error) { http.Error(w, err.Error(), uploadStatus(err)) }
		u, err := ups.ResumeHere(r.Context(), strings.TrimPrefix(r.URL.Path, UploadsPath))
		if err != nil {
			fail(err)
			return
		}
		q := r.URL.Query()
		if r.Method != http.MethodGet && r.Method != http.MethodDelete {
			if off, err := strconv.ParseInt(q.Get("offset"), 10, 64); err != nil || off != u.Size() {
				fail(ErrUploadChanged)
				return
			}
		}
		var out any
		switch r.Method {
		case http.MethodGet:
		case http.MethodPatch:
			max, _ := strconv.ParseInt(q.Get("max"), 10, 64)
			_, err = u.Append(r.Context(), r.Body, max)
		case http.MethodPost:
			var expect Checksums
			if err = json.NewDecoder(io.LimitReader(r.Body, maxExpect)).Decode(&expect); err == nil {
				var info blob.Info
				if info, err = u.Commit(r.Context(), expect.Blob()); err == nil {
					out = WireInfo(info)
				}
			}
		case http.MethodDelete:
			err = u.Cancel(r.Context())
		default:
			http.Error(w, "GET, PATCH, POST or DELETE", http.StatusMethodNotAllowed)
			return
		}
		if err != nil {
			fail(err)
			return
		}
		if out == nil {
			out = UploadState{Label: u.Label(), Size: u.Size(), ModTime: u.ModTime()}
		}
		answerJSON(w, out)
	})
}

// uploadStatus is the status an upload's refusal travels as.
func uploadStatus(err error) int {
	if errors.Is(err, ErrUploadChanged) {
		return http.StatusConflict
	}
	return statusOf(err, uploadRefusals)
}
