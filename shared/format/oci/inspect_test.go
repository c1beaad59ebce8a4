package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/blob/mem"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// put stores b and returns its descriptor.
func put(t testing.TB, store *mem.Store, mediaType string, b []byte) Descriptor {
	t.Helper()
	info, err := store.Put(context.Background(), bytes.NewReader(b), blob.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Digest != formattest.SHA256Digest(b) {
		t.Fatalf("the blob store addresses %s as %s", formattest.SHA256Digest(b), info.Digest)
	}
	return Descriptor{MediaType: mediaType, Digest: info.Digest, Size: int64(len(b))}
}

func TestInspect(t *testing.T) {
	store := mem.New()
	config := put(t, store, MediaOCIConfig, []byte(`{"architecture":"arm64","variant":"v8","os":"linux","config":{"Labels":{
		"org.opencontainers.image.licenses":"Apache-2.0","org.opencontainers.image.source":"https://github.com/example/app",
		"org.opencontainers.image.description":"from the label"}},"rootfs":{"type":"layers","diff_ids":[]}}`))
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	tw := tar.NewWriter(zw)
	status := "Package: libc6\nVersion: 2.36-9\n"
	tw.WriteHeader(&tar.Header{Name: "var/lib/dpkg/status", Mode: 0o644, Size: int64(len(status))})
	tw.Write([]byte(status))
	tw.Close()
	zw.Close()
	l := put(t, store, "application/vnd.oci.image.layer.v1.tar+gzip", layer.Bytes())
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaOCIManifest, "config": config, "layers": []Descriptor{l},
		"annotations": map[string]string{"org.opencontainers.image.description": "An app", "org.opencontainers.image.base.name": "docker.io/library/debian:12",
			"org.opencontainers.image.base.digest": "sha256:" + string(bytes.Repeat([]byte("a"), 64))}})
	s := format.Stored{Path: "team/app:1.2", File: bytes.NewReader(manifest), Size: int64(len(manifest)), Blobs: store}
	got, err := New(nil).Inspect(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "docker", Name: "team/app", Version: "1.2", Size: int64(len(manifest)), Summary: "An app",
		Licenses: []string{"Apache-2.0"}, Repository: "https://github.com/example/app", Dependencies: []format.Dependency{{Name: "docker.io/library/debian:12",
			Constraint: "sha256:" + string(bytes.Repeat([]byte("a"), 64)), Kind: "base", Ecosystem: "docker"}},
		Image: &format.Image{MediaType: MediaOCIManifest, Config: &format.Descriptor{MediaType: MediaOCIConfig, Digest: config.Digest, Size: config.Size},
			Layers:   []format.Descriptor{{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}},
			Platform: &format.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v %+v\nwant %+v %+v", got, got.Image, want, want.Image)
	}
	// The scanner's way into a layer.
	ms, err := ReadLayer(t.Context(), store, got.Image.Layers[0], format.ArchiveRules{Want: func(n string) bool { return n == "var/lib/dpkg/status" }})
	if err != nil || len(ms) != 1 || string(ms[0].Data) != status {
		t.Fatalf("ReadLayer: %v %v", ms, err)
	}
	// Without blobs, the manifest alone.
	s.Blobs = nil
	if got, err := (&Format{}).Inspect(t.Context(), s); err != nil || got.Image.Platform != nil || got.Summary != "An app" || got.Licenses != nil {
		t.Fatalf("without blobs: %+v, %v", got, err)
	}
	// An index lists its images with their platforms.
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaOCIIndex, "manifests": []map[string]any{
		{"mediaType": MediaOCIManifest, "digest": formattest.SHA256Digest(manifest), "size": len(manifest), "platform": map[string]string{"os": "linux", "architecture": "arm64"}}}})
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "team/app@" + formattest.SHA256Digest(index), File: bytes.NewReader(index), Size: int64(len(index))})
	if err != nil || got.Version != formattest.SHA256Digest(index) || len(got.Image.Manifests) != 1 ||
		*got.Image.Manifests[0].Platform != (format.Platform{OS: "linux", Architecture: "arm64"}) {
		t.Fatalf("index: %+v, %v", got, err)
	}
	missing, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaOCIManifest,
		"config": Descriptor{MediaType: MediaOCIConfig, Digest: formattest.SHA256Digest([]byte("gone")), Size: 4}, "layers": []Descriptor{}})
	for what, s := range map[string]format.Stored{
		"not a manifest":     {Path: "a/b:1", File: bytes.NewReader([]byte(`{"schemaVersion":1}`))},
		"not JSON":           {Path: "a/b:1", File: bytes.NewReader([]byte(`{`))},
		"a missing config":   {Path: "a/b:1", File: bytes.NewReader(missing), Blobs: store},
		"a manifest too big": {Path: "a/b:1", File: bytes.NewReader(make([]byte, MaxManifestSize+1))},
	} {
		s.Size = int64(s.File.(*bytes.Reader).Len())
		if _, err := (&Format{}).Inspect(t.Context(), s); err == nil {
			t.Errorf("%s is inspected", what)
		}
	}
}

func FuzzInspectOCI(f *testing.F) {
	store := mem.New()
	config := put(f, store, MediaDockerConfig, []byte(`{"os":"linux","architecture":"amd64","config":{"Labels":{"a":"b"}}}`))
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": MediaDockerManifest, "config": config, "layers": []Descriptor{}})
	f.Add(m)
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"mediaType":"x","digest":"sha256:` + string(bytes.Repeat([]byte("0"), 64)) + `","size":1,"platform":{"os":7}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: "a/b:1", File: bytes.NewReader(body), Size: int64(len(body)), Blobs: store})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
