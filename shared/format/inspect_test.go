package format

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPackageInfoBounded(t *testing.T) {
	long := strings.Repeat("é", MaxInfoDescription) // two bytes each
	var deps []Dependency
	for i := range MaxInfoDependencies + 5 {
		d := Dependency{Name: "d", Constraint: "1", Kind: "runtime", Ecosystem: "npm"}
		if i == 0 {
			d.Name, d.Constraint = long, long
		}
		deps = append(deps, d)
	}
	var files []FileEntry
	for i := range MaxInfoFiles + 1 {
		f := FileEntry{Path: "f", Size: 1}
		if i == 0 {
			f.Path = long
		}
		files = append(files, f)
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
	small := PackageInfo{Format: "npm", Name: "a", Version: "1.0.0", Licenses: []string{"MIT"}}
	if got := small.Bounded(); got.Truncated || got.CheckBounds() != nil {
		t.Errorf("a small package info is cut: %+v", got)
	}
}

// TestPackageInfoJSON: whatever the values (here all at their caps, of
// characters JSON escapes as six bytes), a package info is at most
// MaxInfoJSON bytes of JSON, its lists cut (files first).
func TestPackageInfoJSON(t *testing.T) {
	esc := func(n int) string { return strings.Repeat("<", n) }
	p := PackageInfo{Format: "npm", Name: esc(MaxInfoName), Version: esc(MaxInfoVersion), Summary: esc(MaxInfoSummary),
		Description: esc(MaxInfoDescription), Homepage: esc(MaxInfoURL), Repository: esc(MaxInfoURL)}
	for range MaxInfoLicenses {
		p.Licenses = append(p.Licenses, esc(MaxInfoShort))
	}
	for range MaxInfoKeywords {
		p.Keywords = append(p.Keywords, esc(MaxInfoShort))
	}
	for range MaxInfoDependencies {
		p.Dependencies = append(p.Dependencies, Dependency{Name: esc(MaxInfoName), Constraint: esc(MaxInfoConstraint),
			Condition: esc(MaxInfoConstraint), Kind: esc(MaxInfoShort), Ecosystem: esc(MaxInfoShort)})
	}
	for range MaxInfoFiles {
		p.Files = append(p.Files, FileEntry{Path: esc(MaxInfoPath), SHA256: esc(MaxInfoShort)})
	}
	p.FileCount = len(p.Files)
	im := &Image{MediaType: esc(MaxInfoShort)}
	for range MaxInfoDescriptors {
		im.Layers = append(im.Layers, Descriptor{MediaType: esc(MaxInfoShort), Digest: esc(MaxInfoShort)})
	}
	p.Image = im
	b := p.Bounded()
	raw, err := json.Marshal(b)
	if err != nil || len(raw) > MaxInfoJSON {
		t.Fatalf("%d bytes of JSON, %v", len(raw), err)
	}
	if !b.Truncated || len(b.Files) != 0 || b.FileCount != MaxInfoFiles || b.Name != p.Name {
		t.Errorf("cut: %d files of %d, truncated %v", len(b.Files), b.FileCount, b.Truncated)
	}
	if err := b.CheckBounds(); err != nil {
		t.Error(err)
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
