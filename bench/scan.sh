#!/bin/sh
# Security scans: reading the advisory database (the real OSV data the
# tests use, 10,471 records) and matching trees of 1,000 packages against
# it; reading a package-lock.json of 1,000 dependencies and matching it;
# scanning a 300 MB image (three gzip'd layers, generated once into the
# system's temporary directory, about 175 MB) beside only unpacking it,
# with the scan's heap peak. All in process. Usage: bench/scan.sh [count]
set -e
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'Build|Scan1000' -benchtime "${1:-10}x" ./shared/vuln
go test -run '^$' -bench 'Image|Lockfile1000' -benchtime "${1:-10}x" ./origin/service/scan/inventory
