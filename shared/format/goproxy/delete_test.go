package goproxy

import (
	"context"
	"testing"
	"time"

	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
	"github.com/depot-registry/depot/shared/meta"
)

// TestDeleteOldVersion: a module version stored before go.mod files were
// marked as companions (both files plain artifacts) still goes whole when
// either file is deleted, so @v/list never offers a version whose .mod is
// missing; another version stays.
func TestDeleteOldVersion(t *testing.T) {
	e := formattest.New(t)
	repo := e.Repo("mods", Name)
	now := time.Now().UTC()
	old := func(id, version, file string) meta.Artifact {
		return meta.Artifact{ID: id, RepositoryID: repo.ID, Path: "example.com/greet/@v/" + version + "." + file,
			PackageName: "example.com/greet", Version: version, Format: Name, Digest: "sha256:" + id, UploadedAt: now}
	}
	for _, a := range []meta.Artifact{old("z1", "v1.0.0", "zip"), old("m1", "v1.0.0", "mod"), old("z2", "v1.1.0", "zip"), old("m2", "v1.1.0", "mod")} {
		if _, err := e.Apply(context.Background(), &meta.ArtifactPut{Artifact: a}); err != nil {
			t.Fatal(err)
		}
	}
	env := &format.Env{Meta: e.Store, Now: time.Now}
	f, w := New(env), e.Writer(env)
	var mod *meta.Artifact
	_ = e.Store.View(func(tx *meta.Tx) error { var err error; mod, err = tx.Artifact("m2"); return err })
	if _, err := f.DeleteArtifact(context.Background(), &format.Request{Repo: repo, Principal: &auth.Principal{}}, w, mod); err != nil {
		t.Fatal(err)
	}
	_ = e.Store.View(func(tx *meta.Tx) error {
		for id, want := range map[string]bool{"z1": true, "m1": true, "z2": false, "m2": false} {
			if _, err := tx.Artifact(id); (err == nil) != want {
				t.Errorf("artifact %s there: %v, want %v", id, err == nil, want)
			}
		}
		return nil
	})
}
