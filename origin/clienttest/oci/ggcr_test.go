package oci_test

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/depot-registry/depot/origin/clienttest"
	"github.com/depot-registry/depot/origin/origintest"
)

// go-containerregistry is the client library under crane (and, in its
// transport, close to docker's): driven in process against a real origin.

func parse(t *testing.T, e *origintest.Env, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(clienttest.HostPort(e)+"/"+s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wantCode fails unless err is a registry error with code.
func wantCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != status {
		t.Fatalf("want HTTP %d %s, got %v", status, code, err)
	}
	if code == "" {
		return
	}
	for _, d := range te.Errors {
		if string(d.Code) == code {
			return
		}
	}
	t.Fatalf("want code %s, got %v", code, err)
}

func TestGoClient(t *testing.T) {
	t.Parallel()
	e := start(t)
	imagesID := e.CreateRepo("images", "docker", false)
	mirrorID := e.CreateRepo("mirror", "docker", false)
	pubID := e.CreateRepo("pub", "docker", true)
	alice := writer(e, "alice", imagesID)
	e.Grant(mirrorID, alice.ID, false, "write", "delete")
	e.Grant(pubID, alice.ID, false, "write")
	// Both kinds of credential: the API token and the password.
	withToken := remote.WithAuth(&authn.Basic{Username: alice.Name, Password: alice.Token})
	withPassword := remote.WithAuth(&authn.Basic{Username: alice.Name, Password: alice.Password})

	img, err := random.Image(3000, 3)
	if err != nil {
		t.Fatal(err)
	}
	imgDigest, _ := img.Digest()

	t.Run("push pull and REST", func(t *testing.T) {
		e := e.For(t)
		ref := parse(t, e, "images/app:1.0")
		if err := remote.Write(ref, img, withToken); err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(ref, withPassword)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := got.Digest(); d != imgDigest {
			t.Fatalf("pulled digest %s, pushed %s", d, imgDigest)
		}
		want, _ := img.Layers()
		layers, err := got.Layers()
		if err != nil || len(layers) != len(want) {
			t.Fatalf("layers %d, %v", len(layers), err)
		}
		for i, l := range layers {
			rc, err := l.Compressed() // ggcr verifies the digest while reading
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			if size, _ := want[i].Size(); int64(len(b)) != size {
				t.Fatalf("layer %d: %d bytes, want %d", i, len(b), size)
			}
		}
		desc, err := remote.Head(ref, withToken)
		if err != nil || desc.Digest != imgDigest || desc.MediaType != types.DockerManifestSchema2 {
			t.Fatalf("HEAD: %+v %v", desc, err)
		}
		tags, err := remote.List(ref.Context(), withToken)
		if err != nil || !slices.Equal(tags, []string{"1.0"}) {
			t.Fatalf("tags %v %v", tags, err)
		}

		// REST: the tag is a version of package "app", with the manifest's
		// checksums and the image's size (manifest + config + layers).
		raw, _ := img.RawManifest()
		m, _ := img.Manifest()
		size := int64(len(raw)) + m.Config.Size
		for _, l := range m.Layers {
			size += l.Size
		}
		var pk struct {
			Packages []struct {
				Name          string `json:"name"`
				LatestVersion string `json:"latest_version"`
				VersionCount  int    `json:"version_count"`
			} `json:"packages"`
		}
		e.Do("GET", "/api/v1/packages?repository_id="+imagesID, alice.Token, nil).Want(200).JSON(&pk)
		if len(pk.Packages) != 1 || pk.Packages[0].Name != "app" || pk.Packages[0].LatestVersion != "1.0" || pk.Packages[0].VersionCount != 1 {
			t.Fatalf("packages %+v", pk)
		}
		var vs struct {
			Versions []struct {
				Version    string `json:"version"`
				ArtifactID string `json:"artifact_id"`
				SizeBytes  int64  `json:"size_bytes"`
			} `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/app/versions?repository_id="+imagesID, alice.Token, nil).Want(200).JSON(&vs)
		if len(vs.Versions) != 1 || vs.Versions[0].Version != "1.0" || vs.Versions[0].SizeBytes != size {
			t.Fatalf("versions %+v, want size %d", vs, size)
		}
		a := e.Do("GET", "/api/v1/artifacts/"+vs.Versions[0].ArtifactID, alice.Token, nil).Want(200).Map()
		sums, _ := a["checksums"].(map[string]any)
		if sums["sha256"] != imgDigest.Hex || sums["md5"] == "" || sums["sha1"] == "" || a["uploaded_by"] != "alice" ||
			a["size_bytes"] != float64(size) || a["package_name"] != "app" || a["version"] != "1.0" || a["format"] != "docker" {
			t.Fatalf("artifact %v", a)
		}
		if dl := e.Do("GET", "/api/v1/artifacts/"+vs.Versions[0].ArtifactID+"/download", alice.Token, nil).Want(200); string(dl.Body) != string(raw) {
			t.Fatalf("REST download is not the manifest: %s", dl.Body)
		}
		if n, s := e.RepoCounters(imagesID); n != 1 || s != size {
			t.Fatalf("repository counters %d/%d, want 1/%d", n, s, size)
		}
	})

	t.Run("index", func(t *testing.T) {
		e := e.For(t)
		idx, err := random.Index(1000, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref := parse(t, e, "images/multi:latest")
		if err := remote.WriteIndex(ref, idx, withToken); err != nil {
			t.Fatal(err)
		}
		got, err := remote.Index(ref, withToken)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := idx.Digest()
		if d, _ := got.Digest(); d != want {
			t.Fatalf("index digest %s, want %s", d, want)
		}
		im, _ := got.IndexManifest()
		for _, c := range im.Manifests {
			child, err := got.Image(c.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := child.Layers(); err != nil {
				t.Fatal(err)
			}
			if _, err := remote.Image(ref.Context().Digest(c.Digest.String()), withToken); err != nil {
				t.Fatalf("child by digest: %v", err)
			}
		}
		// The children were pushed by digest: untagged, they are versions
		// named by their digest.
		var vs struct {
			Versions []struct{ Version string } `json:"versions"`
		}
		e.Do("GET", "/api/v1/packages/multi/versions?repository_id="+imagesID, alice.Token, nil).Want(200).JSON(&vs)
		var names []string
		for _, v := range vs.Versions {
			names = append(names, v.Version)
		}
		slices.Sort(names)
		wantNames := []string{im.Manifests[0].Digest.String(), im.Manifests[1].Digest.String(), "latest"}
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Fatalf("versions %v, want %v", names, wantNames)
		}
	})

	t.Run("cross-repository mount", func(t *testing.T) {
		e := e.For(t)
		src, err := remote.Image(parse(t, e, "images/app:1.0"), withToken)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{base: http.DefaultTransport}
		if err := remote.Write(parse(t, e, "mirror/app:1.0"), src, withToken, remote.WithTransport(rec)); err != nil {
			t.Fatal(err)
		}
		mounted := 0
		for _, c := range rec.calls() {
			if strings.HasPrefix(c, "POST /v2/mirror/app/blobs/uploads/") && strings.Contains(c, "mount=") && strings.HasSuffix(c, "Created") {
				mounted++
			}
			if strings.HasPrefix(c, "PATCH ") {
				t.Fatalf("a layer was uploaded instead of mounted: %v", rec.calls())
			}
		}
		if mounted != 4 { // config and three layers
			t.Fatalf("%d mounts, want 4: %v", mounted, rec.calls())
		}
		if got, err := remote.Image(parse(t, e, "mirror/app:1.0"), withToken); err != nil {
			t.Fatal(err)
		} else if d, _ := got.Digest(); d != imgDigest {
			t.Fatalf("mirror digest %s", d)
		}
	})

	t.Run("referrers", func(t *testing.T) {
		e := e.For(t)
		subject := parse(t, e, "images/app:1.0")
		desc, err := remote.Head(subject, withToken)
		if err != nil {
			t.Fatal(err)
		}
		art := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), "application/vnd.example.sbom")
		art = mutate.Annotations(art, map[string]string{"org.example": "sbom-1"}).(v1.Image)
		art = mutate.Subject(art, *desc).(v1.Image)
		artDigest, _ := art.Digest()
		if err := remote.Write(subject.Context().Digest(artDigest.String()), art, withToken); err != nil {
			t.Fatal(err)
		}
		d := subject.Context().Digest(desc.Digest.String())
		idx, err := remote.Referrers(d, withToken)
		if err != nil {
			t.Fatal(err)
		}
		im, _ := idx.IndexManifest()
		if len(im.Manifests) != 1 || im.Manifests[0].Digest != artDigest || im.Manifests[0].ArtifactType != "application/vnd.example.sbom" ||
			im.Manifests[0].Annotations["org.example"] != "sbom-1" {
			t.Fatalf("referrers %+v", im.Manifests)
		}
		idx, err = remote.Referrers(d, withToken, remote.WithFilter("artifactType", "application/other"))
		if err != nil {
			t.Fatal(err)
		}
		if im, _ := idx.IndexManifest(); len(im.Manifests) != 0 {
			t.Fatalf("filtered referrers %+v", im.Manifests)
		}
	})

	t.Run("delete", func(t *testing.T) {
		e := e.For(t)
		other, _ := random.Image(500, 1)
		ref := parse(t, e, "images/gone:1")
		if err := remote.Write(ref, other, withToken); err != nil {
			t.Fatal(err)
		}
		before, _ := e.RepoCounters(imagesID)
		d, _ := other.Digest()
		byDigest := ref.Context().Digest(d.String())
		if err := remote.Delete(ref, withToken); err != nil {
			t.Fatal(err)
		}
		_, err := remote.Head(ref, withToken)
		wantCode(t, err, 404, "")
		if _, err := remote.Image(byDigest, withToken); err != nil {
			t.Fatalf("untagging removed the manifest: %v", err)
		}
		// Untagged, the manifest is still one version (named by digest).
		if n, _ := e.RepoCounters(imagesID); n != before {
			t.Fatalf("artifact_count %d after untag, want %d", n, before)
		}
		if err := remote.Delete(byDigest, withToken); err != nil {
			t.Fatal(err)
		}
		_, err = remote.Get(byDigest, withToken)
		wantCode(t, err, 404, "MANIFEST_UNKNOWN")
		if n, _ := e.RepoCounters(imagesID); n != before-1 {
			t.Fatalf("artifact_count %d after delete, want %d", n, before-1)
		}
	})

	t.Run("anonymous", func(t *testing.T) {
		e := e.For(t)
		pub := parse(t, e, "pub/hello:v1")
		if err := remote.Write(pub, img, withPassword); err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(pub) // anonymous: token flow without credentials
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := got.Digest(); d != imgDigest {
			t.Fatalf("anonymous pull digest %s", d)
		}
		if _, err := got.Layers(); err != nil {
			t.Fatal(err)
		}
		_, err = remote.Image(parse(t, e, "images/app:1.0"))
		wantCode(t, err, 401, "UNAUTHORIZED")
		err = remote.Write(parse(t, e, "pub/hello:v2"), img)
		if err == nil {
			t.Fatal("anonymous push accepted")
		}
	})

	t.Run("no delete permission", func(t *testing.T) {
		e := e.For(t)
		bob := clienttest.NewUser(e, "bob")
		e.Grant(imagesID, bob.ID, false, "write")
		auth := remote.WithAuth(&authn.Basic{Username: bob.Name, Password: bob.Token})
		err := remote.Delete(parse(t, e, "images/app:1.0"), auth)
		wantCode(t, err, 403, "DENIED")
	})
}
