#!/usr/bin/env bash
# User-space instructions per unary gRPC call through the gateway (the grpc-unary case), counted by
# callgrind: the A/B figure for the gRPC path, steady where calls/s are not.
#
#   scripts/grpc-instructions.sh [SLUICE_BIN] [STREAMS] [FEW] [MANY]
#   defaults: target/release/sluice, 10 calls in flight on one h2c connection, 2000 and 10000 calls
#
# Runs sluice (1 worker) under valgrind twice; each time h2load (nghttp2-client) makes exactly FEW (then
# MANY) calls with STREAMS in flight, and prints the difference / (MANY - FEW), so start-up and shutdown
# cancel out. Kernel work is not counted. Needs valgrind, h2load and a release build of sluice-perf (for
# its h2c gRPC upstream; PERF=...).
set -euo pipefail
BIN=${1:-target/release/sluice}
STREAMS=${2:-10}
FEW=${3:-2000}
MANY=${4:-10000}
PERF=${PERF:-target/release/sluice-perf}
source "$(dirname "$0")/callgrind-lib.sh"
case_config grpc-unary
# The case's message: a 6-byte protobuf in gRPC's 5-byte frame.
printf '\0\0\0\0\006\n\004ping' >"$WORK/body"
count() {
  local n=$1 proxy=$(port) status=$(port)
  start_sluice "$BIN" "$CONFIG" "127.0.0.1:$proxy" "$status"
  h2load -n "$n" -c 1 -m "$STREAMS" -d "$WORK/body" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$proxy/perf.R0/Unary" >"$WORK/load" 2>&1 || { cat "$WORK/load" >&2; exit 1; }
  grep -q "$n succeeded" "$WORK/load" || { cat "$WORK/load" >&2; exit 1; }
  kill -TERM $VG
  wait $VG || true
  total
}
small=$(count "$FEW")
large=$(count "$MANY")
echo "$(( (large - small) / (MANY - FEW) )) instructions per call ($STREAMS in flight)"
