#!/usr/bin/env bash
# The whole test suite, exactly what CI runs: tools, formatting, lints, unit + integration tests (the
# differential suite starts Debian's nginx), `sluice config check` over every example config, a smoke run of
# the perf framework, a short run of every fuzz target, and the performance gate (callgrind instruction counts against a committed baseline).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# A fresh clone gains nothing from incremental compilation, and its caches would take disk beside ~90
# test binaries.
[ "${CI:-}" = true ] && export CARGO_INCREMENTAL=0

step "tools"
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v h2load >/dev/null 2>&1 || need+=(nghttp2-client)
command -v psql >/dev/null 2>&1 || need+=(postgresql-client)
{ command -v nft && command -v ip; } >/dev/null 2>&1 || need+=(nftables iproute2)
{ command -v slapd || [ -x /usr/sbin/slapd ]; } >/dev/null 2>&1 && command -v ldappasswd >/dev/null 2>&1 || need+=(slapd ldap-utils)
luajit -e "require('cjson')" >/dev/null 2>&1 || need+=(luajit lua-cjson)
pg_ready() { psql -h 127.0.0.1 -U postgres -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; }
pg_ready || command -v pg_ctlcluster >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing ${need[*]} (install them, or run as root): the differential suite and the perf gate need them" >&2
  fi
fi
step "services: Redis on 127.0.0.1:6379"
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --logfile /tmp/sluice-ci-redis.log
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
step "services: PostgreSQL on 127.0.0.1:5432 (user postgres, trust); DB-mode tests make and drop their own databases"
if ! pg_ready; then
  cluster=$(pg_lsclusters -h 2>/dev/null | awk 'NR==1 {print $1" "$2}')
  if [ -n "$cluster" ]; then
    # shellcheck disable=SC2086
    pg_ctlcluster $cluster start || true
    conf=$(ls /etc/postgresql/*/main/pg_hba.conf 2>/dev/null | head -1)
    if [ -n "$conf" ] && ! grep -q 'sluice-ci' "$conf"; then
      sed -i '1i host all all 127.0.0.1/32 trust # sluice-ci' "$conf"
      # shellcheck disable=SC2086
      pg_ctlcluster $cluster reload || true
    fi
  fi
  for _ in $(seq 1 50); do pg_ready && break; sleep 0.2; done
  pg_ready || { echo "PostgreSQL is not reachable on 127.0.0.1:5432 as postgres" >&2; exit 1; }
fi
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy || true
step "python packages for the tests' independent clients (PyJWT, cryptography, websockets, opentelemetry-proto, grpcio)"
python3 -c 'import jwt, cryptography, websockets, opentelemetry.proto, grpc' 2>/dev/null \
  || python3 -m pip install -q --disable-pip-version-check pyjwt cryptography websockets opentelemetry-proto grpcio

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo build"
cargo build --workspace --all-targets
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
sluice="$target_dir/debug/sluice"

step "sluice config check examples/*"
for f in examples/*.yml examples/*.yaml examples/*.json; do
  [ -e "$f" ] || continue
  "$sluice" config check "$f"
done

step "cargo test"
cargo test --workspace --no-fail-fast

if command -v wrk >/dev/null 2>&1 && command -v nginx >/dev/null 2>&1; then
  step "sluice-perf smoke (numbers are not checked)"
  out=$(mktemp -d)
  cases=(--case no-plugins --case ws-echo)
  command -v h2load >/dev/null 2>&1 && cases+=(--case grpc-unary)
  "$target_dir/debug/sluice-perf" run "${cases[@]}" --target "bin:$sluice" --target nginx \
    --reps 1 --duration 2s --warmup 1s --connections 10 --out "$out"
fi
step "fuzz: every target for ${FUZZ_SECONDS:-20} s from the committed corpora"
scripts/fuzz.sh

step "perf gate: instructions per request against perf/instructions-baseline.txt"
scripts/perf-gate.sh

echo
echo "all checks passed"
