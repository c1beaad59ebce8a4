package oci_test

import (
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestRetention: an image repository's rule keeping the newest version
// untags old tags and deletes untagged manifests, never the tag latest
// (nor the other tags of its image), an index's platform images while
// the index is there, or the newest push; a manifest that loses its last
// tag keeps its push's age, so the next runs take it, then the images
// of an index once the index went. Clients see exactly that.
func TestRetention(t *testing.T) {
	t.Parallel()
	e := start(t)
	repoID := e.CreateRepo("images", "docker", false)
	alice := writer(e, "alice", repoID)
	auth := remote.WithAuth(&authn.Basic{Username: alice.Name, Password: alice.Token})
	digestOf := func(img v1.Image) string {
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	push := func(ref string, img v1.Image) {
		t.Helper()
		if err := remote.Write(parse(t, e, ref), img, auth); err != nil {
			t.Fatal(err)
		}
	}
	img := func() v1.Image {
		i, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	one, two, three, loose, four := img(), img(), img(), img(), img()
	push("images/app:1", one)
	push("images/app:2", two)
	push("images/app:3", three)
	push("images/app:latest", three)
	push("images/app@"+digestOf(loose), loose)
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(parse(t, e, "images/app:multi"), idx, auth); err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	children := []string{im.Manifests[0].Digest.String(), im.Manifests[1].Digest.String()}
	slices.Sort(children)
	push("images/app:4", four)

	e.Do("PUT", "/api/v1/repositories/images", e.Admin, map[string]any{"retention": map[string]any{"keep_last": 1}}).Want(200)
	run := func(dry bool, want ...string) {
		t.Helper()
		var ans struct {
			Retention struct {
				Failed  int
				Errors  []string
				Deleted []struct{ Version string }
			}
		}
		path := "/api/v1/admin/cleanup"
		if dry {
			path += "?dry_run=true"
		}
		e.Do("POST", path, e.Admin, nil).Want(200).JSON(&ans)
		var got []string
		for _, d := range ans.Retention.Deleted {
			got = append(got, d.Version)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) || ans.Retention.Failed != 0 {
			t.Fatalf("dry run %v: deleted %v (failed %d: %v), want %v", dry, got, ans.Retention.Failed, ans.Retention.Errors, want)
		}
	}
	run(true, "1", "2", "multi", digestOf(loose))
	run(false, "1", "2", "multi", digestOf(loose))
	tags, err := remote.List(parse(t, e, "images/app:4").Context(), auth)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tags, []string{"3", "4", "latest"}) {
		t.Errorf("tags after the first run: %v", tags)
	}
	// The untagged manifests are as old as their pushes: the next run.
	run(false, digestOf(one), digestOf(two), idxDigest.String())
	// The index gone, its images go.
	run(false, children...)
	run(true)
	for ref, ok := range map[string]bool{"images/app:latest": true, "images/app:3": true, "images/app:4": true,
		"images/app@" + digestOf(one): false, "images/app@" + children[0]: false, "images/app@" + digestOf(loose): false} {
		_, err := remote.Head(parse(t, e, ref), auth)
		if (err == nil) != ok {
			t.Errorf("%s: err %v, want found %v", ref, err, ok)
		}
	}
}
