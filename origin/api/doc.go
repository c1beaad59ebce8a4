// Package api serves the REST API under /api/v1: one file per resource,
// handlers that return errors, and one place (server.go) that turns
// credentials into a Principal, enforces the password-change gate, demo
// mode, rate limits and the audit log, and renders errors with apierr.
package api
