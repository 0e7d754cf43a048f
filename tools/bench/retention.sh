#!/usr/bin/env bash
# Memory after many long E2A SSE runs, and how long SIGTERM then takes.
#
#   bash tools/bench/retention.sh [E2A_BIN] [RUNS=100] [CHUNKS=10000]
#
# `e2a serve` (memory, the default E2A binding) with a script agent answering in CHUNKS text
# chunks; RUNS requests with `Accept: text/event-stream`, 4 at a time, each read to its end
# (curl on loopback); then the server's RSS (ended runs are kept for Last-Event-ID within
# `max_retained` runs and `max_retained_bytes`), and the time from SIGTERM to its exit.
set -euo pipefail
BIN=${1:-/tmp/bench-target/release/e2a}
RUNS=${2:-100}
CHUNKS=${3:-10000}
PORT=${PORT:-18956}
[[ -x $BIN ]] || { echo "need $BIN" >&2; exit 2; }
WORK=$(mktemp -d /tmp/e2a-retention.XXXXXX)
python3 - "$CHUNKS" > "$WORK/agent.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"scenarios": [{"name": "long", "match": {"text": "long"},
  "steps": [{"type": "text", "text": "x" * n, "chunk_size": 1},
            {"type": "complete", "result": {"content": "done"}}]}]}))
PY
"$BIN" serve --bind "127.0.0.1:$PORT" --agent "script:$WORK/agent.json" > "$WORK/server.log" 2>&1 &
SP=$!
trap 'kill -9 $SP 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
rss() { awk '/VmRSS/{print $2}' "/proc/$SP/status"; }
before=$(rss)
one() {
  curl -s -N -H 'Content-Type: application/json' -H 'Accept: text/event-stream' \
    -d '{"method":"chat.send","params":{"query":"long"}}' "http://127.0.0.1:$PORT/v1/e2a/requests" | grep -c '^data:'
}
export -f one; export PORT
start=$(date +%s.%N)
frames=$(seq 1 "$RUNS" | xargs -P 4 -I{} bash -c one | awk '{s+=$1} END {print s}')
secs=$(echo "$(date +%s.%N) - $start" | bc)
sleep 1
after=$(rss)
t0=$(date +%s.%N)
kill -TERM $SP
while kill -0 $SP 2>/dev/null; do sleep 0.05; done
exit_secs=$(echo "$(date +%s.%N) - $t0" | bc)
printf 'runs=%s chunks=%s frames_read=%s load_secs=%.1f rss_before=%.1f MiB rss_after=%.1f MiB sigterm_exit_secs=%.2f\n' \
  "$RUNS" "$CHUNKS" "$frames" "$secs" "$(echo "$before/1024" | bc -l)" "$(echo "$after/1024" | bc -l)" "$exit_secs"
