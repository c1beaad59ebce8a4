#!/bin/sh
# Downloads: the hot path. An origin and an edge on loopback, and nginx
# serving the same files from disk (the physical limit), each loaded with
# wrk in interleaved rounds: generic blobs of 1 KiB, 64 KiB and 4 MiB, an
# npm packument and its tarball. The edge and the origin are asked with an
# API token over HTTP Basic; the edge answers from its warmed cache.
# Prints req/s, MB/s, p99 and server CPU per request, and each figure's
# ratio to nginx's, as one markdown table (see bench/cmd/downloads).
#
# Usage: bench/downloads.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
# Environment (defaults in brackets):
#   DURATION  length of each wrk run             [10s]
#   CONNS     wrk connections                    [64]
#   THREADS   wrk threads                        [2]
#   ROUNDS    interleaved rounds                 [2]
#   OBJECTS   which objects, by a word of their name, e.g. "1KiB,packument" [all]
#   WORKSET   also a working set of this many blobs (7 in 10 of 1-16 KiB, a quarter
#             of 64-512 KiB, the rest 4 MiB), asked for at random by USERS users
#             with a token each (wrk with a Lua script)  [0: none]
#   USERS     users of the working set                [50]
#   COLD      1: also a cold edge's first pass over the working set, beside its
#             second (needs WORKSET)                  [0]
# Needs wrk and nginx; on Debian they are installed when missing.
# Quick run: DURATION=3s ROUNDS=1 bench/downloads.sh
# The working set alone: WORKSET=2000 OBJECTS=working bench/downloads.sh
# With a cold edge's first pass: WORKSET=2000 COLD=1 OBJECTS=working bench/downloads.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$root"

say() { echo "downloads: $*" >&2; }

for tool in wrk nginx; do
	if ! command -v "$tool" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$tool" ]; then
		say "installing $tool"
		sudo=""
		[ "$(id -u)" = 0 ] || sudo=sudo
		$sudo apt-get install -y -qq "$tool" >/dev/null
	fi
done
PATH=$PATH:/usr/sbin
export PATH

if [ $# -ge 1 ]; then
	depot=$1
else
	say "building depot"
	depot="$tmp/depot"
	go build -o "$depot" ./cmd/depot
fi
go build -o "$tmp/downloads" ./bench/cmd/downloads
mkdir -p "$tmp/work"
cold=false
[ "${COLD:-0}" = 1 ] && cold=true
"$tmp/downloads" -depot "$depot" -dir "$tmp/work" -duration "${DURATION:-10s}" -conns "${CONNS:-64}" \
	-threads "${THREADS:-2}" -rounds "${ROUNDS:-2}" -objects "${OBJECTS:-}" -workingset "${WORKSET:-0}" -users "${USERS:-50}" -cold="$cold"
