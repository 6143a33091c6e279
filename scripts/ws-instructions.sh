#!/usr/bin/env bash
# User-space instructions per WebSocket message through a tunnel (the ws-echo case), counted by callgrind.
#
#   scripts/ws-instructions.sh [SLUICE_BIN] [TUNNELS] [FEW] [MANY]
#   defaults: target/release/sluice, 1 tunnel, 200 and 1000 messages per tunnel
#
# Runs sluice (1 worker) under valgrind twice; each time `sluice-perf ws-load --messages` opens TUNNELS
# tunnels and echoes exactly FEW (then MANY) 64-byte messages on each, one in flight per tunnel. Prints
# the difference / ((MANY - FEW) * TUNNELS), so start-up, the handshakes and shutdown cancel out: what is
# left is the tunnel's copying, both ways, per echoed message. Kernel work is not counted. Needs valgrind
# and a release build of sluice-perf with `ws-load --messages` (PERF=...).
set -euo pipefail
BIN=${1:-target/release/sluice}
TUNNELS=${2:-1}
FEW=${3:-200}
MANY=${4:-1000}
PERF=${PERF:-target/release/sluice-perf}
source "$(dirname "$0")/callgrind-lib.sh"
case_config ws-echo
count() {
  local n=$1 proxy=$(port) status=$(port)
  start_sluice "$BIN" "$CONFIG" "127.0.0.1:$proxy" "$status"
  "$PERF" ws-load --url "http://127.0.0.1:$proxy" --tunnels "$TUNNELS" --messages "$n" >"$WORK/load" 2>&1 \
    || { cat "$WORK/load" >&2; exit 1; }
  grep -q '"errors":0' "$WORK/load" || { cat "$WORK/load" >&2; exit 1; }
  kill -TERM $VG
  wait $VG || true
  total
}
small=$(count "$FEW")
large=$(count "$MANY")
echo "$(((large - small) / ((MANY - FEW) * TUNNELS))) instructions per message ($TUNNELS tunnels)"
