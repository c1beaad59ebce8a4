// Package npm drives a real origin with the real npm CLI: publish (plain
// and scoped), install, view, dist-tag, deprecate, unpublish, search,
// whoami and ping, with token and Basic credentials, plus HTTP-level
// tests of the error and authorization paths. Every npm run has its own
// HOME and cache, and a .npmrc that pins the registry to the test origin.
package npm
