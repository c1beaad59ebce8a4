package nuget

import (
	"bytes"
	"testing"
)

func TestNormalize(t *testing.T) {
	for v, want := range map[string]string{"1.0": "1.0.0", "1.0.0.0": "1.0.0", "1.2.3.4": "1.2.3.4", "1.0.0-Beta+build": "1.0.0-beta", "01.02.03": "1.2.3"} {
		if got := normalize(v); got != want {
			t.Errorf("normalize(%q) = %q, want %q", v, got, want)
		}
	}
	if compareVersions("1.0.0-beta", "1.0.0") >= 0 || compareVersions("1.10.0", "1.9.0") <= 0 {
		t.Error("compareVersions orders wrongly")
	}
}

func TestOnlyPart(t *testing.T) {
	const b = "----x"
	for name, body := range map[string]string{
		"CRLF":           "------x\r\nContent-Disposition: form-data; name=\"package\"\r\n\r\nDATA\r\n------x--\r\n",
		"LF (nuget 2.8)": "------x\r\nContent-Disposition: form-data; name=\"package\"\r\n\r\nDATA\n------x--",
	} {
		start, end, err := onlyPart(bytes.NewReader([]byte(body)), int64(len(body)), b)
		if err != nil || body[start:end] != "DATA" {
			t.Errorf("%s: %q, %v", name, body[start:min(end, int64(len(body)))], err)
		}
	}
	if _, _, err := onlyPart(bytes.NewReader([]byte("junk")), 4, b); err == nil {
		t.Error("junk accepted")
	}
}

func FuzzOnlyPart(f *testing.F) {
	f.Add([]byte("------x\r\n\r\nDATA\n------x--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		start, end, err := onlyPart(bytes.NewReader(body), int64(len(body)), "----x")
		if err == nil && (start < 0 || end < start || end > int64(len(body))) {
			t.Fatalf("part [%d, %d) of %d bytes", start, end, len(body))
		}
	})
}

func FuzzReadNupkg(f *testing.F) {
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, pkg []byte) {
		if p, _, err := readNupkg(t.Context(), bytes.NewReader(pkg), int64(len(pkg))); err == nil && (p.ID == "" || p.Version == "") {
			t.Fatalf("read %+v", p)
		}
	})
}
