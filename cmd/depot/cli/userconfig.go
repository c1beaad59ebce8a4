package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// userConfig is what depot login keeps for the user: where to go and the
// API token to go with, never a password.
type userConfig struct {
	URL       string    `json:"url"`
	Username  string    `json:"username"`
	Token     string    `json:"token"`
	TokenID   string    `json:"token_id"`
	TokenName string    `json:"token_name"`
	SignedIn  time.Time `json:"signed_in"`
}

// defaultConfigPath is <the user's config directory>/depot/config.json.
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "" // no $HOME: --config or $DEPOT_CONFIG it is
	}
	return filepath.Join(dir, "depot", "config.json")
}

// loadConfig reads the config at path; a missing file is an empty one.
func loadConfig(path string) (userConfig, error) {
	var c userConfig
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s is not a depot config (%v): remove it and run depot login again", path, err)
	}
	return c, nil
}

// saveConfig writes c to path readable by the user alone (0600 in a 0700
// directory), atomically: a temporary file renamed over the old one, so
// a crash leaves the old config or the new one, never half of either.
func saveConfig(path string, c userConfig) error {
	if path == "" {
		return errors.New("no config file: the user's config directory is unknown; set --config or DEPOT_CONFIG")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	// CreateTemp makes it 0600 already; Chmod says so whatever the umask.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
