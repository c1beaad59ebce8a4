package inventory

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/depot-registry/depot/shared/format"
)

// nodeModule reports whether dir (ending in "/") is a package's own
// directory in node_modules: node_modules/<name>/ or
// node_modules/@<scope>/<name>/ (not a directory inside a package).
func nodeModule(dir string) bool {
	i := strings.LastIndex(dir, "node_modules/")
	if i < 0 || i > 0 && dir[i-1] != '/' {
		return false
	}
	rest := strings.Split(strings.TrimSuffix(dir[i+len("node_modules/"):], "/"), "/")
	switch {
	case len(rest) == 1:
		return rest[0] != "" && !strings.HasPrefix(rest[0], ".")
	case len(rest) == 2:
		return strings.HasPrefix(rest[0], "@") && rest[1] != ""
	}
	return false
}

// pythonMeta reports whether name is a Python distribution's metadata in
// a site-packages (or Debian's dist-packages) directory: a wheel's
// *.dist-info/METADATA, an egg's *.egg-info/PKG-INFO, or distutils'
// single *.egg-info file.
func pythonMeta(name string) bool {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	lib := func(d string) bool { b := path.Base(d); return b == "site-packages" || b == "dist-packages" }
	switch {
	case base == "METADATA" && strings.HasSuffix(dir, ".dist-info"),
		base == "PKG-INFO" && strings.HasSuffix(dir, ".egg-info"):
		return lib(path.Dir(dir))
	case strings.HasSuffix(base, ".egg-info"):
		return lib(dir)
	}
	return false
}

// isJar reports whether a file name is a Java archive's.
func isJar(base string) bool {
	for _, ext := range []string{".jar", ".war", ".ear"} {
		if strings.HasSuffix(base, ext) && len(base) > len(ext) {
			return true
		}
	}
	return false
}

// packageJSON reads an installed npm package's name and version.
func packageJSON(_ string, raw []byte) ([]Package, error) {
	var p struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("not readable JSON: %v", err)
	}
	if p.Name == "" || !versionLike(p.Version) {
		return nil, nil // a package.json that describes no published package
	}
	return []Package{{Ecosystem: "npm", Name: p.Name, Version: p.Version, Kind: NodeModules}}, nil
}

// packageLock reads the packages an npm lockfile installs: version 2 and
// 3 list them under "packages" by their node_modules path, version 1
// nests them under "dependencies".
func packageLock(_ string, raw []byte) ([]Package, error) {
	type v1dep struct {
		Version      string                     `json:"version"`
		Dependencies map[string]json.RawMessage `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Link    bool   `json:"link"`
		} `json:"packages"`
		Dependencies map[string]json.RawMessage `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		return nil, fmt.Errorf("not readable JSON: %v", err)
	}
	var out []Package
	seen := map[[2]string]bool{}
	add := func(name, version string) {
		k := [2]string{name, version}
		if name == "" || !versionLike(version) || seen[k] || len(out) >= maxPackages {
			return
		}
		seen[k] = true
		out = append(out, Package{Ecosystem: "npm", Name: name, Version: version, Kind: PackageLock})
	}
	if len(lock.Packages) > 0 {
		for where, p := range lock.Packages {
			i := strings.LastIndex(where, "node_modules/")
			if i < 0 || p.Link {
				continue // the project itself, a workspace's link
			}
			name := p.Name
			if name == "" {
				name = where[i+len("node_modules/"):]
			}
			add(name, p.Version)
		}
		return out, nil
	}
	var walk func(deps map[string]json.RawMessage, depth int)
	walk = func(deps map[string]json.RawMessage, depth int) {
		if depth > 64 {
			return
		}
		for name, raw := range deps {
			var d v1dep
			if json.Unmarshal(raw, &d) != nil {
				continue
			}
			add(name, d.Version)
			walk(d.Dependencies, depth+1)
		}
	}
	walk(lock.Dependencies, 0)
	return out, nil
}

// versionLike: a version, not a URL, a path or a tag.
var versionLike = regexp.MustCompile(`^v?[0-9][0-9A-Za-z.+_~:-]*$`).MatchString

// pythonMetadata reads a distribution's Name and Version headers (the
// headers end at the first empty line; the description follows).
func pythonMetadata(_ string, raw []byte) ([]Package, error) {
	var name, version string
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Name:"); ok && name == "" {
			name = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "Version:"); ok && version == "" {
			version = strings.TrimSpace(v)
		}
	}
	if name == "" || version == "" {
		return nil, errors.New("no Name and Version headers")
	}
	return []Package{{Ecosystem: "PyPI", Name: name, Version: version, Kind: SitePackages}}, nil
}

// paragraphs splits a Debian control file (or apk's database) into its
// paragraphs of "Key: value" (apk: "K:value") fields; continuation lines
// are dropped.
func paragraphs(raw []byte, sep string, each func(fields map[string]string)) {
	fields := map[string]string{}
	flush := func() {
		if len(fields) > 0 {
			each(fields)
			fields = map[string]string{}
		}
	}
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, sep); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	flush()
}

// dpkgStatus reads the packages dpkg installed. OS advisories name source
// packages, so a package is named by its source (with the source's
// version where the status gives one).
func dpkgStatus(_ string, raw []byte) ([]Package, error) {
	var out []Package
	paragraphs(raw, ":", func(f map[string]string) {
		status := f["Status"]
		if f["Package"] == "" || f["Version"] == "" || status != "" && !strings.HasSuffix(status, " installed") || len(out) >= maxPackages {
			return
		}
		name, version := f["Package"], f["Version"]
		if src := f["Source"]; src != "" {
			s, v, ok := strings.Cut(src, " ")
			name = s
			if ok {
				version = strings.Trim(strings.TrimSpace(v), "()")
			}
		}
		out = append(out, Package{Ecosystem: OS, Name: name, Version: version, Kind: Dpkg})
	})
	return out, nil
}

// apkInstalled reads the packages apk installed, named by their origin
// (the source package advisories name).
func apkInstalled(_ string, raw []byte) ([]Package, error) {
	var out []Package
	paragraphs(raw, ":", func(f map[string]string) {
		name := f["o"]
		if name == "" {
			name = f["P"]
		}
		if name == "" || f["V"] == "" || len(out) >= maxPackages {
			return
		}
		out = append(out, Package{Ecosystem: OS, Name: name, Version: f["V"], Kind: Apk})
	})
	return out, nil
}

// osRelease reads ID and VERSION_ID of an os-release file.
func osRelease(raw []byte) (id, version string) {
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			version = v
		}
	}
	return id, version
}

// osEcosystem is OSV's ecosystem of a release: "Debian:12",
// "Ubuntu:22.04", "Alpine:v3.20"; "" when not known.
func osEcosystem(id, version string) string {
	switch id {
	case "debian":
		if major, _, _ := strings.Cut(version, "."); major != "" {
			return "Debian:" + major
		}
		return "Debian"
	case "ubuntu":
		if version != "" {
			return "Ubuntu:" + version
		}
		return "Ubuntu"
	case "alpine":
		parts := strings.SplitN(version, ".", 3)
		if len(parts) >= 2 {
			return "Alpine:v" + parts[0] + "." + parts[1]
		}
		return "Alpine"
	}
	return ""
}

// jar reads the Maven coordinates a Java archive carries
// (META-INF/maven/<group>/<artifact>/pom.properties, several in a
// shaded jar) and those of the jars inside it (a Spring Boot jar's
// BOOT-INF/lib, a war's WEB-INF/lib), spooled to a temporary file to
// read its directory.
func (l *layer) jar(ctx context.Context, name string, r io.Reader, size int64) {
	if size > maxJar {
		l.im.problem(name, fmt.Sprintf("a jar larger than %d bytes: not read", int64(maxJar)))
		return
	}
	f, err := os.CreateTemp(l.im.TempDir, "depot-scan-*.jar")
	if err != nil {
		l.im.problem(name, "spooling the jar: "+err.Error())
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(r, maxJar+1))
	if err != nil {
		l.im.problem(name, "spooling the jar: "+err.Error())
		return
	}
	pkgs, err := jarPackages(ctx, f, n, 0)
	if err != nil {
		l.im.problem(name, err.Error())
		return
	}
	if len(pkgs) == 0 {
		l.im.problem(name, "no Maven metadata (META-INF/maven/**/pom.properties) in the jar")
		return
	}
	l.add(name, pkgs)
}

// jarPackages reads a jar's coordinates, and at depth 0 its nested jars'.
func jarPackages(ctx context.Context, ra io.ReaderAt, size int64, depth int) ([]Package, error) {
	var out []Package
	rules := format.ArchiveRules{
		What: "a jar",
		Want: func(m string) bool {
			return strings.HasPrefix(m, "META-INF/maven/") && strings.HasSuffix(m, "/pom.properties") ||
				depth == 0 && isJar(path.Base(m)) && (strings.HasPrefix(m, "BOOT-INF/lib/") || strings.HasPrefix(m, "WEB-INF/lib/") || strings.HasPrefix(m, "lib/"))
		},
		All: true,
		Stream: func(ctx context.Context, m string, r io.Reader, packed int64) ([]format.Member, error) {
			if strings.HasSuffix(m, "/pom.properties") {
				raw, err := readAll(r, maxManifest)
				if err != nil {
					return nil, nil
				}
				if p, ok := pomProperties(raw); ok {
					out = append(out, p)
				}
				return nil, nil
			}
			raw, err := readAll(r, maxNested)
			if err != nil {
				return nil, nil // a nested jar too large to read here
			}
			nested, err := jarPackages(ctx, bytes.NewReader(raw), int64(len(raw)), depth+1)
			if err == nil {
				out = append(out, nested...)
			}
			return nil, nil
		},
	}
	_, err := format.ReadZip(ctx, ra, size, rules)
	return out, err
}

// pomProperties reads groupId, artifactId and version.
func pomProperties(raw []byte) (Package, bool) {
	f := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			f[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	g, a, v := f["groupId"], f["artifactId"], f["version"]
	if g == "" || a == "" || v == "" {
		return Package{}, false
	}
	return Package{Ecosystem: "Maven", Name: g + ":" + a, Version: v, Kind: Jar}, true
}

// Go's build information: a 32-byte header (the magic, the pointer size,
// flags) at a 16-byte aligned offset of the binary, followed, since Go
// 1.18, by two length-prefixed strings: the Go version and the module
// information runtime/debug prints.
var buildInfoMagic = []byte("\xff Go buildinf:")

const (
	buildInfoAlign  = 16
	buildInfoHeader = 32
	flagsInline     = 0x2 // the strings follow the header (Go 1.18 and later)
)

// scratch is the buffers a layer's read reuses from file to file (a
// layer holds thousands of files; most are looked at for four bytes).
type scratch struct {
	chunk []byte // what is read at once
	buf   []byte // the window searched
}

// goBinary reads the modules a Go binary (an ELF file) was built from,
// scanning it for its build information as it streams by. A file that is
// not an ELF binary, or an ELF binary that is not Go's, has none.
func goBinary(r io.Reader, sc *scratch) ([]Package, error) {
	if sc.chunk == nil {
		sc.chunk = make([]byte, 256<<10)
	}
	head := sc.chunk[:4]
	if _, err := io.ReadFull(r, head); err != nil || string(head) != "\x7fELF" {
		return nil, nil
	}
	buf := append(sc.buf[:0], head...)
	defer func() {
		if cap(buf) <= 1<<20 {
			sc.buf = buf[:0] // kept for the next file, unless a large window grew it
		}
	}()
	var off int64 // the file offset of buf[0]
	eof := false
	fill := func() {
		n, err := io.ReadFull(r, sc.chunk)
		buf = append(buf, sc.chunk[:n]...)
		eof = err != nil
	}
	for from := 0; ; {
		if !eof {
			fill()
		}
		for {
			i := bytes.Index(buf[from:], buildInfoMagic)
			if i < 0 {
				break
			}
			at := from + i
			from = at + 1
			if (off+int64(at))%buildInfoAlign != 0 {
				continue
			}
			for !eof && len(buf)-at < buildInfoHeader+maxBuildMod {
				fill()
			}
			pkgs, err, ok := parseBuildInfo(buf[at:])
			if ok {
				return pkgs, err
			}
		}
		if eof {
			return nil, nil
		}
		keep := len(buildInfoMagic) - 1
		if len(buf) > keep {
			off += int64(len(buf) - keep)
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		from = 0
	}
}

// parseBuildInfo reads build information at the start of data; ok is
// false when it is not (the magic string found elsewhere, in a program
// that reads build information itself).
func parseBuildInfo(data []byte) (pkgs []Package, err error, ok bool) {
	if len(data) < buildInfoHeader {
		return nil, nil, false
	}
	ptrSize, flags := data[len(buildInfoMagic)], data[len(buildInfoMagic)+1]
	if ptrSize != 4 && ptrSize != 8 {
		return nil, nil, false
	}
	if flags&flagsInline == 0 {
		return nil, errors.New("a Go binary built before Go 1.18: its module information is not read"), true
	}
	rest := data[buildInfoHeader:]
	version, rest, ok1 := lengthPrefixed(rest)
	mod, _, ok2 := lengthPrefixed(rest)
	if !ok1 || !ok2 || !strings.HasPrefix(version, "go") && !strings.HasPrefix(version, "devel") {
		return nil, nil, false
	}
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16] // the sentinels around it
	} else {
		mod = ""
	}
	if v, ok := goRelease(version); ok {
		pkgs = append(pkgs, Package{Ecosystem: "Go", Name: "stdlib", Version: v, Kind: GoBinary})
	}
	if mod == "" {
		return pkgs, nil, true // built outside a module
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return pkgs, fmt.Errorf("unreadable Go module information: %v", err), true
	}
	if v := bi.Main.Version; bi.Main.Path != "" && v != "" && v != "(devel)" {
		pkgs = append(pkgs, Package{Ecosystem: "Go", Name: bi.Main.Path, Version: v, Kind: GoBinary})
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if d.Version == "" || d.Version == "(devel)" || len(pkgs) >= maxPackages {
			continue // replaced by a directory: no version to match
		}
		pkgs = append(pkgs, Package{Ecosystem: "Go", Name: d.Path, Version: d.Version, Kind: GoBinary})
	}
	return pkgs, nil, true
}

// lengthPrefixed reads a uvarint-prefixed string.
func lengthPrefixed(b []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) || n > maxBuildMod {
		return "", nil, false
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true
}

var goVersion = regexp.MustCompile(`^go1\.([0-9]+)(?:\.([0-9]+))?(?:(rc|beta)([0-9]+))?`)

// goRelease is a Go release ("go1.21.3", "go1.22rc1") as the Go
// vulnerability database versions the standard library: "1.21.3",
// "1.22.0-rc.1".
func goRelease(v string) (string, bool) {
	m := goVersion.FindStringSubmatch(v)
	if m == nil {
		return "", false
	}
	patch := m[2]
	if patch == "" {
		patch = "0"
	}
	out := "1." + m[1] + "." + patch
	if m[3] != "" {
		out += "-" + m[3] + "." + m[4]
	}
	return out, true
}
