package maven

import (
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	good := map[string]Coords{
		"/r/com/example/demo/1.0/demo-1.0.jar": {Repo: "r", GroupID: "com.example", ArtifactID: "demo", Version: "1.0",
			File: "demo-1.0.jar", Extension: "jar"},
		"r/com/example/demo/1.0/demo-1.0-sources.jar.sha1": {Repo: "r", GroupID: "com.example", ArtifactID: "demo", Version: "1.0",
			File: "demo-1.0-sources.jar", Checksum: "sha1", Classifier: "sources", Extension: "jar"},
		"r/org/demo/2.1/demo-2.1.tar.gz": {Repo: "r", GroupID: "org", ArtifactID: "demo", Version: "2.1",
			File: "demo-2.1.tar.gz", Extension: "tar.gz"},
		"r/org/demo/2.1/demo-2.1.module.sha512": {Repo: "r", GroupID: "org", ArtifactID: "demo", Version: "2.1",
			File: "demo-2.1.module", Checksum: "sha512", Extension: "module"},
		"r/com/example/demo/maven-metadata.xml": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			File: "maven-metadata.xml", Metadata: true},
		"r/com/example/demo/maven-metadata.xml.md5": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			File: "maven-metadata.xml", Metadata: true, Checksum: "md5"},
		"r/com/example/demo/1.0-SNAPSHOT/maven-metadata.xml.sha256": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			Version: "1.0-SNAPSHOT", File: "maven-metadata.xml", Metadata: true, Checksum: "sha256"},
		"r/com/example/demo/1.0-SNAPSHOT/demo-1.0-20261121.235031-2.jar": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			Version: "1.0-SNAPSHOT", File: "demo-1.0-20261121.235031-2.jar", Extension: "jar", Timestamp: "20261121.235031", BuildNumber: 2},
		"r/com/example/demo/1.0-SNAPSHOT/demo-1.0-20261121.235031-12-tests.jar": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			Version: "1.0-SNAPSHOT", File: "demo-1.0-20261121.235031-12-tests.jar", Classifier: "tests", Extension: "jar",
			Timestamp: "20261121.235031", BuildNumber: 12},
		"r/com/example/demo/1.0-SNAPSHOT/demo-1.0-SNAPSHOT.pom": {Repo: "r", GroupID: "com.example", ArtifactID: "demo",
			Version: "1.0-SNAPSHOT", File: "demo-1.0-SNAPSHOT.pom", Extension: "pom"},
		"r/g/my-lib/1.0-rc-1/my-lib-1.0-rc-1.jar.asc": {Repo: "r", GroupID: "g", ArtifactID: "my-lib", Version: "1.0-rc-1",
			File: "my-lib-1.0-rc-1.jar.asc", Extension: "jar.asc"},
	}
	for in, want := range good {
		got, err := ParsePath(in)
		if err != nil || got != want {
			t.Errorf("ParsePath(%q) =\n %+v, %v; want\n %+v", in, got, err, want)
		}
	}
	bad := []string{"", "r", "r/g/a/1.0", "r/a/1.0/a-1.0.jar", "r/a/maven-metadata.xml",
		"r/g/../a/1.0/a-1.0.jar", "r/g/a/1.0/../a-1.0.jar", "r/g//a/1.0/a-1.0.jar", "r/g/a/1.0/",
		"r/g/a/1.0/a-1.0.jar/", "r/g/a/1.0/a:1.0.jar", `r/g/a/1.0/a-1.0\x.jar`, "r/g/a/1.0/a-1.0*.jar",
		"r/g/a/1.0/a-1.0?.jar", "r/g/a/1.0/a-1.0|.jar", `r/g/a/1.0/a-1.0".jar`, "r/g/a/1.0/a-1.0<.jar",
		"r/g.h/a/1.0/a-1.0.jar", "r/g/a/1.0/b-1.0.jar", "r/g/a/1.0/a-1.1.jar", "r/g/a/1.0/a-1.0",
		"r/g/a/1.0/a-1.0.", "r/g/a/1.0/a-1.0-.jar", "r/g/a/1.0/a-1.0-x", "r/g/a/1.0/a-1.0x.jar",
		"r/g/a/1.0-SNAPSHOT/a-1.0-2026112.235031-1.jar", "r/g/a/1.0-SNAPSHOT/a-1.0-20261121.235031-0.jar",
		"r/g/a/1.0-SNAPSHOT/a-1.0-20261121.235031-01.jar", "r/g/a/1.0-SNAPSHOT/a-1.0-20261121.235031-.jar",
		"r/g/a/1.0-SNAPSHOT/a-1.0-20261121.235031-1234567890.jar", "r/g/a/1.0-SNAPSHOT/a-1.1-SNAPSHOT.jar",
		"r/g/a/maven-metadata-local.xml", "r/g/a/1.0/a-1.0.jar\x00", "r/g/a/1.0/a-1.0.jar.sha1\n",
		"r/g/a/1.0/" + strings.Repeat("x", 256), "r/" + strings.Repeat("g/", MaxPath/2) + "a/1.0/a-1.0.jar",
		"r/g/a/1.0/.sha1", "r/g/a/1.0/\xff-1.0.jar"}
	for _, in := range bad {
		if c, err := ParsePath(in); err == nil {
			t.Errorf("ParsePath(%q) = %+v, want an error", in, c)
		}
	}
}

func TestCoordsPaths(t *testing.T) {
	c, err := ParsePath("r/com/example/demo/1.0-SNAPSHOT/demo-1.0-20261121.235031-2-tests.jar.sha1")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Path(); got != "com/example/demo/1.0-SNAPSHOT/demo-1.0-20261121.235031-2-tests.jar" {
		t.Errorf("Path = %q", got)
	}
	if c.Package() != "com.example:demo" || c.FileVersion() != "1.0-20261121.235031-2" || !c.Snapshot() {
		t.Errorf("Package %q FileVersion %q Snapshot %v", c.Package(), c.FileVersion(), c.Snapshot())
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"r/com/example/demo/1.0/demo-1.0.jar", "r/g/a/maven-metadata.xml.sha1",
		"r/g/a/1.0-SNAPSHOT/a-1.0-20261121.235031-2-tests.jar.md5", "r/g/../a/1.0/a-1.0.jar",
		"r/g/a/1.0-SNAPSHOT/maven-metadata.xml", "r/g/a/1.0/a-1.0.tar.gz.sha512"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParsePath(s)
		if err != nil {
			return
		}
		// Whatever is accepted names safe segments that rebuild the path.
		for _, seg := range strings.Split(c.Path(), "/") {
			if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, forbidden+"\x00") {
				t.Fatalf("unsafe segment %q accepted from %q", seg, s)
			}
		}
		rebuilt := c.Repo + "/" + c.Path()
		if c.Checksum != "" {
			rebuilt += "." + c.Checksum
		}
		if strings.TrimPrefix(s, "/") != rebuilt {
			t.Fatalf("%q does not round-trip: %q (%+v)", s, rebuilt, c)
		}
		if c.Metadata {
			return
		}
		// The file name is rebuilt from its coordinates.
		name := c.ArtifactID + "-" + c.FileVersion()
		if c.Classifier != "" {
			name += "-" + c.Classifier
		}
		if name+"."+c.Extension != c.File {
			t.Fatalf("file %q rebuilt as %q (%+v)", c.File, name+"."+c.Extension, c)
		}
		again, err := ParsePath(rebuilt)
		if err != nil || again != c {
			t.Fatalf("reparse of %q: %+v, %v; want %+v", rebuilt, again, err, c)
		}
	})
}
