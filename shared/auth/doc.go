// Package auth holds the credential primitives of the registry: argon2id
// password hashing, HS256 session JWTs, opaque "dpt_" API tokens, repository
// scopes and a small cache for verified Basic-auth credentials.
//
// The package is deliberately free of storage and HTTP concerns so every
// primitive can be tested in isolation; the layers that authenticate requests
// combine them.
package auth
