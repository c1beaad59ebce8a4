#!/bin/sh
# Migrations from Artifactory: a depot origin process migrates three
# loads (many small files, some of 1 MiB, a few of 64 MiB) from a local
# Artifactory stand-in (in the benchmark's process, files in memory),
# timed beside a plain copy of the same files (each downloaded, then
# uploaded with one PUT, as many at once); files/s, MB/s and the origin's
# peak memory. Prints a markdown table (see bench/cmd/migrate).
#
# Usage: bench/migrate.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
# Environment: PARALLEL  transfers at once, both ways [4]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$root"
if [ $# -ge 1 ]; then
	depot=$1
else
	echo "migrate: building depot" >&2
	depot="$tmp/depot"
	go build -o "$depot" ./cmd/depot
fi
go build -o "$tmp/migrate" ./bench/cmd/migrate
"$tmp/migrate" -depot "$depot" -dir "$tmp" -parallel "${PARALLEL:-4}"
