#!/usr/bin/env bash
# Server instructions per request under callgrind: deterministic (no wall time, no machine load),
# for A/B comparisons of gateway builds where the side-by-side figures are too noisy.
#
#   bash tools/bench/callgrind-server.sh [N] BIN [BIN ...]
#
# For each `e2a` binary: `e2a serve --agent echo` under `valgrind --tool=callgrind` on a
# loopback port, one warm-up E2A JSON echo request, then N more (default 400; 20 for the token
# streams), each on a new connection (curl); a run with no requests after the warm-up is
# subtracted, so the figure is the server's instructions for one request: accept, HTTP, the run
# and its answer.
#
# LOAD=SECONDS runs the bench's load instead (loadgen, CONNS [64] keep-alive connections, for
# that long) and divides by the requests it answered: a request's cost on a busy server, as
# run.sh measures it (needs tools/bench's loadgen built).
#
# CASE picks the request (default e2a):
#   e2a         E2A JSON echo (`--agent echo`), POST /v1/e2a/requests
#   a2a-send    A2A JSON-RPC SendMessage, memory store, the peer's work (tools/bench/minimal-agent.json)
#   a2a-stream  the same as SendStreamingMessage (SSE)
#   e2a-stream  token stream (run.sh's case e): a script agent answering in CHUNKS [2000] text
#               chunks of 4 characters, then completing; E2A SSE, POST /v1/e2a/requests
#   a2a-tokens  the same agent through A2A JSON-RPC SendStreamingMessage (SSE), memory store
# For the two token streams the table also gives instructions per frame: per request divided by
# the SSE events of the warm-up response (the same count as loadgen's, each `\n\n`).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASE=${CASE:-e2a}
CHUNKS=${CHUNKS:-2000}
N=400
[[ $CASE == e2a-stream || $CASE == a2a-tokens ]] && N=20
if [[ ${1:-} =~ ^[0-9]+$ ]]; then N=$1; shift; fi
(( $# > 0 && N > 0 )) || { echo "usage: $0 [N] BIN [BIN ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 2; }
[[ $CHUNKS =~ ^[1-9][0-9]*$ ]] || { echo "CHUNKS must be a positive number" >&2; exit 2; }
PORT=${PORT:-18990}
# LOAD=SECONDS: instead of N requests one after the other, each on a new connection, the
# bench's load (loadgen, CONNS [64] keep-alive connections) for that long: the cost of a
# request on a busy server, connection set-up spread over many requests
LOAD=${LOAD:-}
CONNS=${CONNS:-64}
LOADGEN=${LOADGEN:-$HERE/target/release/loadgen}
if [[ -n $LOAD ]]; then
  [[ $LOAD =~ ^[1-9][0-9]*$ ]] || { echo "LOAD must be a number of seconds" >&2; exit 2; }
  [[ -x $LOADGEN ]] || { echo "no loadgen at $LOADGEN: cargo build --release --manifest-path $HERE/Cargo.toml" >&2; exit 2; }
fi
TMP=$(mktemp -d /tmp/e2a-callgrind.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
a2a_body() { # METHOD TEXT
  printf '{"jsonrpc":"2.0","id":1,"method":"%s","params":{"message":{"messageId":"m-%%d","role":"ROLE_USER","parts":[{"text":"%s"}]}}}' "$1" "$2"
}
STREAM_AGENT=$TMP/stream-agent.json
FRAMES=0
case $CASE in
  e2a)
    SERVE=(--agent echo) URL_PATH=/v1/e2a/requests ACCEPT=application/json
    BODY='{"method":"chat.send","params":{"query":"hello"}}' ;;
  a2a-send | a2a-stream)
    SERVE=(--a2a --store memory --agent "script:$HERE/minimal-agent.json") URL_PATH=/a2a
    method=SendMessage ACCEPT=application/json
    [[ $CASE == a2a-stream ]] && method=SendStreamingMessage ACCEPT=text/event-stream
    BODY=$(a2a_body "$method" hello) ;;
  e2a-stream | a2a-tokens)
    # the agent of run.sh's case e
    printf '{"scenarios":[{"name":"%s text chunks","match":{"text":"tokens"},"steps":[{"type":"text","text":"%s","chunk_size":4},{"type":"complete","result":{"content":"streamed %s chunks"}}]}]}\n' \
      "$CHUNKS" "$(printf 'tok %.0s' $(seq "$CHUNKS"))" "$CHUNKS" >"$STREAM_AGENT"
    FRAMES=1 ACCEPT=text/event-stream
    if [[ $CASE == e2a-stream ]]; then
      SERVE=(--agent "script:$STREAM_AGENT") URL_PATH=/v1/e2a/requests
      BODY='{"method":"chat.send","params":{"query":"tokens"}}'
    else
      SERVE=(--a2a --store memory --agent "script:$STREAM_AGENT") URL_PATH=/a2a
      BODY=$(a2a_body SendStreamingMessage tokens)
    fi ;;
  *) echo "unknown CASE $CASE (e2a, a2a-send, a2a-stream, e2a-stream or a2a-tokens)" >&2; exit 2 ;;
esac

# count BIN REQUESTS -> the server's total instructions and the requests it answered; the
# warm-up response goes to $TMP/first. With LOAD, REQUESTS > 0 means LOAD seconds of loadgen.
count() {
  local out pid served=$2
  out=$TMP/callgrind.out
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" serve "${SERVE[@]}" --bind "127.0.0.1:$PORT" \
    >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.2; done
  for i in $(seq 0 "$([[ -n $LOAD ]] && echo 0 || echo "$2")"); do
    # (a message id of its own per request: A2A sends are remembered by it)
    curl -s -o "$([[ $i == 0 ]] && echo "$TMP/first" || echo /dev/null)" -H 'Content-Type: application/json' \
      -H "Accept: $ACCEPT" -H 'A2A-Version: 1.0' -d "${BODY//%d/$i}" "http://127.0.0.1:$PORT$URL_PATH"
  done
  if [[ -n $LOAD && $2 -gt 0 ]]; then
    printf '%s' "${BODY//%d/load}" >"$TMP/body"
    local mode=json
    [[ $ACCEPT == text/event-stream ]] && mode=sse
    served=$("$LOADGEN" --url "http://127.0.0.1:$PORT$URL_PATH" --body "$TMP/body" -H 'A2A-Version: 1.0' \
      -H 'Content-Type: application/json' -H "Accept: $ACCEPT" -c "$CONNS" -d "$LOAD" --mode "$mode" 2>/dev/null |
      sed -n 's/.*"requests":\([0-9]*\).*/\1/p')
  fi
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$(grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}') ${served:-0}"
  rm -f "$out"
}

# SSE events of a response: its `\n\n`, as loadgen counts them
events() { grep -c '^$' "$1" || true; }

if ((FRAMES)); then
  printf '%-50s %14s %8s %12s\n' "binary ($CASE, CHUNKS=$CHUNKS)" "instr/request" "frames" "instr/frame"
else
  printf '%-50s %14s\n' "binary ($CASE)" "instr/request"
fi
for bin in "$@"; do
  read -r idle _ < <(count "$bin" 0)
  read -r busy served < <(count "$bin" "$N")
  ((served > 0)) || { echo "$bin: no request was answered under load" >&2; exit 1; }
  per=$(( (busy - idle) / served ))
  if ((FRAMES)); then
    f=$(events "$TMP/first")
    ((f > 0)) || { echo "$bin: the warm-up response has no SSE event: $(head -c 300 "$TMP/first")" >&2; exit 1; }
    printf '%-50s %14d %8d %12.1f\n' "$bin" "$per" "$f" "$(awk -v p="$per" -v f="$f" 'BEGIN{print p / f}')"
  else
    printf '%-50s %14d\n' "$bin" "$per"
  fi
done
