// Package clienttest drives a real origin with the real package-manager
// clients (crane, skopeo, regctl, npm, pip, twine, mvn...), one file per
// format. A test skips when its client is missing, unless
// DEPOT_REQUIRE_CLIENTS is set (CI sets it): then a missing client fails.
package clienttest
