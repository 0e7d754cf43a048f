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
#
# CASE picks the request (default e2a):
#   e2a         E2A JSON echo (`--agent echo`), POST /v1/e2a/requests
#   a2a-send    A2A JSON-RPC SendMessage, memory store, the peer's work (tools/bench/minimal-agent.json)
#   a2a-stream  the same as SendStreamingMessage (SSE)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=400
if [[ ${1:-} =~ ^[0-9]+$ ]]; then N=$1; shift; fi
(( $# > 0 )) || { echo "usage: $0 [N] BIN [BIN ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }
PORT=${PORT:-18990}
CASE=${CASE:-e2a}
A2A_MESSAGE='"params":{"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
case $CASE in
  e2a)
    SERVE=(--agent echo) URL_PATH=/v1/e2a/requests ACCEPT=application/json
    BODY='{"method":"chat.send","params":{"query":"hello"}}' ;;
  a2a-send | a2a-stream)
    SERVE=(--a2a --store memory --agent "script:$HERE/minimal-agent.json") URL_PATH=/a2a
    method=SendMessage ACCEPT=application/json
    [[ $CASE == a2a-stream ]] && method=SendStreamingMessage ACCEPT=text/event-stream
    BODY='{"jsonrpc":"2.0","id":1,"method":"'$method'",'$A2A_MESSAGE ;;
  *) echo "unknown CASE $CASE (e2a, a2a-send or a2a-stream)" >&2; exit 2 ;;
esac

# count BIN REQUESTS -> the server's total instructions
count() {
  local out pid
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" serve "${SERVE[@]}" --bind "127.0.0.1:$PORT" \
    >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.2; done
  for i in $(seq 0 "$2"); do
    # (a message id of its own per request: A2A sends are remembered by it)
    curl -s -o /dev/null -H 'Content-Type: application/json' -H "Accept: $ACCEPT" -H 'A2A-Version: 1.0' \
      -d "${BODY//%d/$i}" "http://127.0.0.1:$PORT$URL_PATH"
  done
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
  rm -f "$out"
}

printf '%-50s %14s\n' "binary ($CASE)" "instr/request"
for bin in "$@"; do
  idle=$(count "$bin" 0)
  busy=$(count "$bin" "$N")
  printf '%-50s %14d\n' "$bin" $(( (busy - idle) / N ))
done
