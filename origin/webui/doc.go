// Package webui is Depot's web interface: pages rendered on the origin
// from html/template, embedded in the binary, calling the application
// layer (origin/app) with the same use cases and access rules as the
// REST API. Every page works without script; a little hand-written
// JavaScript (static/depot.js) adds copy buttons, confirmations and
// the live parts.
//
// Pages live under /ui/ (Prefix). The browser's session is the API's
// login session: its access and refresh tokens in HttpOnly cookies
// scoped to /ui/ (session.go). Writes are POST forms carrying a token
// MACed with the session id, and cross-site requests are refused
// (csrf.go). Answers carry a strict Content-Security-Policy: scripts,
// styles and images from this origin only, no inline script or style.
//
// Each feature adds its pages with a file of handlers, its templates,
// and an entry in the navigation (nav.go).
package webui
