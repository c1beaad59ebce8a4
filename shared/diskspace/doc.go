// Package diskspace watches the free space of the filesystem that holds
// the data directory. A Guard refuses new uploads before the disk is full,
// so the raft log and the metadata store, which share that disk, keep the
// room they need; it also remembers a write that hit a full disk, and
// reports both to the health check.
package diskspace
