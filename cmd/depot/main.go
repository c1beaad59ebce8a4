// Command depot is the Depot artifact registry: one binary whose
// subcommands run an origin (and, later, an edge) node.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/edge"
	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/logx"
)

const usage = `Depot is a self-hosted artifact registry.

Usage:
  depot origin [flags]   run an origin node: REST API at /api/v1, package formats, Raft metadata
  depot edge [flags]     run an edge node: a replica and blob cache of the repositories assigned
                         to it (first stage: it replicates, caches and serves the formats' reads)
  depot keygen           print a new cluster key for DEPOT_CLUSTER_KEY (share it among the origins only)
  depot admin reset-password [--data-dir DIR] [--username admin]
                         give a user a new random password (lost admin password)
  depot version          print the version
  depot help [command]   show help

Run 'depot help origin' for the origin's flags and environment variables,
'depot help edge' for the edge's,
'depot help admin' for the administration commands.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "origin":
		return runOrigin(args[1:], stdout, stderr)
	case "edge":
		return runEdge(args[1:], stdout, stderr)
	case "keygen":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "depot keygen takes no arguments\n\n%s", usage)
			return 2
		}
		// Only stdout carries the key, so it can go straight into a
		// secret store: DEPOT_CLUSTER_KEY=$(depot keygen).
		fmt.Fprintln(stdout, peerauth.NewKey().Encode())
		return 0
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "depot", origin.Version)
		return 0
	case "admin":
		return runAdmin(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		switch args[1] {
		case "origin", "edge", "admin":
			return run([]string{args[1], "--help"}, stdout, stderr)
		case "keygen", "version", "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "depot: unknown command %q\n\n%s", args[1], usage)
		return 2
	}
	fmt.Fprintf(stderr, "depot: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func runOrigin(args []string, stdout, stderr io.Writer) int {
	cfg := origin.DefaultConfig()
	set := config.New("origin", nil)
	cfg.Bind(set)
	if err := set.Parse(args); err != nil {
		if config.IsHelp(err) {
			fmt.Fprint(stdout, "Usage: depot origin [flags]\n\nRuns an origin node. Every setting is a flag, an environment variable, or both:\n\n")
			set.PrintUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "depot origin: %v\nRun 'depot help origin' for the settings.\n", err)
		return 2
	}
	log := logx.New(stderr, cfg.LogFormat, cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Bind before New touches the data directory: a taken port must not
	// leave a new admin behind whose generated password scrolled away.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "depot origin: cannot listen on %s (--listen): %v\n", cfg.Listen, err)
		return 1
	}
	o, err := origin.New(ctx, cfg, log, stderr)
	if err != nil {
		ln.Close()
		log.Error("origin failed to start", "err", err)
		return 1
	}
	if err := o.Run(ctx, ln); err != nil {
		log.Error("origin stopped with an error", "err", err)
		return 1
	}
	return 0
}

func runEdge(args []string, stdout, stderr io.Writer) int {
	cfg := edge.DefaultConfig()
	set := config.New("edge", nil)
	cfg.Bind(set)
	if err := set.Parse(args); err != nil {
		if config.IsHelp(err) {
			fmt.Fprint(stdout, "Usage: depot edge [flags]\n\nRuns an edge node registered on the origins (POST /api/v1/edge-nodes).\nEvery setting is a flag, an environment variable, or both:\n\n")
			set.PrintUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "depot edge: %v\nRun 'depot help edge' for the settings.\n", err)
		return 2
	}
	log := logx.New(stderr, cfg.LogFormat, cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "depot edge: cannot listen on %s (--listen): %v\n", cfg.Listen, err)
		return 1
	}
	e, err := edge.New(cfg, log, stderr)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "depot edge: %v\n", err)
		return 1
	}
	if err := e.Run(ctx, ln); err != nil {
		log.Error("edge stopped with an error", "err", err)
		return 1
	}
	return 0
}
