package meta

import (
	"errors"
	"testing"
	"time"
)

func TestInstalledPlugins(t *testing.T) {
	l := &testLog{t: t, s: open(t)}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tf := InstalledPlugin{ID: "terraform", Name: "Terraform", Version: "1.0.0", Format: "terraform", Prefix: "/terraform",
		Roots: []string{"/.well-known/terraform.json"}, Digest: "sha256:aa", Size: 10, InstalledAt: t0}
	l.must(&PluginInstall{Plugin: tf})
	referenced := func(d string) (ok bool) {
		_ = l.s.View(func(tx *Tx) error { ok = tx.Referenced(d); return nil })
		return ok
	}
	if !referenced("sha256:aa") {
		t.Fatal("the module's blob is not kept")
	}
	if err := l.apply(&PluginInstall{Plugin: tf}); !errors.Is(err, ErrConflict) {
		t.Fatalf("installing it again: %v", err)
	}
	other := tf
	other.ID, other.Prefix, other.Roots = "tf2", "/tf2", nil
	if err := l.apply(&PluginInstall{Plugin: other}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second plugin of the same format: %v", err)
	}
	other.Format, other.Roots = "tf2", []string{"/.well-known/terraform.json"}
	if err := l.apply(&PluginInstall{Plugin: other}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second plugin of the same root path: %v", err)
	}
	up := tf
	up.Version, up.Digest = "1.1.0", "sha256:bb"
	if err := l.apply(&PluginInstall{Plugin: up, Replaces: "sha256:zz"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an upgrade of what was not read: %v", err)
	}
	l.must(&PluginInstall{Plugin: up, Replaces: "sha256:aa"})
	if referenced("sha256:aa") || !referenced("sha256:bb") {
		t.Fatal("an upgrade keeps the new module's blob, not the old one's")
	}
	l.must(&PluginSet{State: PluginState{ID: "terraform", Enabled: false, UpdatedAt: t0}})
	l.must(&PluginUninstall{ID: "terraform"})
	_ = l.s.View(func(tx *Tx) error {
		ps, _ := tx.InstalledPlugins()
		st, _ := tx.PluginStates()
		if len(ps) != 0 || len(st) != 0 || tx.Referenced("sha256:bb") {
			t.Errorf("after uninstalling: %v, switches %v, blob kept %v", ps, st, tx.Referenced("sha256:bb"))
		}
		return nil
	})
	if err := l.apply(&PluginUninstall{ID: "terraform"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("uninstalling it again: %v", err)
	}
}
