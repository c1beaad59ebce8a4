#!/bin/sh
# Search library: Depot's own search indexes (the bbolt buckets the
# search package reads: names, name trigrams, file names, package terms,
# checksums) against a search library, bleve, on the same generated data
# (the scale bench's shape: default 1,000,000 artifacts in 1,000
# repositories of five formats). Builds both (Depot's through the
# store's commands), reports build seconds and disk size, then times the
# search API's questions (quick search, names, prefixes, substrings,
# terms, file names, suggest, checksum) as an admin and as a user who
# reads some private repositories: p50/p99 and mean. Prints markdown
# tables. The program is its own module (bench/searchlib/go.mod), so Depot
# itself does not depend on the library.
#
# Usage: bench/searchlib/run.sh
# Environment (defaults in brackets):
#   ARTIFACTS  artifacts to generate                     [1000000]
#   REPOS      repositories to generate                  [1000]
#   DIR        work directory to keep (empty or new)     [a temporary one]
#   N          queries per measured case, engine and reader [200]
# Quick run (about a minute and a half): ARTIFACTS=100000 REPOS=100 N=50 bench/searchlib/run.sh
# The full run needs roughly 5 GB of disk (extrapolated: the store takes
# about 0.45 GB at 100,000 artifacts).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$here"

say() { echo "searchlib: $*" >&2; }

say "building the bench program"
go build -o "$tmp/searchlib" .
set -- -artifacts "${ARTIFACTS:-1000000}" -repos "${REPOS:-1000}" -n "${N:-200}"
if [ -n "${DIR:-}" ]; then
	set -- "$@" -dir "$DIR"
fi
say "generating ${ARTIFACTS:-1000000} artifacts in ${REPOS:-1000} repositories into a Depot store and two bleve indexes, then measuring (load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown))"
"$tmp/searchlib" "$@"
