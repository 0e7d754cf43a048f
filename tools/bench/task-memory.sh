#!/usr/bin/env bash
# Memory per stored task: `e2a serve --a2a --store memory` under SendMessage load for SECS
# seconds (after 1 s of warm-up), RSS before and after divided by the tasks the load made.
# Usage: bash tools/bench/task-memory.sh [E2A_BIN] [AGENT=echo] [SECS=6]
# The server listens on 127.0.0.1 only and is stopped at the end; the load generator is
# tools/bench's own (`cargo build --release --manifest-path tools/bench/Cargo.toml`).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${1:-/tmp/bench-target/release/e2a}
AGENT=${2:-echo}
SECS=${3:-6}
PORT=${PORT:-18955}
LOADGEN=$HERE/target/release/loadgen
[[ -x $BIN && -x $LOADGEN ]] || { echo "need $BIN and $LOADGEN" >&2; exit 2; }
WORK=$(mktemp -d /tmp/e2a-taskmem.XXXXXX)
echo '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"mem-{{n}}","role":"ROLE_USER","parts":[{"text":"hello"}]}}}' > "$WORK/body.json"
pin() { if taskset -c "$1" true 2>/dev/null; then taskset -c "$@"; else shift; "$@"; fi; }
TASKSET=(); taskset -c 1 true 2>/dev/null && TASKSET=(taskset -c 1)
"${TASKSET[@]}" "$BIN" serve --bind "127.0.0.1:$PORT" --a2a --store memory --agent "$AGENT" > "$WORK/server.log" 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 1
rss() { awk '/VmRSS/{print $2}' "/proc/$SP/status"; }
load() {
  pin 0 "$LOADGEN" --url "http://127.0.0.1:$PORT/a2a" --body "$WORK/body.json" \
    -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' -c 64 -d "$1" --reject '"error"'
}
load 1 > /dev/null
before=$(rss)
load "$SECS" > "$WORK/load.json"
sleep 1
after=$(rss)
python3 - "$WORK/load.json" "$before" "$after" "$AGENT" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
before, after = int(sys.argv[2]), int(sys.argv[3])
n = load["requests"]
print(f"agent={sys.argv[4]} tasks={n} errors={load['errors']} rss_before={before/1024:.1f} MiB "
      f"rss_after={after/1024:.1f} MiB per_task={(after-before)*1024/max(n,1):.0f} B")
PY
