#!/bin/sh
# Peak memory of an origin under four concurrent ~170 MiB npm publish
# bodies: first with a wrong shasum (refused once read), then correct
# ones. Each phase runs on a fresh origin in a temporary directory.
#
# Usage: bench/npm-publish-memory.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
#   N (default 4) and SIZE (tarball bytes, default 127 MiB) tune the flood.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
if [ $# -ge 1 ]; then
	depot=$1
else
	depot="$work/depot"
	go build -o "$depot" ./cmd/depot
fi
go build -o "$work/npmflood" ./bench/cmd/npmflood
"$work/npmflood" -depot "$depot" -n "${N:-4}" -size "${SIZE:-133169152}"
