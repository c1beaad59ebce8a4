package npm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"
)

// TestCheckTarballRefusesTrailingData: a valid package followed by more
// gzip data (a second member inflating to a lot of zeros) is refused
// without inflating it all.
func TestCheckTarballRefusesTrailingData(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte(`{"name":"x","version":"1.0.0"}`)
	_ = tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(body)
	_ = tw.Close()
	_ = zw.Close()
	if err := CheckTarball(bytes.NewReader(buf.Bytes()), int64(buf.Len()), DefaultLimits); err != nil {
		t.Fatalf("valid tarball refused: %v", err)
	}
	// Append a second gzip member of 64 MiB of zeros.
	zw2 := gzip.NewWriter(&buf)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		_, _ = zw2.Write(zeros)
	}
	_ = zw2.Close()
	if err := CheckTarball(bytes.NewReader(buf.Bytes()), int64(buf.Len()), DefaultLimits); err == nil {
		t.Fatal("tarball with a trailing gzip member accepted")
	}
}
