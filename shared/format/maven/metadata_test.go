package maven

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 23, 50, 31, 0, time.UTC)

func TestArtifactMetadata(t *testing.T) {
	files := []File{
		{Version: "1.10", Extension: "jar", Updated: t0},
		{Version: "1.9", Extension: "jar", Updated: t0.Add(time.Hour)},
		{Version: "1.9", Extension: "pom", Updated: t0.Add(time.Hour)},
		{Version: "2.0-SNAPSHOT", Extension: "jar", Timestamp: "20261122.000000", BuildNumber: 1, Updated: t0.Add(2 * time.Hour)},
		{Version: "1.10-rc1", Extension: "jar", Updated: t0},
	}
	m := ArtifactMetadata("com.example", "demo", files)
	want := &Versioning{Latest: "2.0-SNAPSHOT", Release: "1.10", Versions: &Versions{List: []string{"1.9", "1.10-rc1", "1.10", "2.0-SNAPSHOT"}},
		LastUpdated: "20261122015031"}
	if !reflect.DeepEqual(m.Versioning, want) {
		t.Errorf("versioning = %+v, want %+v", m.Versioning, want)
	}
	doc := string(Encode(m))
	for _, s := range []string{`<?xml version="1.0" encoding="UTF-8"?>`, "<groupId>com.example</groupId>", "<latest>2.0-SNAPSHOT</latest>",
		"<release>1.10</release>", "<version>1.9</version>", "<lastUpdated>20261122015031</lastUpdated>"} {
		if !strings.Contains(doc, s) {
			t.Errorf("document lacks %s:\n%s", s, doc)
		}
	}
	if strings.Contains(doc, "<snapshot") || strings.Contains(doc, "modelVersion") || strings.Count(doc, "<versions>") != 1 {
		t.Errorf("artifact-level document has snapshot parts:\n%s", doc)
	}
}

func TestSnapshotMetadata(t *testing.T) {
	files := []File{
		{Version: "1.0-SNAPSHOT", Extension: "jar", Timestamp: "20261121.235031", BuildNumber: 1, Updated: t0},
		{Version: "1.0-SNAPSHOT", Extension: "pom", Timestamp: "20261121.235031", BuildNumber: 1, Updated: t0},
		{Version: "1.0-SNAPSHOT", Extension: "jar", Timestamp: "20261122.101010", BuildNumber: 2, Updated: t0.Add(time.Hour)},
		{Version: "1.0-SNAPSHOT", Extension: "jar", Classifier: "sources", Timestamp: "20261121.235031", BuildNumber: 1, Updated: t0},
		{Version: "1.0-SNAPSHOT", Extension: "module", Updated: t0}, // non-unique
	}
	m := SnapshotMetadata("com.example", "demo", "1.0-SNAPSHOT", files)
	v := m.Versioning
	if m.ModelVersion != "1.1.0" || m.Version != "1.0-SNAPSHOT" || v.Snapshot == nil ||
		*v.Snapshot != (Snapshot{Timestamp: "20261122.101010", BuildNumber: 2}) || v.LastUpdated != "20261122005031" {
		t.Fatalf("metadata = %+v / %+v", m, v)
	}
	want := []SnapshotVersion{
		{Extension: "jar", Value: "1.0-20261122.101010-2", Updated: "20261122005031"},
		{Classifier: "sources", Extension: "jar", Value: "1.0-20261121.235031-1", Updated: "20261121235031"},
		{Extension: "module", Value: "1.0-SNAPSHOT", Updated: "20261121235031"},
		{Extension: "pom", Value: "1.0-20261121.235031-1", Updated: "20261121235031"},
	}
	if !reflect.DeepEqual(v.SnapshotVersions.List, want) {
		t.Errorf("snapshotVersions = %+v\nwant %+v", v.SnapshotVersions, want)
	}
	if doc := string(Encode(m)); strings.Contains(doc, "<versions") || strings.Contains(doc, "<release") {
		t.Errorf("snapshot document has artifact-level parts:\n%s", doc)
	}
	back, err := ParseMetadata(Encode(m))
	if err != nil || !reflect.DeepEqual(back, withName(m)) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestParseMetadataRejects(t *testing.T) {
	for _, doc := range []string{"", "not xml", "<metadata>", "<other/>", "<metadata></metadata><metadata/>",
		"<metadata></metadata>trailing", "<metadata><groupId>a</artifactId></metadata>",
		"<metadata>" + strings.Repeat(" ", MaxMetadata) + "</metadata>"} {
		if _, err := ParseMetadata([]byte(doc)); err == nil {
			t.Errorf("ParseMetadata(%.40q) accepted", doc)
		}
	}
	m, err := ParseMetadata([]byte("<?xml version=\"1.0\"?>\n<metadata modelVersion=\"1.1.0\"><groupId>g</groupId><artifactId>a</artifactId>" +
		"<versioning><versions><version>1</version></versions></versioning></metadata>\n<!-- done -->\n"))
	if err != nil || m.GroupID != "g" || m.Versioning == nil || m.Versioning.Versions == nil || len(m.Versioning.Versions.List) != 1 {
		t.Errorf("ParseMetadata = %+v, %v", m, err)
	}
}

// withName is m as decoding fills it in (the XMLName field).
func withName(m Metadata) Metadata {
	m.XMLName.Local = "metadata"
	return m
}

func FuzzMetadataRoundTrip(f *testing.F) {
	f.Add("com.example", "demo", "1.0-SNAPSHOT", "sources", "jar", "20261121.235031", 3, int64(0))
	f.Add("a&b", "<x>", "1\"'", "c]]>", "tar.gz", "", 0, int64(1)<<40)
	f.Fuzz(func(t *testing.T, group, artifact, version, classifier, ext, ts string, build int, secs int64) {
		if !validXMLText(group) || !validXMLText(artifact) || !validXMLText(version) || !validXMLText(classifier) ||
			!validXMLText(ext) || !validXMLText(ts) {
			return // XML cannot carry these characters at all
		}
		up := time.Unix(secs%(1<<34), 0).UTC()
		files := []File{
			{Version: version, Classifier: classifier, Extension: ext, Timestamp: ts, BuildNumber: build, Updated: up},
			{Version: version + ".1", Extension: ext, Updated: up.Add(time.Second)},
		}
		for _, m := range []Metadata{ArtifactMetadata(group, artifact, files), SnapshotMetadata(group, artifact, version, files[:1])} {
			doc := Encode(m)
			back, err := ParseMetadata(doc)
			if err != nil {
				t.Fatalf("generated document does not parse: %v\n%s", err, doc)
			}
			if !reflect.DeepEqual(back, withName(m)) {
				t.Fatalf("round trip changed the document:\n got %+v\nwant %+v\n%s", back, m, doc)
			}
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`<metadata><groupId>g</groupId><artifactId>a</artifactId></metadata>`))
	f.Add([]byte(`<?xml version="1.0"?><metadata><versioning><snapshot><buildNumber>x</buildNumber></snapshot></versioning></metadata>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadata(data)
		if err != nil {
			return
		}
		// Anything accepted re-encodes to a document that parses the same.
		back, err := ParseMetadata(Encode(m))
		if err != nil {
			t.Fatalf("re-encoded document does not parse: %v", err)
		}
		if !reflect.DeepEqual(withName(back), withName(m)) && validXMLText(Encode(m)) {
			t.Fatalf("re-encode changed %+v into %+v", m, back)
		}
	})
}

// validXMLText reports whether s holds only characters XML 1.0 allows
// (encoding/xml replaces the others, so they cannot round-trip).
func validXMLText[T string | []byte](s T) bool {
	for _, r := range string(s) {
		if r == utf8RuneError || !(r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000) {
			return false
		}
	}
	return true
}

const utf8RuneError = '\uFFFD'
