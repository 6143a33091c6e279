#!/usr/bin/env bash
# User-space instructions per proxied request, counted by callgrind: repeatable to a few tenths of a percent
# whatever else the machine is doing (unlike RPS). Kernel work (loopback TCP) is not counted.
#
#   scripts/instructions.sh [SLUICE_BIN] [CASE] [PATH] [HEADER]
#   defaults: target/release/sluice, no-plugins (any `sluice-perf gen-config` case, e.g. rl-key-auth@100),
#   /r0, no extra header (e.g. "apikey: key-0" for the key-auth cases)
#   HTTPS=1 sends the requests over TLS (one keep-alive TLS connection; the handshake cancels out).
#
# Runs sluice (1 worker) under valgrind twice, with 500 and 2500 keep-alive requests from one client, and
# prints the difference / 2000, so start-up and shutdown cancel out (scripts/callgrind-lib.sh). Needs valgrind and a release build
# of sluice-perf (for its upstream).
set -euo pipefail
BIN=${1:-target/release/sluice}
CASE=${2:-no-plugins}
URL_PATH=${3:-/r0}
HEADER=${4:-}
PERF=${PERF:-target/release/sluice-perf}
source "$(dirname "$0")/callgrind-lib.sh"
case_config "$CASE"
count() {
  local n=$1 proxy=$(port) status=$(port)
  local listen=127.0.0.1:$proxy
  [ -n "${HTTPS:-}" ] && listen="$listen ssl"
  start_sluice "$BIN" "$CONFIG" "$listen" "$status"
  send "$n" "$proxy" "$URL_PATH" "$HEADER"
  kill -TERM $VG
  wait $VG || true
  total
}
per_request "$BIN, $CASE, $URL_PATH"
