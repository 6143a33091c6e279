# Sourced by scripts/instructions.sh and scripts/nginx-instructions.sh: what both do around the gateway they
# count. Start the upstream, run the gateway under callgrind twice (500 and 2500 keep-alive requests from
# one client) and print the difference / 2000, so start-up and shutdown cancel out.
#
# The sourcing script sets PERF (sluice-perf) and defines `count N`: start its gateway under
# `valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out"`, send N requests with `send`, stop it.

WORK=$(mktemp -d)
trap 'kill $UP 2>/dev/null || true; [ -n "${KEEP_CALLGRIND:-}" ] && cp "$WORK/cg.out" "$KEEP_CALLGRIND"; rm -rf "$WORK"' EXIT

# A free TCP port on 127.0.0.1.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

UPSTREAM=127.0.0.1:$(port)
"$PERF" upstream --listen "$UPSTREAM" >/dev/null 2>&1 &
UP=$!

# The gateway's config: case_config CASE writes `sluice-perf gen-config`'s config of CASE (its upstream the
# one started above) to CONFIG.
CONFIG=$WORK/config.yml
case_config() { "$PERF" gen-config --case "$1" --upstream "$UPSTREAM" --out "$CONFIG" 2>/dev/null; }

# send N PORT PATH HEADER [STATUS]: N keep-alive GETs (over TLS when HTTPS is set).
send() { python3 "$(dirname "${BASH_SOURCE[0]}")/keepalive_get.py" "$1" "$2" "$3" "$4" "${HTTPS:-}" ${5:+"$5"}; }

# start_sluice BIN CONFIG LISTEN STATUS_PORT: starts sluice (1 worker) under callgrind in the background, its
# pid in VG, and waits until its status listener says it is ready.
start_sluice() {
  local admin
  admin=$(port)
  rm -rf "$WORK/p"
  SLUICE_WORKER_THREADS=1 SLUICE_PROXY_LISTEN="$3" SLUICE_ADMIN_LISTEN=127.0.0.1:$admin \
    SLUICE_STATUS_LISTEN=127.0.0.1:$4 SLUICE_LOG_LEVEL=warn \
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "$1" start --config "$2" \
    --prefix "$WORK/p" >"$WORK/log" 2>&1 &
  VG=$!
  # Up to 2 minutes: callgrind starts slowly on a loaded machine. A gateway that never gets ready fails the
  # count loudly instead of counting requests that were refused.
  for _ in $(seq 1 600); do
    curl -sf -o /dev/null "http://127.0.0.1:$4/status/ready" && return 0
    sleep 0.2
  done
  echo "sluice under callgrind was not ready after 2 minutes; its log:" >&2
  tail -20 "$WORK/log" >&2
  kill $VG 2>/dev/null || true
  exit 1
}

# The instruction total callgrind wrote.
total() { awk '/^summary:/ {print $2}' "$WORK/cg.out"; }

# per_request LABEL: runs `count` with 500 and 2500 requests and prints the difference per request.
per_request() {
  local small large
  small=$(count 500)
  large=$(count 2500)
  echo "$(((large - small) / 2000)) instructions per request ($1)"
}
