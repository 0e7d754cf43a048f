#!/usr/bin/env bash
# Instruction counts per operation under callgrind (deterministic: independent of machine load),
# each next to its derive-only baseline, as ratios. Usage: benches/callgrind.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
cargo bench --bench callgrind --no-run --locked -q 2>/dev/null
BIN=$(ls -t target/release/deps/callgrind-* | grep -v '\.d$' | head -1)
count() { # op iterations -> total instructions
  local out; out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" "$1" "$2" >/dev/null 2>&1
  local ir; ir=$(grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}')
  rm -f "$out"; echo "$ir"
}
per_op() { # op -> instructions per iteration (a zero-iteration run subtracted)
  local a b; a=$(count "$1" "$N"); b=$(count "$1" 0)
  echo $(( (a - b) / N ))
}
printf '%-28s %12s %8s\n' "op" "instr/op" "ratio"
for pair in "roundtrip_derive roundtrip_lenient roundtrip_lenient_legacy" "read_derive read_lenient read_strict"; do
  set -- $pair; base=$(per_op "$1")
  printf '%-28s %12d %8s\n' "$1" "$base" "1.00x"
  shift
  for op in "$@"; do
    v=$(per_op "$op")
    printf '%-28s %12d %7.2fx\n' "$op" "$v" "$(echo "scale=4; $v / $base" | bc)"
  done
done
