#!/bin/sh
# One-off setup of the compose cluster, run by its "setup" service (or by
# hand: ORIGIN=http://127.0.0.1:8080 OUT=./setup sh setup.sh): changes the
# admin's initial password, registers the two edge nodes and writes each
# one's id and credential to $OUT/edge-<n>.env, which the edges read.
# Running it again does nothing once the edges are registered.
set -eu
ORIGIN=${ORIGIN:-http://origin-1:8080}
OUT=${OUT:-/setup}
EDGES=${EDGES:-"edge-1=http://edge-1:8081 edge-2=http://edge-2:8081"}
: "${DEPOT_ADMIN_PASSWORD:?the initial admin password}" "${ADMIN_PASSWORD:?the admin password to set}"

# field NAME: the first "NAME":"value" of the JSON on stdin.
field() { tr ',{}' '\n\n\n' | sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -n 1; }
api() { # METHOD PATH [JSON]: the answer; fails on an error status
  curl -fsS -X "$1" ${TOKEN:+-H "Authorization: Bearer $TOKEN"} -H 'Content-Type: application/json' ${3:+-d "$3"} "$ORIGIN/api/v1$2"
}
login() { TOKEN= api POST /auth/login "{\"username\":\"admin\",\"password\":\"$1\"}" 2>/dev/null | field access_token; }

echo "waiting for $ORIGIN"
until curl -fsS "$ORIGIN/api/v1/health" >/dev/null 2>&1; do sleep 1; done
mkdir -p "$OUT"
TOKEN=$(login "$ADMIN_PASSWORD" || true)
if [ -z "$TOKEN" ]; then
  TOKEN=$(login "$DEPOT_ADMIN_PASSWORD")
  [ -n "$TOKEN" ] || { echo "cannot log in as admin with either password" >&2; exit 1; }
  api PUT /users/me "{\"current_password\":\"$DEPOT_ADMIN_PASSWORD\",\"password\":\"$ADMIN_PASSWORD\"}" >/dev/null
  TOKEN=$(login "$ADMIN_PASSWORD")
  echo "changed the admin's initial password"
fi
for edge in $EDGES; do
  name=${edge%%=*} url=${edge#*=}
  if [ -s "$OUT/$name.env" ]; then echo "$name: registered already"; continue; fi
  answer=$(api POST /edge-nodes "{\"name\":\"$name\",\"url\":\"$url\"}")
  id=$(echo "$answer" | field id) token=$(echo "$answer" | field token)
  [ -n "$id" ] && [ -n "$token" ] || { echo "$name: unexpected answer: $answer" >&2; exit 1; }
  umask 077
  printf 'DEPOT_NODE_ID=%s\nDEPOT_NODE_TOKEN=%s\n' "$id" "$token" > "$OUT/$name.env.tmp"
  mv "$OUT/$name.env.tmp" "$OUT/$name.env"
  echo "$name: registered as $id"
done
