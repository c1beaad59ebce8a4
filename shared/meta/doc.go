// Package meta holds Depot's metadata: the domain types, the versioned
// commands that change them, and the bbolt store that applies those commands.
//
// Every mutation is a Command applied through Raft; Apply is deterministic
// (ids and timestamps travel in the command, iteration is in key order), so
// every replica that applies the same log holds the same bytes. Readers use
// View for a consistent snapshot of the whole store.
package meta
