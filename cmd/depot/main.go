// Command depot is the Depot artifact registry: one binary whose
// subcommands run an origin or an edge node, and administer them.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/depot-registry/depot/cluster/peerauth"
	"github.com/depot-registry/depot/cmd/depot/cli"
	"github.com/depot-registry/depot/edge"
	"github.com/depot-registry/depot/origin"
	"github.com/depot-registry/depot/shared/config"
	"github.com/depot-registry/depot/shared/logx"
	"github.com/depot-registry/depot/shared/version"
)

const usage = `Depot is a self-hosted artifact registry.

Usage:
  depot origin [flags]   run an origin node: REST API at /api/v1, package formats, Raft metadata;
                         alone, or one of a cluster (--join, --bootstrap-expect)
  depot edge [flags]     run an edge node near the clients: it serves the formats' reads of the
                         repositories assigned to it from a replica and a blob cache, also while
                         every origin is down, and forwards the rest to an origin
  depot keygen           print a new cluster key for DEPOT_CLUSTER_KEY
                         (share it among the origins only)
  depot cluster remove-peer [--origin URL] [--token T] <node-id>
                         take a dead origin out of the cluster for good
  depot admin reset-password [--data-dir DIR] [--username admin]
                         give a user a new random password (lost admin password)
  depot version          print the version
  depot help [command]   show help

Scripting an origin over its REST API (from any machine):
  depot login [--url URL] [--username NAME] [--password-stdin]
                         sign in; the URL, username and an API token (never the password)
                         are kept in the user's config
  depot logout           revoke that token and forget it
  depot repo list|show|create|delete          repositories
  depot user list|create|delete|disable|enable
                                              users (administrators)
  depot token list|create|delete              your API tokens
  depot edge list|show|create|delete|assign|unassign
                                              edge nodes (administrators)
  depot webhook list|create|delete            webhooks (administrators)
  depot plugin list|install|enable|disable|uninstall
                                              plugins: format handlers, built in or installed
                                              from WebAssembly (administrators)
  depot migrate --from URL --user USER --repos REPO[,REPO...] | --follow ID
                                              migrate repositories of an Artifactory, with
                                              a progress bar (administrators)
                         every one takes --output table|json, and --url / --token
                         (DEPOT_URL, DEPOT_TOKEN) instead of the stored sign-in

Run 'depot help origin' for the origin's flags and environment variables,
'depot help edge' for the edge's,
'depot help admin' for the administration commands,
'depot help repo' (user, token, webhook, login...) for a scripting command's.
`

const keygenUsage = `Usage: depot keygen

Prints a new cluster key: 32 random bytes in standard base64, only the
key on standard output, so it can go straight into a secret store:

  export DEPOT_CLUSTER_KEY=$(depot keygen)

Give every origin of one cluster the same key, and nothing else (edges
never hold it): origins prove it to each other on the raft port, which
carries raft and their RPC (forwarded writes, blob copies), and their
gossip is encrypted and authenticated with a key derived from it.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if cli.IsCommand(args[0]) {
		return cli.Run(args, cli.IO{Out: stdout, Err: stderr})
	}
	switch args[0] {
	case "origin":
		return runOrigin(args[1:], stdout, stderr)
	case "edge":
		if len(args) > 1 && cli.IsEdgeCommand(args[1]) {
			return cli.Run(args, cli.IO{Out: stdout, Err: stderr})
		}
		return runEdge(args[1:], stdout, stderr)
	case "keygen":
		if len(args) == 2 && (args[1] == "-h" || args[1] == "--help") {
			fmt.Fprint(stdout, keygenUsage)
			return 0
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "depot keygen takes no arguments\n\n%s", usage)
			return 2
		}
		// Only stdout carries the key, so it can go straight into a
		// secret store: DEPOT_CLUSTER_KEY=$(depot keygen).
		fmt.Fprintln(stdout, peerauth.NewKey().Encode())
		return 0
	case "version", "--version", "-v":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help") {
			fmt.Fprint(stdout, "Usage: depot version\n\nPrints the version of this binary.\n")
			return 0
		}
		fmt.Fprintln(stdout, "depot", version.Version)
		return 0
	case "admin":
		return runAdmin(args[1:], stdout, stderr)
	case "cluster":
		return runCluster(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		switch args[1] {
		case "origin", "edge", "admin", "cluster", "keygen", "version":
			return run([]string{args[1], "--help"}, stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
		if cli.IsCommand(args[1]) {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "depot: unknown command %q\n\n%s", args[1], usage)
		return 2
	}
	fmt.Fprintf(stderr, "depot: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func runOrigin(args []string, stdout, stderr io.Writer) int {
	cfg := origin.DefaultConfig()
	return runNode(nodeKind{name: "origin", about: "Runs an origin node.", bind: cfg.Bind,
		settings: func() (string, string, string) { return cfg.LogFormat, cfg.LogLevel, cfg.Listen },
		start:    func(ctx context.Context, log *slog.Logger) (node, error) { return origin.New(ctx, cfg, log, stderr) },
	}, args, stdout, stderr)
}

func runEdge(args []string, stdout, stderr io.Writer) int {
	cfg := edge.DefaultConfig()
	return runNode(nodeKind{name: "edge", about: edgeAbout, bind: cfg.Bind,
		settings: func() (string, string, string) { return cfg.LogFormat, cfg.LogLevel, cfg.Listen },
		start:    func(_ context.Context, log *slog.Logger) (node, error) { return edge.New(cfg, log, stderr) },
	}, args, stdout, stderr)
}

const edgeAbout = `Runs an edge node registered on the origins (POST /api/v1/edge-nodes).

The registered nodes are managed from any machine with
depot edge list|show|create|delete|assign|unassign: run 'depot edge help'.
`

// node is a running origin or edge.
type node interface {
	Run(ctx context.Context, ln net.Listener) error
}

// nodeKind is what runNode needs to know of a kind of node.
type nodeKind struct {
	name, about string
	bind        func(*config.Set)
	// settings reads the bound log format, log level and listen address.
	settings func() (logFormat, logLevel, listen string)
	start    func(context.Context, *slog.Logger) (node, error)
}

// runNode is the life of a node process: its settings, its log, its
// port (bound before the node touches its data directory, so a taken
// port does not leave, say, a new admin behind whose generated password
// scrolled away), then the node, until SIGINT or SIGTERM.
func runNode(k nodeKind, args []string, stdout, stderr io.Writer) int {
	set := config.New(k.name, nil)
	k.bind(set)
	if err := set.Parse(args); err != nil {
		if config.IsHelp(err) {
			fmt.Fprintf(stdout, "Usage: depot %s [flags]\n\n%s\nEvery setting is a flag, an environment variable, or both (the flag wins):\n", k.name, k.about)
			set.PrintUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "depot %s: %v\nRun 'depot help %s' for the settings.\n", k.name, err, k.name)
		return 2
	}
	logFormat, logLevel, listen := k.settings()
	log := logx.New(stderr, logFormat, logLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "depot %s: cannot listen on %s (--listen): %v\n", k.name, listen, err)
		return 1
	}
	n, err := k.start(ctx, log)
	if err != nil {
		ln.Close()
		log.Error(k.name+" failed to start", "err", err)
		return 1
	}
	if err := n.Run(ctx, ln); err != nil {
		log.Error(k.name+" stopped with an error", "err", err)
		return 1
	}
	return 0
}
