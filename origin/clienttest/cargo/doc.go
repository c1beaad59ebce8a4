// Package cargo drives a real origin serving the crates format with the
// real cargo: crates published to a private sparse registry (token from
// cargo's credential provider), a consumer crate built against them, yank
// and unyank, owners and search, against the origin and through an edge.
package cargo
