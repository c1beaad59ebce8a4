#!/bin/sh
# Scale: an origin holding many artifacts (default 1,000,000 in 1,000
# repositories of five formats, generated through the store, not HTTP).
# Times a restart until healthy, reads the origin's memory, and measures
# the listing, search, catalog, statistics and download routes as the
# admin and as a user with grants on private repositories (see
# bench/cmd/scale). Prints one markdown table.
#
# Usage: bench/scale.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
# Environment (defaults in brackets):
#   ARTIFACTS  artifacts to generate                  [1000000]
#   REPOS      repositories to generate               [1000]
#   DIR        work directory to keep: a directory that already holds
#              generated data is measured again without generating [a temporary one]
#   N          sequential requests per route and user [200]
#   C          concurrent clients                     [8]
#   CN         requests per route and user with C clients [400]
#   BUDGET     stop each sequential or concurrent run of a route after this long [20s]
# Quick run: ARTIFACTS=50000 REPOS=100 bench/scale.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$root"

say() { echo "scale: $*" >&2; }

if [ $# -ge 1 ]; then
	depot=$1
else
	say "building depot"
	depot="$tmp/depot"
	go build -o "$depot" ./cmd/depot
fi
say "building the generator and load program"
go build -o "$tmp/scale" ./bench/cmd/scale

dir=${DIR:-$tmp/work}
mkdir -p "$dir"
say "work directory $dir (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
"$tmp/scale" -depot "$depot" -dir "$dir" -artifacts "${ARTIFACTS:-1000000}" -repos "${REPOS:-1000}" \
	-n "${N:-200}" -c "${C:-8}" -cn "${CN:-400}" -route-budget "${BUDGET:-20s}"
