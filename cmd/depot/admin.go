package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/logx"
)

const adminUsage = `Usage: depot admin reset-password [flags]
       depot admin restore ARCHIVE --data-dir DIR [--allow-missing-blobs]

reset-password:

Gives a user (default: admin) a new random password, printed once. It must be
changed at the next login, and every session of the user is signed out.

Run it on the origin's data directory. With the origin stopped, it commits the
change through the node's raft log itself; while the origin runs, it asks that
origin over the unix socket <data-dir>/` + origin.AdminSocket + `. Either way the only
authentication is access to the data directory: keep it readable by the
origin's account alone.

restore:
Restores a backup archive (GET /api/v1/admin/backups/:id/download) into a
fresh data directory: the archive is checked whole, its files are put into the
directory's blob store, and its metadata is installed at the origin's first
start (depot origin --data-dir DIR), which then serves what the backup held:
its users, repositories, permissions, tokens and artifacts. Start it as a new
cluster's first origin; others join it as usual. The cluster key and
JWT_SECRET are not in a backup: give the origin the ones it should have.

`

func runAdmin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage)
		return 2
	}
	switch args[0] {
	case "reset-password":
		args = args[1:]
	case "restore":
		return runRestore(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		args = []string{"--help"}
	default:
		fmt.Fprintf(stderr, "depot admin: unknown command %q\n\n%s", args[0], adminUsage)
		return 2
	}
	dataDir, username := "./data", "admin"
	set := config.New("admin reset-password", nil)
	set.String(&dataDir, "data-dir", "DEPOT_DATA_DIR", "the origin's data directory")
	set.String(&username, "username", "", "the user whose password is reset")
	if code, done := parseAdmin(set, "reset-password", args, stdout, stderr); done {
		return code
	}
	if len(set.Args()) > 0 {
		fmt.Fprintf(stderr, "depot admin reset-password: unexpected argument %q\n", set.Args()[0])
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pw, online, err := origin.ResetPassword(ctx, dataDir, username, logx.New(stderr, "text", "warn"))
	if err != nil {
		fmt.Fprintf(stderr, "depot admin reset-password: %v\n", err)
		return 1
	}
	via := "the stopped origin's raft log"
	if online {
		via = "the running origin"
	}
	fmt.Fprintf(stdout, "New password for user '%s': %s\n"+
		"  Set through %s. It must be changed at the next login (PUT /api/v1/users/me\n"+
		"  with current_password and password); every session of '%s' was signed out.\n", username, pw, via, username)
	return 0
}

// parseAdmin parses an admin command's flags: done, with the exit code,
// when that is all there is to do (--help, or an error said).
func parseAdmin(set *config.Set, name string, args []string, stdout, stderr io.Writer) (int, bool) {
	err := set.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case config.IsHelp(err):
		fmt.Fprint(stdout, adminUsage)
		set.PrintUsage(stdout)
		return 0, true
	}
	fmt.Fprintf(stderr, "depot admin %s: %v\nRun 'depot help admin' for the flags.\n", name, err)
	return 2, true
}

func runRestore(args []string, stdout, stderr io.Writer) int {
	dataDir, allowMissing := "", false
	set := config.New("admin restore", nil)
	set.String(&dataDir, "data-dir", "DEPOT_DATA_DIR", "the fresh data directory to restore into (it must not exist, or be empty)")
	set.Bool(&allowMissing, "allow-missing-blobs", "", "restore an archive of metadata alone (its files answer 404 until uploaded again)")
	var archive string
	// The archive may come before or after the flags.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		archive, args = args[0], args[1:]
	}
	if code, done := parseAdmin(set, "restore", args, stdout, stderr); done {
		return code
	}
	if rest := set.Args(); archive == "" && len(rest) == 1 {
		archive = rest[0]
	} else if len(rest) > 0 {
		fmt.Fprintf(stderr, "depot admin restore: unexpected argument %q\n", rest[len(rest)-1])
		return 2
	}
	if archive == "" || dataDir == "" {
		fmt.Fprintf(stderr, "depot admin restore: give the archive and --data-dir\n\n%s", adminUsage)
		return 2
	}
	last := time.Now()
	progress := func(blobs, bytes int64) {
		if time.Since(last) >= 2*time.Second {
			last = time.Now()
			fmt.Fprintf(stderr, "  %d files (%s) written\n", blobs, config.FormatBytes(bytes))
		}
	}
	fmt.Fprintf(stderr, "Checking %s, then unpacking it into %s...\n", archive, dataDir)
	p, err := origin.PrepareRestore(context.Background(), archive, dataDir, allowMissing, progress)
	if err != nil {
		fmt.Fprintf(stderr, "depot admin restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Backup %s (made %s, at log index %d) unpacked into %s: %d files (%s).\n"+
		"Start the origin on it (depot origin --data-dir %s ...): it installs the metadata at its first start.\n",
		p.Header.BackupID, p.Header.CreatedAt.UTC().Format(time.RFC3339), p.Header.Index, dataDir, p.Blobs, config.FormatBytes(p.Bytes), dataDir)
	return 0
}
