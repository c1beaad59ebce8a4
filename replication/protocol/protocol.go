// Package protocol is what edge nodes and origins say to each other,
// declared once for both sides: the routes under /api/v1/edge-nodes/:id/
// (Path, the Op names), the messages each carries, and the edge's Client.
// The origin's handlers (origin/api) decode the same types.
//
// Versions. An edge sends the protocol version it speaks in
// X-Depot-Protocol (Version); an origin refuses a newer one than its
// own with 400, saying to upgrade the origins first (a request without
// the header is version 1). Within a version messages change only by
// adding fields, which older readers ignore, and anything a node must
// not be sent unless it can use it is asked for by the reader (the
// record kinds of a feed read, FeedQuery.Kinds). A change that cannot
// be made that way is a new Version, and origins answer the older one
// as long as edges may speak it.
package protocol

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Version is the protocol version this build speaks.
const Version = 1

// VersionHeader carries the version a request speaks.
const VersionHeader = "X-Depot-Protocol"

// The operations of a node, each a route under Path(id, op).
const (
	OpFeed      = "feed"      // GET: FeedQuery -> Page
	OpHeartbeat = "heartbeat" // POST: Report -> Assignment
	OpEvents    = "events"    // POST: Events -> EventsAnswer
	OpVouch     = "vouch"     // POST: VouchRequest -> Vouch
	OpPassword  = "password"  // POST: PasswordCheck -> PasswordVerdict
	OpBlobs     = "blobs"     // GET .../blobs/<digest>: the blob (Range honoured)
)

// Path is the route of a node's operation, as an origin serves it.
func Path(nodeID, op string) string { return "/api/v1/edge-nodes/" + url.PathEscape(nodeID) + "/" + op }

// IsQuestion reports whether path is that of an operation that is a POST
// (its question in the body) but changes nothing at the origin: OpVouch,
// OpPassword.
func IsQuestion(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v1/edge-nodes/")
	if !ok {
		return false
	}
	_, op, _ := strings.Cut(rest, "/")
	return op == OpVouch || op == OpPassword
}

// CheckVersion refuses a request in a newer version of the protocol than
// this build speaks.
func CheckVersion(h http.Header) error {
	raw := h.Get(VersionHeader)
	if raw == "" {
		return nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < 1 {
		return fmt.Errorf("%s must be a protocol version number", VersionHeader)
	}
	if v > Version {
		return fmt.Errorf("this origin speaks the edge protocol up to version %d, the node version %d: upgrade the origins before the edges", Version, v)
	}
	return nil
}
