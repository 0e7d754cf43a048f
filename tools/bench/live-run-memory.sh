#!/usr/bin/env bash
# A live run's memory: one E2A SSE run of FRAMES text chunks, with `server.max_run_kib` at its
# default and at BIG_KIB (as good as no budget), the server's peak RSS (VmHWM) for each.
#
#   bash tools/bench/live-run-memory.sh [E2A_BIN] [FRAMES=200000] [BIG_KIB=4194304]
#
# `e2a serve` (memory, the default E2A binding) with a script agent answering in FRAMES text
# chunks of one character, then completing; one request with `Accept: text/event-stream`, read
# to its end by curl on loopback (the frames counted). The run keeps its frames for
# `Last-Event-ID` while it goes on: past `max_run_kib` the oldest are forgotten.
set -euo pipefail
BIN=${1:-/tmp/bench-target/release/e2a}
FRAMES=${2:-200000}
BIG_KIB=${3:-4194304}
PORT=${PORT:-18957}
[[ -x $BIN ]] || { echo "need $BIN" >&2; exit 2; }
WORK=$(mktemp -d /tmp/e2a-live-run.XXXXXX)
trap 'kill -9 ${SP:-} 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 - "$FRAMES" > "$WORK/agent.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"scenarios": [{"name": "long", "match": {"text": "long"},
  "steps": [{"type": "text", "text": "x" * n, "chunk_size": 1},
            {"type": "complete", "result": {"content": "done"}}]}]}))
PY
one_run() { # KIB (empty: the default)
  local conf=$WORK/c.toml
  : >"$conf"
  if [[ -n $1 ]]; then printf '[server]\nmax_run_kib = %s\n' "$1" >"$conf"; fi
  "$BIN" serve --config "$conf" --bind "127.0.0.1:$PORT" --agent "script:$WORK/agent.json" >"$WORK/server.log" 2>&1 &
  SP=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
  local idle frames peak
  idle=$(awk '/VmRSS/{print $2}' "/proc/$SP/status")
  frames=$(curl -s -N -H 'Content-Type: application/json' -H 'Accept: text/event-stream' \
    -d '{"method":"chat.send","request_id":"long-1","params":{"query":"long"}}' \
    "http://127.0.0.1:$PORT/v1/e2a/requests" | grep -c '^data:')
  peak=$(awk '/VmHWM/{print $2}' "/proc/$SP/status")
  kill -TERM "$SP"; wait "$SP" 2>/dev/null || true
  printf '| %s | %s | %.1f | %.1f |\n' "${1:-16384 (default)}" "$frames" "$(echo "$idle/1024" | bc -l)" "$(echo "$peak/1024" | bc -l)"
}
echo "| max_run_kib | frames read | RSS idle (MiB) | peak RSS (MiB) |"
echo "|---|---|---|---|"
one_run ""
one_run "$BIG_KIB"
