#!/bin/sh
# Security scans: reading the advisory database (the real OSV data the
# tests use, 10,471 records) and matching trees of 1,000 packages against
# it, in process. Usage: bench/scan.sh [count]
set -e
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'Build|Scan1000' -benchtime "${1:-10}x" ./shared/vuln
