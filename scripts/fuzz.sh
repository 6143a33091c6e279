#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a fixed time each (CI: 20 s; a longer run for the note:
# FUZZ_SECONDS=3600 scripts/fuzz.sh), starting from the committed corpora in fuzz/corpus/<target>. A crash
# fails the run; the input that crashed is in fuzz/artifacts/<target>/. Uses cargo-fuzz (installed from
# crates.io when missing) on the stable toolchain with RUSTC_BOOTSTRAP=1 for the sanitizer flags.
#
#   scripts/fuzz.sh [TARGET...]     default: every target
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(h1_request h1_response router declarative admin_body cluster_frames)
fi
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds}s"
  # A copy of the corpus: what a run finds is kept out of the committed seeds unless copied back by hand.
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$t/." "$work/"
  log=$(mktemp)
  set +e
  cargo fuzz run --fuzz-dir fuzz "$t" "$work" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1
  status=$?
  set -e
  grep -E "^#[0-9]+ *(INITED|DONE)|^Done [0-9]+ runs|SUMMARY|ERROR|panicked" "$log" || true
  [ "$status" = 0 ] || tail -40 "$log"
  rm -f "$log"
  rm -rf "$work"
  [ "$status" = 0 ] || { echo "fuzz: $t failed (see fuzz/artifacts/$t)"; exit 1; }
done
echo "fuzz: every target ran ${seconds}s without a crash"
