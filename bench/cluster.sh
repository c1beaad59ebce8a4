#!/bin/sh
# A cluster of origins on loopback: small-upload throughput on one origin
# and on three, the time from an upload's acknowledgement until an edge
# serves it (p50/p99), the time from a security policy's change until the
# edge enforces it (p50/p99), and failover time after kill -9 of the leader.
# Prints markdown tables (see bench/cmd/cluster).
#
# Usage: bench/cluster.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
# Environment (defaults in brackets):
#   DURATION   length of each throughput run   [10s]
#   CLIENTS    concurrent uploading clients    [16]
#   SIZE       bytes per upload                [4096]
#   VISIBLE    uploads timed until the edge serves them [200]
#   FAILOVERS  leader kills                    [5]
#   POLICIES   policies made and removed, timed on the edge [50]
# Quick run: DURATION=3s VISIBLE=50 FAILOVERS=2 bench/cluster.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$root"

if [ $# -ge 1 ]; then
	depot=$1
else
	echo "cluster: building depot" >&2
	depot="$tmp/depot"
	go build -o "$depot" ./cmd/depot
fi
go build -o "$tmp/cluster" ./bench/cmd/cluster
mkdir -p "$tmp/work"
"$tmp/cluster" -depot "$depot" -dir "$tmp/work" -duration "${DURATION:-10s}" -clients "${CLIENTS:-16}" \
	-size "${SIZE:-4096}" -visible "${VISIBLE:-200}" -failovers "${FAILOVERS:-5}" -policies "${POLICIES:-50}"
