#!/usr/bin/env bash
# run.sh: Kong's own validator (validate.lua) on everything Sluice claims Kong takes:
#  (a) Sluice's `GET /config` export of every fidelity fixture, every examples/ file and every inputs/ file
#      (this harness's own: every plugin, rich plugin configs, every entity kind), against Kong 3.9.1;
#  (b) the fixtures themselves, each against the Kong of its own tag (3.0.2, 3.4.2, 3.9.1; 2.x files
#      against 3.9.1, which reads 1.1/2.1 files too; decK's dump is shown but not counted);
#  (c) refused.yaml, which must fail with exactly refused.expected (the validator can fail).
# Usage: run.sh <kong-3.9.1 checkout> [<kong-3.4.2 checkout> <kong-3.0.2 checkout>]
#   The 3.4.2 and 3.0.2 checkouts default to kong-3.4.2 and kong-3.0.2 beside the 3.9.1 one; a missing
#   one skips its fixtures. SLUICE_BIN names the binary (default: target/debug/sluice of the repo, or
#   $CARGO_TARGET_DIR/debug/sluice). OUT (default /tmp/kong_validate) keeps every export and log.
# Exits 1 when anything Kong refuses, or refused.yaml stops failing as expected.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../../.." && pwd)
fixtures="$here/.."
k39=${1:?usage: run.sh <kong-3.9.1 checkout> [<kong-3.4.2 checkout> <kong-3.0.2 checkout>]}
k34=${2:-$(dirname "$k39")/kong-3.4.2}
k30=${3:-$(dirname "$k39")/kong-3.0.2}
bin=${SLUICE_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/sluice}
out=${OUT:-/tmp/kong_validate}
mkdir -p "$out"
status=0
validate() { luajit "$here/validate.lua" "$@" || status=1; }

# Three free local ports (proxy, admin, status), asked of the kernel.
free_ports() {
  python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

# Starts Sluice on $1, writes its `GET /config` document to $2 and answers 0; 1 when Sluice refuses the
# file or never gets ready (its log is then $2.log).
export_of() {
  local file=$1 dest=$2 prefix pid ready=no
  read -r proxy admin st <<<"$(free_ports)"
  prefix=$(mktemp -d)
  SLUICE_PROXY_LISTEN="127.0.0.1:$proxy" SLUICE_ADMIN_LISTEN="127.0.0.1:$admin" \
    SLUICE_STATUS_LISTEN="127.0.0.1:$st" SLUICE_PREFIX="$prefix" \
    "$bin" start --config "$file" >"$dest.log" 2>&1 &
  pid=$!
  for _ in $(seq 150); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$st/status/ready")" = 200 ]; then
      ready=yes
      break
    fi
    sleep 0.1
  done
  if [ $ready = yes ]; then
    # Kong's DB-less `GET /config` answers {"config": "<YAML document>"}.
    curl -s "127.0.0.1:$admin/config" | jq -r .config >"$dest"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -rf "$prefix"
  [ $ready = yes ] && [ -s "$dest" ]
}

echo "== (a) Sluice's GET /config exports against Kong 3.9.1"
[ -x "$bin" ] || { echo "no Sluice binary at $bin (cargo build -p sluice)"; exit 2; }
for f in "$fixtures"/*.yaml "$repo"/examples/*.yml "$repo"/examples/*.json "$here"/inputs/*; do
  name=$(basename "$f")
  dest="$out/export-${name%.*}.yaml"
  if export_of "$f" "$dest"; then
    validate "$k39" "$dest"
  else
    echo "$name: Sluice did not start on it (skipped): $(grep -m1 -i error "$dest.log" | cut -c1-200)"
  fi
done

echo "== (b) the fixtures (and inputs/) against Kong of their own tag"
for f in "$fixtures"/*.yaml "$here"/inputs/*; do
  case $(basename "$f") in
    kong-3.0-*) k=$k30 ;;
    kong-3.4-*) k=$k34 ;;
    *) k=$k39 ;;
  esac
  if [ ! -d "$k/kong" ]; then
    echo "$(basename "$f"): no checkout at $k (skipped)"
  elif [ "${f##*/deck-}" != "$f" ]; then
    # decK's format (`_info`, nesting decK resolves itself) is not Kong's input: shown, not counted.
    echo "-- $(basename "$k") (decK's format: shown, not counted)"
    luajit "$here/validate.lua" "$k" "$f"
  else
    echo "-- $(basename "$k")"
    validate "$k" "$f"
  fi
done

echo "== (c) refused.yaml must be refused, with Kong's messages"
luajit "$here/validate.lua" "$k39" "$here/refused.yaml" | sed "s|$here/||" >"$out/refused.out"
if diff -u "$here/refused.expected" "$out/refused.out"; then
  echo "refused.yaml: refused as expected"
else
  echo "refused.yaml: not refused as refused.expected says"
  status=1
fi
exit $status
