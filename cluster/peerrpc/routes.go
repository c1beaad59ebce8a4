package peerrpc

import (
	"errors"
	"net/http"
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// The routes. Requests go to http://<the peer's raft address><path>.
const (
	// ApplyPath: the leader commits a command a follower decided.
	//
	//	POST  body: the command as meta.Encode wrote it (at most MaxCommand bytes)
	//	200   ApplyAnswer: the entry's index, and apply's refusal if any
	//	421   not the leader (any more): nothing was taken, ask again
	//	503   the leadership was lost with the entry in flight: outcome unknown
	//	400   not a command; 413 too large; 405 not a POST
	ApplyPath = "/v1/apply"

	// IndexPath: the last index the leader's store applied.
	//
	//	GET   200 IndexAnswer; 421 not the leader
	IndexPath = "/v1/index"

	// RemovePeerPath: the leader takes an origin out of the raft
	// configuration.
	//
	//	POST  body: the node id, plain text (at most 256 bytes)
	//	204   removed; 421 not the leader; 503 raft refused; 400 no id or not a POST
	RemovePeerPath = "/v1/remove-peer"

	// BlobsPath: the blobs an origin holds itself, by digest
	// (BlobsPath + "sha256:<hex>"); it never asks its own peers.
	//
	//	GET, HEAD  200 the bytes (Range honoured); 404 not here
	//	PUT        body: the blob's bytes, checked against the digest
	//	           201 stored; 204 it was here already (made recent);
	//	           400 bad digest or the bytes do not match it; 413 too
	//	           large; 507 no space; 500 anything else
	//	           (any method: 400 for a malformed digest; 405 another method)
	BlobsPath = "/v1/blobs/"

	// UploadsPath: an upload session the origin holds, by id
	// (UploadsPath + id); another origin given the id continues it here.
	//
	//	GET     200 UploadState
	//	PATCH   ?max=M&offset=N, body: the bytes to append; 200 UploadState
	//	POST    ?offset=N, body: JSON Checksums the blob must match; commit
	//	        (the blob made durable as any write here would); 200 BlobInfo
	//	DELETE  cancel; 200 UploadState
	//
	// offset is the size the caller saw: if the upload has another one
	// (another request got in between) the owner refuses with 409. Other
	// refusals: uploadRefusals; 405 another method; 500 anything else.
	UploadsPath = "/v1/uploads/"
)

// MaxCommand bounds a forwarded command: entries carry digests and
// metadata, never bytes.
const MaxCommand = 64 << 20

// maxNodeID bounds the body of a remove-peer request.
const maxNodeID = 256

// ApplyAnswer is the leader's answer to an apply: the entry's index, and
// the command's refusal when apply refused it (meta's sentinel with its
// message, so the follower sees what the leader's store returned).
type ApplyAnswer struct {
	Index uint64          `json:"index"`
	Err   *meta.WireError `json:"error,omitempty"`
}

// IndexAnswer is the leader's answer on IndexPath (an ApplyAnswer without
// error: the shape the two routes have always shared).
type IndexAnswer struct {
	Index uint64 `json:"index"`
}

// UploadState is an upload as the origin holding it reports it.
type UploadState struct {
	Label   []byte    `json:"label"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// AppendRequest is the query of a PATCH on UploadsPath; its body is the
// bytes.
type AppendRequest struct {
	Offset int64 // the size the caller saw
	Max    int64 // the upload's limit (0: none), as blob.Upload.Append takes it
}

// CommitRequest is a POST on UploadsPath: Offset in the query, Expect the
// JSON body.
type CommitRequest struct {
	Offset int64
	Expect Checksums
}

// Checksums are blob.Checksums as they travel (declared here so that a
// change to blob's type cannot change the wire).
type Checksums struct {
	MD5    string `json:"md5"`
	SHA1   string `json:"sha1"`
	SHA256 string `json:"sha256"`
	SHA512 string `json:"sha512,omitempty"`
}

// BlobInfo is a committed blob, the answer to a commit: blob.Info under
// the field names it has always had on the wire.
type BlobInfo struct {
	Digest    string    `json:"Digest"`
	Size      int64     `json:"Size"`
	Checksums Checksums `json:"Checksums"`
}

// WireChecksums and Checksums.Blob convert between the two.
func WireChecksums(c blob.Checksums) Checksums {
	return Checksums{MD5: c.MD5, SHA1: c.SHA1, SHA256: c.SHA256, SHA512: c.SHA512}
}

// Blob is c as blob.Checksums.
func (c Checksums) Blob() blob.Checksums {
	return blob.Checksums{MD5: c.MD5, SHA1: c.SHA1, SHA256: c.SHA256, SHA512: c.SHA512}
}

// WireInfo is info as it travels.
func WireInfo(info blob.Info) BlobInfo {
	return BlobInfo{Digest: info.Digest, Size: info.Size, Checksums: WireChecksums(info.Checksums)}
}

// Blob is i as blob.Info.
func (i BlobInfo) Blob() blob.Info {
	return blob.Info{Digest: i.Digest, Size: i.Size, Checksums: i.Checksums.Blob()}
}

var (
	// ErrNotSent means no connection to the peer could be made: the
	// request was not sent, so sending it again cannot do it twice.
	ErrNotSent = errors.New("peerrpc: no connection to the peer")
	// ErrNotLeader is 421 on the leader's routes: the node asked does not
	// lead (any more) and took nothing.
	ErrNotLeader = errors.New("peerrpc: not the leader")
	// ErrUploadChanged is 409 on UploadsPath: the upload's size is not the
	// offset the caller saw (another request got in between).
	ErrUploadChanged = errors.New("the upload was changed by another request at the same time")
)

// BadRequest is a request the server cannot read: 400 with its text.
type BadRequest string

func (e BadRequest) Error() string { return string(e) }

// A refusal is a store's error and the status it travels as.
type refusal struct {
	err    error
	status int
}

// uploadRefusals are the upload owner's refusals on UploadsPath, both
// ways (409 is ErrUploadChanged, apart: it is no store's error).
var uploadRefusals = []refusal{
	{blob.ErrUploadUnknown, http.StatusNotFound},
	{blob.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{blob.ErrDigestMismatch, http.StatusUnprocessableEntity},
	{blob.ErrNoSpace, http.StatusInsufficientStorage},
	{blob.ErrUnreplicated, http.StatusServiceUnavailable},
}

// pushRefusals are the refusals of a PUT on BlobsPath (the pusher only
// reports them).
var pushRefusals = []refusal{
	{blob.ErrInvalidDigest, http.StatusBadRequest},
	{blob.ErrDigestMismatch, http.StatusBadRequest},
	{blob.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{blob.ErrNoSpace, http.StatusInsufficientStorage},
}

// statusOf is the status err travels as, by table; 500 when it is none
// of them.
func statusOf(err error, table []refusal) int {
	for _, r := range table {
		if errors.Is(err, r.err) {
			return r.status
		}
	}
	return http.StatusInternalServerError
}
