#!/usr/bin/env bash
# The performance gate: user-space instructions per proxied request (callgrind, scripts/instructions.sh) for
# the main cases, compared with the committed baseline perf/instructions-baseline.txt. Fails when a case
# costs more than the baseline by over 2%. Instruction counts, unlike RPS, repeat to a few tenths of a
# percent whatever else the machine is doing, so the gate can be strict without being flaky. The exception is
# http-log: it also counts the sluice-log thread's deliveries, whose batching follows the machine's load
# (47.7k-48.7k for one binary); run the gate on an otherwise idle machine.
#
#   scripts/perf-gate.sh            build release, count, compare (what CI runs)
#   scripts/perf-gate.sh --update   count and rewrite the baseline: commit it as its own, reviewed change
#
# A case that got cheaper by over 2% is reported too: lock the gain in with --update.
set -euo pipefail
cd "$(dirname "$0")/.."
BASELINE=perf/instructions-baseline.txt
LIMIT_PCT=2

cargo build --release -q -p sluice -p sluice-perf
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
export PERF="$target_dir/release/sluice-perf"
BIN="$target_dir/release/sluice"

# case, https (0/1), extra header: the cases the gate watches.
CASES=(
  "no-plugins 0 -"
  "no-plugins 1 -"
  "rate-limiting 0 -"
  "rl-key-auth 0 apikey:_key-0"
  "http-log 0 -"
)

count() { # CASE HTTPS HEADER -> instructions per request
  local header=${3//_/ }
  [ "$header" = "-" ] && header=""
  local https=""
  [ "$2" = 1 ] && https=1
  HTTPS=$https scripts/instructions.sh "$BIN" "$1" /r0 "$header" | awk '{print $1}'
}

if [ "${1:-}" = "--update" ]; then
  {
    echo "# Instructions per proxied request (scripts/perf-gate.sh --update, $(date -u +%F), $(uname -m))."
    echo "# case https header instructions"
    for c in "${CASES[@]}"; do
      read -r name https header <<<"$c"
      echo "$name $https $header $(count "$name" "$https" "$header")"
    done
  } >"$BASELINE.new"
  mv "$BASELINE.new" "$BASELINE"
  cat "$BASELINE"
  exit 0
fi

failed=0
printf '%-16s %-5s %10s %10s %8s\n' case https baseline now change
while read -r name https header base; do
  case "$name" in '#'* | '') continue ;; esac
  now=$(count "$name" "$https" "$header")
  pct=$(python3 -c "print(f'{($now - $base) * 100 / $base:+.2f}')")
  verdict=""
  if python3 -c "import sys; sys.exit(0 if $now > $base * (1 + $LIMIT_PCT / 100) else 1)"; then
    verdict="  REGRESSION over ${LIMIT_PCT}%"
    failed=1
  elif python3 -c "import sys; sys.exit(0 if $now < $base * (1 - $LIMIT_PCT / 100) else 1)"; then
    verdict="  cheaper: lock it in with --update"
  fi
  printf '%-16s %-5s %10s %10s %7s%%%s\n' "$name" "$https" "$base" "$now" "$pct" "$verdict"
done <"$BASELINE"
if [ "$failed" = 1 ]; then
  echo "perf gate: instructions per request regressed (see above)" >&2
  exit 1
fi
echo "perf gate: passed"
