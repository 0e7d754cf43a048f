#!/usr/bin/env bash
# Run fuzz targets for SECONDS each (default 600), JOBS at a time (default 1), seeded from the
# conformance vectors. Needs cargo-fuzz; stable Rust works with RUSTC_BOOTSTRAP=1.
# Usage: fuzz/run.sh [SECONDS] [JOBS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")"
secs=${1:-600}; jobs=${2:-1}; shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(strict_reader lenient_reader wire_parse acp_ingress a2a_ingress agui_ingress prompt_blocks uri_to_path conformance_fns)
python3 seed.py
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O || exit 2
mkdir -p logs
run() {
  if cargo fuzz run -O "$1" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 > "logs/$1.log" 2>&1; then
    echo "$1: ok, $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "logs/$1.log")"
  else
    echo "$1: FAILED (see fuzz/logs/$1.log and fuzz/artifacts/$1/)"
  fi
}
i=0
for t in "${targets[@]}"; do
  run "$t" &
  i=$((i+1))
  if [ $((i % jobs)) -eq 0 ]; then wait; fi
done
wait
