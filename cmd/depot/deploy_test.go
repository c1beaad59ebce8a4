package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDeployFilesUseRealSettings: every flag and every DEPOT_ variable the
// files under deploy/ use is one that depot's help lists, so they do not
// drift from the binary (no container runtime or systemd runs here to try
// them).
func TestDeployFilesUseRealSettings(t *testing.T) {
	bin := buildDepot(t)
	var help strings.Builder
	for _, cmd := range []string{"origin", "edge"} {
		out, _ := exec.Command(bin, "help", cmd).CombinedOutput()
		help.Write(out)
	}
	known := help.String()
	knownEnv := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$([A-Z0-9_]+)`).FindAllStringSubmatch(known, -1) {
		knownEnv[m[1]] = true
	}
	flagRE := regexp.MustCompile(`(?:^|[\s\[",])(--[a-z][a-z-]+)`)
	envRE := regexp.MustCompile(`\b(DEPOT_[A-Z_]+|JWT_SECRET)\b`)
	// Variables of the compose setup script, not of depot.
	ours := map[string]bool{"DEPOT_ADMIN_PASSWORD": true}
	files := 0
	err := filepath.WalkDir("../../deploy", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".sh") || strings.HasSuffix(path, ".md") {
			return err // a script's and prose's flags are other programs' too
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") && !strings.Contains(line, "=") {
				continue // prose
			}
			for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(known, "  "+m[1]+" ") && m[1] != "--no-install-recommends" && m[1] != "--system" &&
					m[1] != "--create-home" && m[1] != "--home-dir" && m[1] != "--from" && m[1] != "--now" {
					t.Errorf("%s: flag %s is not one of depot's: %s", path, m[1], strings.TrimSpace(line))
				}
			}
			for _, m := range envRE.FindAllStringSubmatch(line, -1) {
				if !ours[m[1]] && !knownEnv[m[1]] {
					t.Errorf("%s: variable %s is not one of depot's: %s", path, m[1], strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil || files < 6 {
		t.Fatalf("walked %d files under deploy/: %v", files, err)
	}
}

// TestComposeBuildsOneImage: every service of the compose file runs the
// same image and exactly one builds it, from deploy/Dockerfile, with the
// image's tag as the version built in; every origin is given
// DEPOT_MIN_FREE_BYTES, which .env.example describes.
func TestComposeBuildsOneImage(t *testing.T) {
	data, err := os.ReadFile("../../deploy/compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]struct {
			Image string
			Build *struct {
				Context, Dockerfile string
				Args                map[string]string
			}
			Command     []string
			Environment map[string]string
		}
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Services) < 6 {
		t.Fatalf("read %d services from compose.yaml", len(file.Services))
	}
	images := map[string][]string{}
	var builders []string
	origins := 0
	for name, s := range file.Services {
		images[s.Image] = append(images[s.Image], name)
		if len(s.Command) > 0 && s.Command[0] == "origin" {
			origins++
			if s.Environment["DEPOT_MIN_FREE_BYTES"] == "" {
				t.Errorf("%s: no DEPOT_MIN_FREE_BYTES in its environment", name)
			}
		}
		if s.Build == nil {
			continue
		}
		builders = append(builders, name)
		if df := filepath.Join("../../deploy/compose", s.Build.Context, s.Build.Dockerfile); df != filepath.Clean("../../deploy/Dockerfile") {
			t.Errorf("%s builds %s, not deploy/Dockerfile", name, df)
		}
		_, tag, _ := strings.Cut(s.Image, ":")
		if v := s.Build.Args["VERSION"]; v == "" || v != tag {
			t.Errorf("%s: build argument VERSION %q, image %q: the tag should be the version built in", name, v, s.Image)
		}
	}
	if len(images) != 1 || len(builders) != 1 || origins < 3 {
		t.Errorf("images %v, built by %v, %d origins: want one image, built by one service", images, builders, origins)
	}
	env, err := os.ReadFile("../../deploy/compose/.env.example")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "DEPOT_MIN_FREE_BYTES=") {
		t.Error(".env.example does not name DEPOT_MIN_FREE_BYTES")
	}
}

// TestDockerfileSetsVersion: the image's build stage takes the build
// argument VERSION and links it in as shared/version.Version, as the
// Makefile does, and make image passes it.
func TestDockerfileSetsVersion(t *testing.T) {
	data, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// Instructions, their continuation lines joined.
	var instrs []string
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			instrs = append(instrs, line)
		}
	}
	const setVersion = "-X github.com/depot-registry/depot/shared/version.Version="
	arg, built := false, false
	for _, in := range instrs {
		switch {
		case strings.HasPrefix(in, "FROM "):
			arg = false // an ARG is scoped to its stage
		case in == "ARG VERSION" || strings.HasPrefix(in, "ARG VERSION="):
			arg = true
		case strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build"):
			built = true
			if !arg || !strings.Contains(in, setVersion+"${VERSION}") {
				t.Errorf("the build does not link in the VERSION argument (ARG VERSION in its stage: %v): %s", arg, in)
			}
		case strings.HasPrefix(in, "LABEL ") && strings.Contains(in, "org.opencontainers.image.version"):
			if !arg || !strings.Contains(in, `org.opencontainers.image.version="${VERSION}"`) {
				t.Errorf("the image's version label is not the VERSION argument: %s", in)
			}
		}
	}
	if !built {
		t.Fatal("no go build in the Dockerfile")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), setVersion+"$(VERSION)") || !strings.Contains(string(mk), "-f deploy/Dockerfile --build-arg VERSION=$(VERSION)") {
		t.Error("the Makefile's build and image targets do not both set the version")
	}
}

// TestDockerIgnoreKeepsSecretsOut: the image's build context (the
// repository's root, less what deploy/Dockerfile.dockerignore names, read
// as BuildKit reads it) holds every file the binary is built from and
// none of git's history, data directories, .env files or binaries.
func TestDockerIgnoreKeepsSecretsOut(t *testing.T) {
	rules := readDockerIgnore(t, "../../deploy/Dockerfile.dockerignore")
	for _, p := range []string{".git", ".git/config", "data/meta.db", "data/jwt-secret", "data/cluster-key",
		"origin/data/raft/raft.db", "d1/meta.db", "deploy/compose/.env", "deploy/systemd/origin.env",
		"cmd/depot/.env", "shared/x/prod.env", "bin/depot", "depot", "cmd/depot/depot.test", "coverage.out",
		"bench/RESULTS.md", "origin/origin_test.go"} {
		if !ignored(rules, p) {
			t.Errorf("%s is in the build context", p)
		}
	}
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}\n{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}\n{{end}}{{end}}", "./cmd/depot")
	list.Dir = "../.."
	list.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, f := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
			needed = append(needed, filepath.ToSlash(rel))
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list named %d files of this module", len(needed))
	}
	for _, p := range needed {
		if ignored(rules, p) {
			t.Errorf("%s, which the build needs, is left out of the build context", p)
		}
	}
}

// ignoreRule is a line of a .dockerignore file.
type ignoreRule struct {
	re     *regexp.Regexp
	negate bool
}

// readDockerIgnore reads a .dockerignore file as the builder does:
// comments and blank lines skipped, patterns cleaned, "!" re-including,
// "**" any number of directories, "*" and "?" within one path element.
func readDockerIgnore(t *testing.T, path string) []ignoreRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if r.negate = strings.HasPrefix(line, "!"); r.negate {
			line = strings.TrimSpace(line[1:])
		}
		line = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(line)), "/")
		var re strings.Builder
		for i := 0; i < len(line); i++ {
			switch c := line[i]; {
			case strings.HasPrefix(line[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(line[i:], "**"):
				re.WriteString(".*")
				i++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		r.re = regexp.MustCompile("^" + re.String() + "$")
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no patterns", path)
	}
	return rules
}

// ignored reports whether path (slash-separated, relative to the context)
// is left out: the last rule matching it or one of its parent directories
// decides.
func ignored(rules []ignoreRule, path string) bool {
	out := false
	for _, r := range rules {
		for p := path; ; {
			if r.re.MatchString(p) {
				out = !r.negate
				break
			}
			i := strings.LastIndex(p, "/")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return out
}
