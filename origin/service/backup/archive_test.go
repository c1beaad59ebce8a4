package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// archive writes an archive of metadata and blobs.
func archive(t *testing.T, metadata string, blobs ...string) []byte {
	t.Helper()
	s := sha256.Sum256([]byte(metadata))
	hdr := Header{BackupID: "b1", CreatedAt: time.Unix(1, 0), Index: 7, IncludeArtifacts: len(blobs) > 0,
		MetadataSize: int64(len(metadata)), MetadataSHA256: hex.EncodeToString(s[:]), Blobs: int64(len(blobs))}
	for _, b := range blobs {
		hdr.BlobBytes += int64(len(b))
	}
	var out bytes.Buffer
	aw, err := NewWriter(&out, hdr, strings.NewReader(metadata))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if err := aw.Blob(digestOf([]byte(b)), int64(len(b)), strings.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestArchiveRoundTrip: what is written reads back, each entry checked.
func TestArchiveRoundTrip(t *testing.T) {
	raw := archive(t, "the metadata", "blob one", "blob two")
	var got []string
	hdr, err := Read(bytes.NewReader(raw), Visitor{
		Metadata: func(r io.Reader) error { b, _ := io.ReadAll(r); got = append(got, string(b)); return nil },
		Blob: func(d string, size int64, r io.Reader) error {
			b, _ := io.ReadAll(r)
			if d != digestOf(b) || size != int64(len(b)) {
				t.Errorf("blob %s: %q", d, b)
			}
			got = append(got, string(b))
			return nil
		},
	})
	if err != nil || hdr.BackupID != "b1" || hdr.Index != 7 || strings.Join(got, "|") != "the metadata|blob one|blob two" {
		t.Fatalf("read: %+v %v %q", hdr, err, got)
	}
	// A visitor that reads nothing still has every entry checked.
	if _, err := Read(bytes.NewReader(raw), Visitor{Blob: func(string, int64, io.Reader) error { return nil }}); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveRefusals: a truncated archive, one with a byte changed,
// something that is not a backup, and a blob that does not hash to its
// name are refused as corrupt, by the reader or the writer.
func TestArchiveRefusals(t *testing.T) {
	raw := archive(t, strings.Repeat("metadata ", 1000), strings.Repeat("blob ", 5000))
	for name, b := range map[string][]byte{
		"truncated":      raw[:len(raw)*2/3],
		"cut at the end": raw[:len(raw)-4],
		"a byte changed": func() []byte { c := bytes.Clone(raw); c[len(c)/2] ^= 1; return c }(),
		"not a backup":   []byte("hello"),
		"empty":          nil,
	} {
		if _, err := Read(bytes.NewReader(b), Visitor{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	hdr := Header{BackupID: "b", MetadataSize: 1, MetadataSHA256: "x", Blobs: 1, BlobBytes: 3}
	aw, err := NewWriter(io.Discard, hdr, strings.NewReader("m"))
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.Blob(digestOf([]byte("abc")), 3, strings.NewReader("abd")); err == nil {
		t.Error("a blob whose bytes are not its digest's was written")
	}
	// The metadata's own checksum is checked on reading.
	var out bytes.Buffer
	aw, _ = NewWriter(&out, Header{BackupID: "b", MetadataSize: 1, MetadataSHA256: strings.Repeat("0", 64)}, strings.NewReader("m"))
	_ = aw.Close()
	if _, err := Read(&out, Visitor{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("metadata of another checksum: %v", err)
	}
}
