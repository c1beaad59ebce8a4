#!/bin/sh
# Archives made to unpack far more than their size (a gem of 4 MiB of YAML,
# charts with many or huge Chart.yaml, a 1 KiB conda package of 1 GiB of
# zeros, zip and gzip members of 256 MiB of zeros), uploaded to a fresh
# origin alone and N at once: status, time and the origin's peak memory.
#
# Usage: bench/bombs.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
#   N (default 4): copies of each upload sent at once in the second round.
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
go build -o "$work/bombs" ./bench/cmd/bombs
"$work/bombs" -depot "$depot" -n "${N:-4}"
