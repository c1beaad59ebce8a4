// Package peerrpc is the origins' RPC to one another: HTTP served on the
// raft port over connections authenticated with the cluster key
// (raftnode.RPCListener and DialRPC).
//
// routes.go declares every route once: its path and method, what it
// takes and answers (typed), and the status each refusal travels as. The
// client (Client) and the server (Handler, over the Leader, Blobs and
// Uploads services) are both written from those declarations, so the two
// sides cannot drift apart; the leader's forwarding (cluster/leader) and
// blob replication (cluster/blobs) supply the services and use the
// client, and never build a request or an answer themselves.
//
// The wire shapes are the ones origins have always sent: during a
// rolling upgrade old and new origins talk, so a route or a field is
// only ever added, never renamed or reshaped. wire_test.go pins them.
package peerrpc
