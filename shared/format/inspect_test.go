package format

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPackageInfoBounded(t *testing.T) {
	long := strings.Repeat("é", MaxInfoDescription) // two bytes each
	var deps []Dependency
	for range MaxInfoDependencies + 5 {
		deps = append(deps, Dependency{Name: long, Constraint: long, Kind: "runtime", Ecosystem: "npm"})
	}
	var files []FileEntry
	for range MaxInfoFiles + 1 {
		files = append(files, FileEntry{Path: long, Size: 1})
	}
	layers := make([]Descriptor, MaxInfoDescriptors+1)
	p := PackageInfo{Format: "npm", Name: long, Version: "1.0\xff", Summary: long, Description: long, Licenses: []string{long},
		Dependencies: deps, Files: files, FileCount: 3, Image: &Image{MediaType: "m", Layers: layers, Config: &Descriptor{Digest: long}}}
	if p.CheckBounds() == nil {
		t.Fatal("CheckBounds accepts a package info past its bounds")
	}
	b := p.Bounded()
	if err := b.CheckBounds(); err != nil {
		t.Fatal(err)
	}
	switch {
	case !b.Truncated:
		t.Error("not marked truncated")
	case len(b.Name) != MaxInfoName || len(b.Description) != MaxInfoDescription || b.Version != "1.0\uFFFD":
		t.Errorf("strings: %d %d %q", len(b.Name), len(b.Description), b.Version)
	case len(b.Dependencies) != MaxInfoDependencies || len(b.Dependencies[0].Constraint) != MaxInfoConstraint:
		t.Errorf("dependencies: %d", len(b.Dependencies))
	case len(b.Files) != MaxInfoFiles || b.FileCount != MaxInfoFiles || len(b.Files[0].Path) != MaxInfoPath:
		t.Errorf("files: %d of %d", len(b.Files), b.FileCount)
	case len(b.Image.Layers) != MaxInfoDescriptors || len(b.Image.Config.Digest) != MaxInfoShort:
		t.Errorf("image: %d layers", len(b.Image.Layers))
	}
	// The original is left as it was.
	if len(p.Dependencies[0].Constraint) != len(long) || len(p.Image.Config.Digest) != len(long) {
		t.Error("Bounded changed its receiver's lists")
	}
	raw, err := json.Marshal(b)
	if err != nil || len(raw) > 3<<20 {
		t.Fatalf("%d bytes of JSON, %v", len(raw), err)
	}
	small := PackageInfo{Format: "npm", Name: "a", Version: "1.0.0", Licenses: []string{"MIT"}}
	if got := small.Bounded(); got.Truncated || got.CheckBounds() != nil {
		t.Errorf("a small package info is cut: %+v", got)
	}
}

func TestFileList(t *testing.T) {
	var none *FileList
	none.Add(Entry{Name: "a", Regular: true}) // gathers nothing, without failing
	l := &FileList{}
	check := l.Check(nil)
	for i := range MaxInfoFiles + 2 {
		_ = check(Entry{Name: strings.Repeat("d", i%3+1) + "/f", Regular: true, Size: int64(i)})
	}
	_ = check(Entry{Name: "dir", Dir: true})
	_ = check(Entry{Name: "link"})
	var p PackageInfo
	l.Fill(&p)
	if len(p.Files) != MaxInfoFiles || p.FileCount != MaxInfoFiles+2 || p.Files[1] != (FileEntry{Path: "dd/f", Size: 1}) {
		t.Fatalf("%d of %d: %+v", len(p.Files), p.FileCount, p.Files[:2])
	}
}
