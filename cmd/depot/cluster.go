package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

const clusterUsage = `Usage: depot cluster remove-peer [flags] <node-id>

Takes a dead origin out of the cluster for good (its machine or disk is
gone), so the voters are the live origins again and a quorum is counted
among them. A live origin is not removed: stopping it makes it leave the
cluster by itself. Ask any live origin; it passes the request to the
leader. GET /api/v1/admin/cluster lists the members and their ids.

Flags:
  --origin URL   base URL of a live origin (env DEPOT_ORIGIN; default http://127.0.0.1:8080)
  --token TOKEN  an administrator's API token or access token (env DEPOT_TOKEN)
`

func runCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "remove-peer" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, clusterUsage)
			return 0
		}
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	fs := flag.NewFlagSet("depot cluster remove-peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, clusterUsage) }
	base := fs.String("origin", envOr("DEPOT_ORIGIN", "http://127.0.0.1:8080"), "")
	token := fs.String("token", os.Getenv("DEPOT_TOKEN"), "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *token == "" {
		fmt.Fprintf(stderr, "depot cluster remove-peer: want one node id, and an administrator's token (--token or DEPOT_TOKEN)\n\n%s", clusterUsage)
		return 2
	}
	id := fs.Arg(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, strings.TrimRight(*base, "/")+"/api/v1/admin/cluster/members/"+url.PathEscape(id), nil)
	if err != nil {
		fmt.Fprintf(stderr, "depot cluster remove-peer: %v\n", err)
		return 2
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "depot cluster remove-peer: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			fmt.Fprintf(stderr, "depot cluster remove-peer: %s (%s)\n", e.Error.Message, e.Error.Code)
		} else {
			fmt.Fprintf(stderr, "depot cluster remove-peer: %s: %s\n", resp.Status, raw)
		}
		return 1
	}
	fmt.Fprintf(stdout, "removed %s from the cluster\n", id)
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
