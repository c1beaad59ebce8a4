#!/bin/sh
# Bad-password flood: for each number of connections and each variant, a
# fresh origin (temporary data directory, loopback ports) takes a flood of
# wrong HTTP Basic passwords from 127.0.0.1 while good sign-ins from
# 127.0.0.2 are timed and the origin's memory is sampled (see
# bench/cmd/authflood). Prints one markdown table.
#
# Usage: bench/auth-flood.sh [depot-binary]
#   Without an argument the depot binary is built from this tree.
# Environment (defaults in brackets):
#   CONNS     concurrent flood requests, one run each   [200 400]
#   VARIANTS  random (random usernames) and/or user (admin, wrong passwords) [random user]
#   DURATION  flood duration per run                    [30s]
#   PATHS     comma-separated paths the flood cycles through
#             [/generic/bench/x/1.0/x.bin,/api/v1/users/me,/v2/token?service=depot]
#   SPREAD    source addresses the flood is spread over, from 127.0.0.1 [1]
#   MAX_RSS_MIB  stop a flood early once the origin passes this RSS [0: never]
#   ORIGIN_FLAGS extra flags for `depot origin`, e.g. --rate-limit-auth-failures 20 []
# Quick run: CONNS=50 VARIANTS=random DURATION=5s bench/auth-flood.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$root"

say() { echo "auth-flood: $*" >&2; }

if [ $# -ge 1 ]; then
	depot=$1
else
	say "building depot"
	depot="$work/depot"
	go build -o "$depot" ./cmd/depot
fi
say "building the load generator"
go build -o "$work/authflood" ./bench/cmd/authflood

initial="bench-initial-Pw-1"
password="bench-Secret-Pw-2"

# json_field NAME: the string value of NAME in the JSON on stdin.
json_field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

# api METHOD PATH TOKEN BODY: a JSON API call; fails on a non-2xx answer.
api() {
	auth="X-No-Auth: 1"
	if [ -n "$3" ]; then auth="Authorization: Bearer $3"; fi
	curl -sS --fail-with-body -X "$1" -H "Content-Type: application/json" -H "$auth" -d "$4" "$url$2"
}

start_origin() {
	ports=$("$work/authflood" -free-addrs 2)
	http_port=$(echo "$ports" | sed -n 1p)
	raft_port=$(echo "$ports" | sed -n 2p)
	url="http://127.0.0.1:$http_port"
	data="$work/data-$1"
	DEPOT_ADMIN_PASSWORD=$initial "$depot" origin --listen "127.0.0.1:$http_port" \
		--raft-addr "127.0.0.1:$raft_port" --data-dir "$data" ${ORIGIN_FLAGS:-} >"$work/origin.log" 2>&1 &
	pid=$!
	i=0
	until curl -sf -o /dev/null "$url/api/v1/health"; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
			say "origin did not come up:"
			cat "$work/origin.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	# The initial password must be changed before anything else is allowed.
	token=$(api POST /api/v1/auth/login "" "{\"username\":\"admin\",\"password\":\"$initial\"}" | json_field access_token)
	api PUT /api/v1/users/me "$token" "{\"current_password\":\"$initial\",\"password\":\"$password\"}" >/dev/null
	token=$(api POST /api/v1/auth/login "" "{\"username\":\"admin\",\"password\":\"$password\"}" | json_field access_token)
	api POST /api/v1/repositories "$token" '{"name":"bench","format":"generic"}' >/dev/null
}

stop_origin() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
}

header=-header
for c in ${CONNS:-200 400}; do
	for v in ${VARIANTS:-random user}; do
		say "$c connections, variant $v: starting a fresh origin"
		start_origin "$c-$v"
		say "origin pid $pid on $url; flooding for ${DURATION:-30s} (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
		"$work/authflood" $header -url "$url" -pid "$pid" -password "$password" -c "$c" -variant "$v" \
			-d "${DURATION:-30s}" -spread "${SPREAD:-1}" -max-rss-mib "${MAX_RSS_MIB:-0}" \
			-paths "${PATHS:-/generic/bench/x/1.0/x.bin,/api/v1/users/me,/v2/token?service=depot}" \
			| tee -a "$work/table" >&2
		header=""
		stop_origin
	done
done
say "done"
echo
cat "$work/table"
