package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/depot-registry/depot/shared/config"
)

// Migration is a migration as the API answers it.
type Migration struct {
	ID       string `json:"migration_id"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	Progress struct {
		Total             int64   `json:"total_artifacts"`
		Migrated          int64   `json:"migrated_artifacts"`
		Failed            int64   `json:"failed_artifacts"`
		Skipped           int64   `json:"skipped_artifacts"`
		Bytes             int64   `json:"bytes"`
		CurrentRepository string  `json:"current_repository"`
		Percent           float64 `json:"percentage_complete"`
		Verified          int64   `json:"checksums_verified"`
	} `json:"progress"`
	EstimatedCompletion *time.Time `json:"estimated_completion"`
}

// migrationEntry is a log line or a failure.
type migrationEntry struct {
	Seq     int    `json:"seq"`
	Level   string `json:"level"`
	Message string `json:"message"`
	Path    string `json:"path"`
	Repo    string `json:"repository"`
}

// migrateCmd starts a migration from an Artifactory and follows it, or
// follows one started before.
var migrateCmd = &command{name: "migrate", args: "--from URL --user USER --repos REPO[,REPO...] | --follow ID", maxArgs: 0,
	about: "Migrates repositories of a JFrog Artifactory into Depot (administrators): the migration is made\n" +
		"(the source is checked: it answers, takes the credentials, has every repository), started, and\n" +
		"followed with a progress bar (files and bytes, rate, estimated end, current repository) until it\n" +
		"ends, with the report's summary. Ctrl-C stops following; the migration goes on on the server\n" +
		"(follow it again with --follow ID). The source's password is read from standard input with\n" +
		"--password-stdin, else from $DEPOT_SOURCE_PASSWORD, else asked on the terminal.\n\n" +
		"  depot migrate --from https://artifactory.example.com/artifactory --user admin --repos libs-release,npm-local\n" +
		"  depot migrate --follow 3f2a...",
	setup: func(set *config.Set) func(*session, []string) error {
		var from, user, repos, follow, mapping string
		var stdin, dryRun, noVerify, detach, permissions, noMetadata bool
		var parallel int64
		set.String(&from, "from", "", "the source's URL: https://host/artifactory")
		set.String(&user, "user", "", "the source's user (an admin of it, to list every file)")
		set.Bool(&stdin, "password-stdin", "", "read the source's password (or access token) from standard input")
		set.String(&repos, "repos", "", "comma-separated keys of the source's repositories to migrate")
		set.String(&mapping, "map", "", "comma-separated SOURCE=TARGET repository names (default: the same)")
		set.Bool(&dryRun, "dry-run", "", "report what would move and what would not, writing nothing")
		set.Bool(&noVerify, "no-verify", "", "do not check the files against the source's checksums")
		set.Bool(&permissions, "permissions", "", "also move the source's users, groups and permission targets (as grants)")
		set.Bool(&noMetadata, "no-metadata", "", "do not keep the source's upload times, uploaders and properties")
		set.Int(&parallel, "parallel", "", "files transferred at once (default 4)")
		set.Bool(&detach, "detach", "", "start it and return at once (follow it later with --follow)")
		set.String(&follow, "follow", "", "follow the migration of this id instead of starting one")
		return func(s *session, _ []string) error {
			if follow != "" {
				return s.followMigration(follow)
			}
			if from == "" || repos == "" {
				return usageError("--from and --repos are needed (or --follow ID)")
			}
			pw, ok := s.io.Lookup("DEPOT_SOURCE_PASSWORD")
			if stdin || !ok {
				var err error
				if pw, err = s.readSecret("Password of "+user+" at the source: ", stdin); err != nil {
					return err
				}
			}
			body := map[string]any{"source": map[string]any{"type": "artifactory", "url": from, "username": user, "password": pw},
				"repositories": splitList(repos), "options": map[string]any{"dry_run": dryRun, "validate_checksums": !noVerify,
					"parallel_transfers": parallel, "include_permissions": permissions, "include_metadata": !noMetadata}}
			if mapping != "" {
				m := map[string]string{}
				for _, pair := range splitList(mapping) {
					src, dst, ok := strings.Cut(pair, "=")
					if !ok {
						return usageError("--map: want SOURCE=TARGET, got " + pair)
					}
					m[src] = dst
				}
				body["repository_map"] = m
			}
			var m Migration
			if err := s.client.do(s.ctx, "POST", "/migrations", nil, body, &m); err != nil {
				return err
			}
			if err := s.client.do(s.ctx, "POST", "/migrations"+pathOf(m.ID)+"/start", nil, nil, &m); err != nil {
				return err
			}
			fmt.Fprintf(s.io.Err, "migration %s started\n", m.ID)
			if detach {
				fmt.Fprintln(s.io.Out, m.ID)
				return nil
			}
			return s.followMigration(m.ID)
		}
	}}

// followMigration shows a migration's progress until it ends (or Ctrl-C
// stops following it), then its report's summary.
func (s *session) followMigration(id string) error {
	ctx, stop := signal.NotifyContext(s.ctx, os.Interrupt)
	defer stop()
	bar := s.terminalOut()
	var m Migration
	after := 0
	lastLine := time.Time{}
	start, startBytes := time.Now(), int64(-1)
	for {
		if err := s.client.do(ctx, "GET", "/migrations"+pathOf(id), nil, nil, &m); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		// The log as it comes: warnings and errors (the rest is in /logs).
		var logs struct{ Entries []migrationEntry }
		if err := s.client.do(ctx, "GET", "/migrations"+pathOf(id)+"/logs", map[string][]string{"after": {fmt.Sprint(after)}}, nil, &logs); err == nil {
			for _, l := range logs.Entries {
				after = l.Seq
				if l.Level == "warn" || l.Level == "error" {
					if bar {
						fmt.Fprint(s.io.Err, "\r\x1b[K")
					}
					fmt.Fprintf(s.io.Err, "%s: %s\n", l.Level, l.Message)
				}
			}
		}
		if startBytes < 0 {
			startBytes = m.Progress.Bytes
		}
		line := progressLine(m, time.Since(start), m.Progress.Bytes-startBytes)
		switch {
		case bar:
			fmt.Fprint(s.io.Err, "\r\x1b[K"+line)
		case time.Since(lastLine) >= 10*time.Second:
			fmt.Fprintln(s.io.Err, line)
			lastLine = time.Now()
		}
		if done(m.Status) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if bar {
		fmt.Fprintln(s.io.Err)
	} else if ctx.Err() == nil {
		fmt.Fprintln(s.io.Err, progressLine(m, time.Since(start), m.Progress.Bytes-startBytes)) // the last
	}
	if ctx.Err() != nil {
		fmt.Fprintf(s.io.Err, "stopped following: the migration goes on on the server (depot migrate --follow %s)\n", id)
		return nil
	}
	return s.migrationSummary(m)
}

// done reports whether a migration status is final.
func done(status string) bool {
	switch status {
	case "completed", "completed_with_errors", "failed", "cancelled":
		return true
	}
	return false
}

// progressLine is one line of a migration's progress.
func progressLine(m Migration, el time.Duration, moved int64) string {
	p := m.Progress
	const width = 20
	filled := int(p.Percent / 100 * width)
	bar := strings.Repeat("#", min(filled, width)) + strings.Repeat("-", width-min(filled, width))
	rate := ""
	if secs := el.Seconds(); secs >= 1 && moved > 0 {
		rate = fmt.Sprintf(", %s/s", config.FormatBytes(int64(float64(moved)/secs)))
	}
	eta := ""
	if m.EstimatedCompletion != nil {
		if left := time.Until(*m.EstimatedCompletion); left > 0 {
			eta = ", ETA " + left.Round(time.Second).String()
		}
	}
	line := fmt.Sprintf("[%s] %5.1f%% %d/%d files (%d failed), %s%s%s %s", bar, p.Percent, p.Migrated+p.Skipped+p.Failed, p.Total,
		p.Failed, config.FormatBytes(p.Bytes), rate, eta, m.Status)
	if p.CurrentRepository != "" {
		line += " " + p.CurrentRepository
	}
	return line
}

// migrationSummary prints the report's summary; a migration that did not
// complete is an error (exit 1).
func (s *session) migrationSummary(m Migration) error {
	var r struct {
		Totals struct {
			Total    int64 `json:"total_artifacts"`
			Migrated int64 `json:"migrated_artifacts"`
			Failed   int64 `json:"failed_artifacts"`
			Skipped  int64 `json:"skipped_artifacts"`
			Bytes    int64 `json:"bytes"`
		} `json:"totals"`
		Checksums struct {
			Verified, Failed int64
			Skipped          bool
		} `json:"checksum_verification"`
		Failures    []migrationEntry `json:"failures"`
		Metadata    string           `json:"metadata_migration"`
		Permissions string           `json:"permission_migration"`
	}
	if err := s.client.do(s.ctx, "GET", "/migrations"+pathOf(m.ID)+"/report", nil, nil, &r); err != nil {
		return err
	}
	if s.output == outJSON {
		return printJSON(s.io.Out, r)
	}
	w := s.io.Out
	fmt.Fprintf(w, "Migration %s: %s\n", m.ID, m.Status)
	fmt.Fprintf(w, "  files:       %d migrated, %d failed, %d skipped (left to Depot), of %d\n", r.Totals.Migrated, r.Totals.Failed, r.Totals.Skipped, r.Totals.Total)
	fmt.Fprintf(w, "  bytes:       %s\n", config.FormatBytes(r.Totals.Bytes))
	if r.Checksums.Skipped {
		fmt.Fprintf(w, "  checksums:   not checked (--no-verify)\n")
	} else {
		fmt.Fprintf(w, "  checksums:   %d verified, %d mismatched\n", r.Checksums.Verified, r.Checksums.Failed)
	}
	fmt.Fprintf(w, "  metadata:    %s\n  permissions: %s\n", r.Metadata, r.Permissions)
	for i, f := range r.Failures {
		if i == 10 {
			fmt.Fprintf(w, "  ... %d more: GET /api/v1/migrations/%s/failures\n", len(r.Failures)-10, m.ID)
			break
		}
		fmt.Fprintf(w, "  failed: %s/%s: %s\n", f.Repo, f.Path, f.Message)
	}
	switch m.Status {
	case "completed":
		return nil
	case "failed":
		return errors.New("the migration failed: " + m.Error)
	case "completed_with_errors":
		return fmt.Errorf("%d files failed", r.Totals.Failed)
	}
	return errors.New("the migration is " + m.Status)
}

// terminalOut reports whether progress goes to a terminal (redrawn in
// place) or to a log (a line every 10 s).
func (s *session) terminalOut() bool {
	f, ok := s.io.Err.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
