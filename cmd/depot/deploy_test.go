package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
