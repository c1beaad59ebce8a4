//go:build depot_legacy_build

package meta

// A build with the depot_legacy_build tag stands for an older Depot in
// the rolling-upgrade test (cmd/depot TestRollingUpgrade): it knows every
// command but CmdWebhookCreate, as an older build would not know a
// command added after it.
var _ = forget(CmdWebhookCreate)
