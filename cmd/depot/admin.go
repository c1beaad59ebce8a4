package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/logx"
)

const adminUsage = `Usage: depot admin reset-password [flags]

Gives a user (default: admin) a new random password, printed once. It must be
changed at the next login, and every session of the user is signed out.

Run it on the origin's data directory. With the origin stopped, it commits the
change through the node's raft log itself; while the origin runs, it asks that
origin over the unix socket <data-dir>/` + origin.AdminSocket + `. Either way the only
authentication is access to the data directory: keep it readable by the
origin's account alone.

`

func runAdmin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage)
		return 2
	}
	switch args[0] {
	case "reset-password":
		args = args[1:]
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
	if err := set.Parse(args); err != nil {
		if config.IsHelp(err) {
			fmt.Fprint(stdout, adminUsage)
			set.PrintUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "depot admin reset-password: %v\nRun 'depot help admin' for the flags.\n", err)
		return 2
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
