package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/depot-registry/depot/shared/meta"
)

// fakeHost answers the manifest it is given for any module; a module
// that is not "wasm" does not load.
type fakeHost struct{ man abi.Manifest }

func (h *fakeHost) Inspect(_ context.Context, wasm []byte) (abi.Manifest, error) {
	if string(wasm) != "wasm" {
		return abi.Manifest{}, errors.New("not a WebAssembly module")
	}
	return h.man, nil
}
func (h *fakeHost) FormatOf(context.Context, string) format.Format { return nil }
func (h *fakeHost) LoadError(context.Context, string) error        { return nil }
func (h *fakeHost) MaxModule() int                                 { return 16 }

// TestInstallPlugin: only administrators install; a module that does not
// load, one too large, one that claims a built-in format, a built-in
// prefix or one of the registry's own is refused; an installed plugin is
// listed with its module, upgraded by installing its id again, its
// format known to the API, and uninstalled.
func TestInstallPlugin(t *testing.T) {
	e, a, admin := newApp(t)
	a.Blobs = e.Blobs
	host := &fakeHost{}
	a.PluginHost = host
	ctx := t.Context()
	user := &auth.Principal{UserID: "u", Username: "ann", Role: meta.RoleUser}
	good := abi.Manifest{ID: "tf", Name: "Terraform", Version: "1.0.0", Format: "terraform", Prefix: "/terraform"}
	install := func(p *auth.Principal, m abi.Manifest, body string) error {
		host.man = m
		_, _, err := a.InstallPlugin(ctx, p, strings.NewReader(body))
		return err
	}
	if err := install(user, good, "wasm"); code(err) != apierr.Forbidden {
		t.Fatalf("a user installing: %v", err)
	}
	if err := install(admin, good, "not wasm"); code(err) != apierr.ValidationFailed {
		t.Fatalf("a module that does not load: %v", err)
	}
	if err := install(admin, good, strings.Repeat("w", 17)); code(err) != apierr.PayloadTooLarge {
		t.Fatalf("a module too large: %v", err)
	}
	for _, m := range []abi.Manifest{
		{ID: "npm", Name: "n", Version: "1", Format: "npm2", Prefix: "/npm2"}, // a built-in's id
		{ID: "x", Name: "n", Version: "1", Format: "pypi", Prefix: "/x"},      // a built-in format
		{ID: "x", Name: "n", Version: "1", Format: "x", Prefix: "/maven2"},    // a built-in prefix
		{ID: "x", Name: "n", Version: "1", Format: "x", Prefix: "/api"},       // the registry's own
		{ID: "x", Name: "n", Version: "1", Format: "x", Prefix: "/v2"},        // docker's registry API
	} {
		if err := install(admin, m, "wasm"); code(err) != apierr.Conflict {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	if err := install(admin, good, "wasm"); err != nil {
		t.Fatal(err)
	}
	up := good
	up.Version = "1.1.0"
	if err := install(admin, up, "wasm"); err != nil {
		t.Fatalf("an upgrade: %v", err)
	}
	ps, err := a.Plugins(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var tf *app.Plugin
	for i := range ps {
		if ps[i].ID == "tf" {
			tf = &ps[i]
		}
	}
	if tf == nil || tf.Builtin || tf.Version != "1.1.0" || tf.Module == nil || !strings.HasPrefix(tf.Module.Digest, "sha256:") || tf.InstalledBy != "root" {
		t.Fatalf("listed: %+v", tf)
	}
	if !slices.Contains(a.ServedFormats(), "terraform") {
		t.Fatalf("served formats: %v", a.ServedFormats())
	}
	if _, err := a.ListRepositories(ctx, admin, app.RepoFilter{Format: "terraform", Page: app.DefaultPage}); err != nil {
		t.Fatalf("listing repositories of the plugin's format: %v", err)
	}
	if _, err := a.DeletePlugin(ctx, admin, "tf"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeletePlugin(ctx, admin, "tf"); code(err) != apierr.NotFound {
		t.Fatalf("uninstalling again: %v", err)
	}
	if _, err := a.ListRepositories(ctx, admin, app.RepoFilter{Format: "terraform", Page: app.DefaultPage}); code(err) != apierr.ValidationFailed {
		t.Fatalf("the format of an uninstalled plugin: %v", err)
	}
}
