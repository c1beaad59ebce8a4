package origin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// An upload that arrives in several requests (an OCI chunked upload) keeps
// its bytes on the origin that started it; behind a load balancer its
// next requests may reach any origin. Upload ids start with a tag of the
// origin that handed them out (uploadTag), so an origin given another's
// id continues the upload there, over the peers' RPC on the raft port:
//
//	GET    /v1/uploads/<id>                   its label, size and time
//	PATCH  /v1/uploads/<id>?offset=N&max=M    append the body
//	POST   /v1/uploads/<id>?offset=N          commit (JSON blob.Checksums)
//	DELETE /v1/uploads/<id>                   cancel
//
// offset is the size the caller saw: the owner refuses the request if the
// upload has changed since (another request got in between), as its own
// store does for two values of one upload. The owner's commit puts the
// blob on a quorum before it answers. When the owner is gone (dead,
// removed, unreachable) the upload is unknown: the client starts over, and
// the bytes that were on the owner are swept there like any abandoned
// upload.

// UploadsPath is the peers' RPC route of upload sessions.
const UploadsPath = "/v1/uploads/"

// uploadTag is the prefix of the upload ids origin nodeID hands out.
func uploadTag(nodeID string) string {
	sum := sha256.Sum256([]byte("depot upload id\x00" + nodeID))
	return hex.EncodeToString(sum[:4])
}

// remoteUploadWait bounds one call to the owner apart from the body's
// transfer: an origin that does not answer in that time is taken as gone.
const remoteUploadWait = 10 * time.Second

// resumeRemote continues upload id on the origin whose tag it carries.
func (o *Origin) resumeRemote(ctx context.Context, id string) (blob.Upload, error) {
	unknown := fmt.Errorf("%w: %q", blob.ErrUploadUnknown, id)
	servers, err := o.node.Servers()
	if err != nil || len(id) < 8 {
		return nil, unknown
	}
	for _, s := range servers {
		if s.ID == o.nodeID || uploadTag(s.ID) != id[:8] {
			continue
		}
		u := &remoteUpload{o: o, addr: s.Addr, id: id}
		if err := u.call(ctx, http.MethodGet, nil, nil, u); err != nil {
			if !errors.Is(err, blob.ErrUploadUnknown) {
				o.log.Warn("an upload's origin did not answer; the upload is unknown", "upload", id, "origin", s.ID, "err", err)
			}
			return nil, unknown
		}
		return u, nil
	}
	return nil, unknown
}

// remoteUpload is an upload held by another origin.
type remoteUpload struct {
	o    *Origin
	addr string
	id   string
	// As the owner last reported it.
	LabelBytes []byte    `json:"label"`
	Bytes      int64     `json:"size"`
	Mod        time.Time `json:"mod_time"`
}

func (u *remoteUpload) ID() string         { return u.id }
func (u *remoteUpload) Label() []byte      { return u.LabelBytes }
func (u *remoteUpload) Size() int64        { return u.Bytes }
func (u *remoteUpload) ModTime() time.Time { return u.Mod }

func (u *remoteUpload) Append(ctx context.Context, r io.Reader, max int64) (int64, error) {
	before := u.Bytes
	q := url.Values{"offset": {strconv.FormatInt(before, 10)}, "max": {strconv.FormatInt(max, 10)}}
	if err := u.call(ctx, http.MethodPatch, q, r, u); err != nil {
		return 0, err
	}
	return u.Bytes - before, nil
}

func (u *remoteUpload) Commit(ctx context.Context, expect blob.Checksums) (blob.Info, error) {
	body, err := json.Marshal(expect)
	if err != nil {
		return blob.Info{}, err
	}
	var info blob.Info
	q := url.Values{"offset": {strconv.FormatInt(u.Bytes, 10)}}
	err = u.call(ctx, http.MethodPost, q, strings.NewReader(string(body)), &info)
	return info, err
}

func (u *remoteUpload) Cancel(ctx context.Context) error {
	return u.call(ctx, http.MethodDelete, nil, nil, nil)
}

// call makes one request to the owner and decodes its JSON answer into
// out; the owner's refusals come back as the store's errors. Only a body
// may take longer than remoteUploadWait.
func (u *remoteUpload) call(ctx context.Context, method string, q url.Values, body io.Reader, out any) error {
	if body == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, remoteUploadWait)
		defer cancel()
	}
	target := "http://" + u.addr + UploadsPath + u.id
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	resp, err := u.o.peers.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Err != nil {
			return ue.Err // a body that failed to read says why (a chunk of the wrong size)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return uploadErr(resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out)
}

// The owner's refusals on the wire, both ways.
var uploadStatuses = []struct {
	err    error
	status int
}{
	{blob.ErrUploadUnknown, http.StatusNotFound},
	{blob.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{blob.ErrDigestMismatch, http.StatusUnprocessableEntity},
	{blob.ErrNoSpace, http.StatusInsufficientStorage},
	{blob.ErrUnreplicated, http.StatusServiceUnavailable},
}

var errUploadChanged = errors.New("the upload was changed by another request at the same time")

func uploadErr(status int, msg string) error {
	for _, s := range uploadStatuses {
		if s.status == status {
			return fmt.Errorf("%w (on its origin: %s)", s.err, msg)
		}
	}
	if status == http.StatusConflict {
		return errUploadChanged
	}
	return fmt.Errorf("the upload's origin answered %d: %s", status, msg)
}

func uploadStatus(err error) int {
	for _, s := range uploadStatuses {
		if errors.Is(err, s.err) {
			return s.status
		}
	}
	if errors.Is(err, errUploadChanged) {
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// peerUploadHandler answers the peers on /v1/uploads/<id> for the uploads
// this origin holds.
func (o *Origin) peerUploadHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(err error) { http.Error(w, err.Error(), uploadStatus(err)) }
		u, err := o.blobs.Resume(r.Context(), strings.TrimPrefix(r.URL.Path, UploadsPath))
		if err != nil {
			fail(err)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodDelete {
			if off, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64); err != nil || off != u.Size() {
				fail(errUploadChanged)
				return
			}
		}
		var out any
		switch r.Method {
		case http.MethodGet:
		case http.MethodPatch:
			max, _ := strconv.ParseInt(r.URL.Query().Get("max"), 10, 64)
			_, err = u.Append(r.Context(), r.Body, max)
		case http.MethodPost:
			var expect blob.Checksums
			if err = json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&expect); err == nil {
				out, err = quorumUpload{u, o}.Commit(r.Context(), expect)
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
			out = remoteUpload{LabelBytes: u.Label(), Bytes: u.Size(), Mod: u.ModTime()}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
