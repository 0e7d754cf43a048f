#!/usr/bin/env bash
# Server instructions per request under callgrind: deterministic (no wall time, no machine load),
# for A/B comparisons of gateway builds where the side-by-side figures are too noisy.
#
#   bash tools/bench/callgrind-server.sh [N] BIN [BIN ...]
#
# For each `e2a` binary: `e2a serve --agent echo` under `valgrind --tool=callgrind` on a
# loopback port, one warm-up E2A JSON echo request, then N more (default 400), each on a new
# connection (curl); a run with no requests after the warm-up is subtracted, so the figure is the
# server's instructions for one request: accept, HTTP, the run and its answer.
set -euo pipefail
N=400
if [[ ${1:-} =~ ^[0-9]+$ ]]; then N=$1; shift; fi
(( $# > 0 )) || { echo "usage: $0 [N] BIN [BIN ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }
PORT=${PORT:-18990}
BODY='{"method":"chat.send","params":{"query":"hello"}}'

# count BIN REQUESTS -> the server's total instructions
count() {
  local out pid
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" serve --agent echo --bind "127.0.0.1:$PORT" \
    >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.2; done
  for _ in $(seq 0 "$2"); do
    curl -s -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json' \
      -d "$BODY" "http://127.0.0.1:$PORT/v1/e2a/requests"
  done
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
  rm -f "$out"
}

printf '%-50s %14s\n' "binary" "instr/request"
for bin in "$@"; do
  idle=$(count "$bin" 0)
  busy=$(count "$bin" "$N")
  printf '%-50s %14d\n' "$bin" $(( (busy - idle) / N ))
done
