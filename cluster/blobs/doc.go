// Package blobs replicates an origin's blobs across the cluster. It
// decorates the origin's own store (any blob.Store whose blob.Ingester
// commits into it: the disk, later an object store) and is a blob.Store
// and a blob.Ingester itself, so the formats, the API and garbage
// collection use it as they would the store underneath:
//
//   - Put, and an upload's Commit, store the blob here, then push it over
//     the peers' RPC to the origins a Placement names until a quorum of
//     them holds it; only then do they return, so the record the caller
//     commits next never names a blob the loss of a minority could take.
//     The origin that took the write counts when placement names it.
//   - Open of a blob that is not here fetches it from a peer that holds
//     it (those placement names first), checks it against its digest and
//     keeps it: one fetch per digest however many readers ask.
//   - Resume of an upload id another origin handed out continues the
//     upload there over the peers' RPC (upload ids start with a tag of
//     their origin, UploadIDPrefix).
//   - Repair brings the referenced blobs placement puts here and that this
//     origin lacks (it was down, or joined later): all of them on its
//     first pass, when the voters change and every hour, those referenced since the
//     pass before otherwise; a copy placement does not put here is
//     dropped once every origin it names holds the blob.
//
// Stat, Keep, Delete, Walk, Sweep, Uploads and SweepUploads are the local
// store's: garbage collection and the checks writers make are about this
// origin's disk. The peers' side of the RPC is Server.
//
// Everything the package needs of the origin is an argument (Config): who
// the origins are (Membership), the peers' RPC client, the referrer
// index, the clock and the logger; it never sees raft's state machine or
// the metadata store.
package blobs
