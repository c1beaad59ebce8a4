package scan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// watchEvery is how often the leader looks at the advisories directory.
const watchEvery = 30 * time.Second

// watch loads the advisories directory's files (*.json and *.zip) while
// ctx lasts, once at the start and again whenever a file is added or
// changed; a load of the same records changes nothing.
func (s *Service) watch(ctx context.Context) {
	if s.cfg.Directory == nil {
		return
	}
	seen := ""
	t := time.NewTicker(min(watchEvery, s.cfg.Poll*15))
	defer t.Stop()
	for {
		if dir := s.cfg.Directory(); dir != "" {
			sig, files := signature(dir)
			if sig != seen {
				if err := s.loadDirectory(ctx, dir, files); err != nil {
					if ctx.Err() != nil {
						return
					}
					s.cfg.Log.Warn("loading the advisories directory; trying again later", "directory", dir, "err", err)
				} else {
					seen = sig
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// signature names the directory's advisory files with their sizes and
// times, in order.
func signature(dir string) (string, []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	var sig []string
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || ext != ".json" && ext != ".zip" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
		sig = append(sig, fmt.Sprintf("%s %d %d", e.Name(), info.Size(), info.ModTime().UnixNano()))
	}
	slices.Sort(sig)
	return strings.Join(sig, "\n"), files
}

// loadDirectory loads each file as an upload of it would be.
func (s *Service) loadDirectory(ctx context.Context, dir string, files []string) error {
	if len(files) == 0 {
		return nil
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		info, err := f.Stat()
		if err == nil && info.Size() > MaxUpload {
			err = fmt.Errorf("%s is larger than %d bytes", name, MaxUpload)
		}
		if err == nil {
			advs, rerr := ReadAdvisories(ctx, f, info.Size())
			if rerr == nil && len(advs) > 0 {
				_, _, rerr = s.Load(ctx, advs, Describe(name, len(advs)), "directory")
			}
			err = rerr
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
