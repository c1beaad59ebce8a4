package maven

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/formattest"
)

// demoPOM is a POM as a project deploys it, inheriting its groupId.
const demoPOM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>com.example</groupId>
    <artifactId>parent</artifactId>
    <version>3</version>
  </parent>
  <artifactId>demo</artifactId>
  <version>1.0</version>
  <name>Demo</name>
  <description>A demo library.</description>
  <url>https://demo.example</url>
  <licenses>
    <license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0</url></license>
  </licenses>
  <scm><url>https://github.com/example/demo</url></scm>
  <dependencies>
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-api</artifactId>
      <version>[2.0,3.0)</version>
    </dependency>
    <dependency>
      <groupId>junit</groupId>
      <artifactId>junit</artifactId>
      <version>${junit.version}</version>
      <scope>test</scope>
    </dependency>
    <dependency>
      <groupId>com.google.code.findbugs</groupId>
      <artifactId>jsr305</artifactId>
      <version>3.0.2</version>
      <optional>true</optional>
    </dependency>
  </dependencies>
</project>`

func TestInspect(t *testing.T) {
	deps := []format.Dependency{
		{Name: "org.slf4j:slf4j-api", Constraint: "[2.0,3.0)", Kind: "compile", Ecosystem: "maven"},
		{Name: "junit:junit", Constraint: "${junit.version}", Kind: "test", Ecosystem: "maven"},
		{Name: "com.google.code.findbugs:jsr305", Constraint: "3.0.2", Kind: "compile", Optional: true, Ecosystem: "maven"}}
	got, err := New(nil).Inspect(t.Context(), format.Stored{Path: "com/example/demo/1.0/demo-1.0.pom", File: strings.NewReader(demoPOM), Size: int64(len(demoPOM))})
	if err != nil {
		t.Fatal(err)
	}
	want := format.PackageInfo{Format: "maven", Name: "com.example:demo", Version: "1.0", Size: int64(len(demoPOM)), Summary: "A demo library.",
		Licenses: []string{"Apache-2.0"}, Homepage: "https://demo.example", Repository: "https://github.com/example/demo", Dependencies: deps}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pom:\ngot  %+v\nwant %+v", got, want)
	}
	// A jar carries its POM; a shaded one others' too.
	jar := formattest.Zip(t, map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\n", "com/example/Demo.class": "\xca\xfe\xba\xbe",
		"META-INF/maven/com.example/demo/pom.xml": demoPOM, "META-INF/maven/org.other/lib/pom.xml": "<project/>"})
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "com/example/demo/1.0/demo-1.0.jar", File: bytes.NewReader(jar), Size: int64(len(jar))})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "com.example:demo" || !reflect.DeepEqual(got.Dependencies, deps) || got.FileCount != 4 || len(got.Files) != 4 {
		t.Fatalf("jar: %+v", got)
	}
	// Other files are their coordinates; a file outside the layout is
	// what its POM says.
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "com/example/demo/1.0-SNAPSHOT/demo-1.0-20240101.120000-3-dist.tar.gz", File: bytes.NewReader(nil)})
	if err != nil || got.Name != "com.example:demo" || got.Version != "1.0-SNAPSHOT" || got.Files != nil {
		t.Fatalf("tarball: %+v, %v", got, err)
	}
	got, err = (&Format{}).Inspect(t.Context(), format.Stored{Path: "imports/demo.pom", File: strings.NewReader(demoPOM), Size: int64(len(demoPOM))})
	if err != nil || got.Name != "com.example:demo" || got.Version != "1.0" {
		t.Fatalf("outside the layout: %+v, %v", got, err)
	}
	for what, s := range map[string]format.Stored{
		"a POM that is not XML":   {Path: "com/example/demo/1.0/demo-1.0.pom", File: strings.NewReader("<project>")},
		"a POM of no artifact":    {Path: "com/example/demo/1.0/demo-1.0.pom", File: strings.NewReader("<project><groupId>g</groupId></project>")},
		"another document":        {Path: "com/example/demo/1.0/demo-1.0.pom", File: strings.NewReader("<metadata/>")},
		"a jar that is no zip":    {Path: "com/example/demo/1.0/demo-1.0.jar", File: strings.NewReader("PK")},
		"no coordinates, no POM":  {Path: "demo.tar.gz", File: strings.NewReader("")},
		"a jar escaping its root": {Path: "com/example/demo/1.0/demo-1.0.jar", File: bytes.NewReader(formattest.Zip(t, map[string]string{"../x": ""}))},
	} {
		s.Size = s.File.(interface{ Size() int64 }).Size()
		if _, err := (&Format{}).Inspect(t.Context(), s); err == nil {
			t.Errorf("%s is inspected", what)
		}
	}
}

func FuzzInspectMaven(f *testing.F) {
	f.Add([]byte(demoPOM), false)
	f.Add(formattest.Zip(f, map[string]string{"META-INF/maven/com.example/demo/pom.xml": demoPOM}), true)
	f.Fuzz(func(t *testing.T, data []byte, jar bool) {
		path := "com/example/demo/1.0/demo-1.0.pom"
		if jar {
			path = "com/example/demo/1.0/demo-1.0.jar"
		}
		info, err := (&Format{}).Inspect(t.Context(), format.Stored{Path: path, File: bytes.NewReader(data), Size: int64(len(data))})
		if err != nil {
			return
		}
		if err := info.CheckBounds(); err != nil {
			t.Fatal(err)
		}
	})
}
