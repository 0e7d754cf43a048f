#!/usr/bin/env bash
# Side-by-side server benchmark: the e2a gateway against peers, each server in its own
# process pinned to one core, the load generator in another process pinned to the other.
# See tools/bench/README.md. Usage: bash tools/bench/run.sh
#
# Environment knobs (defaults in brackets):
#   ROUNDS [5]        rounds per server per case (A B A B ..., medians reported)
#   SECS [5]          seconds per round
#   WARMUP [1]        seconds of unrecorded load per server before its case's rounds
#   CONNS [64]        connections for cases a, b and d
#   CASES [a,b,c,d]   which cases to run (e, token streams, is not among the default ones)
#   CHUNKS [2000]     case e: text chunks per streamed answer
#   STREAM_CONNS [4]  case e: connections
#   E2A_BIN           an existing release `e2a` binary (skips building e2a-cli)
#   E2A_BEFORE_BIN    another `e2a` binary (an earlier commit's release build): its rows run
#                     beside e2a's in every case, named `…@before` (before/after in one run)
#   E2A_TARGET_DIR [/tmp/bench-target]  target dir of the e2a-cli build
#   SERVER_CPU [1] / LOADGEN_CPU [0]    cores for taskset
#   BASE_PORT [18700] first of the loopback ports used (up to BASE_PORT+47)
#   OUT               also write the markdown report to this file
#   SKIP_BUILD [0]    1: use the already built bench binaries as they are
#   SDK_PEERS [1]     0: leave out the official Python (a2a-sdk) and JS (@a2a-js/sdk) servers,
#                     which otherwise run in cases a and d when python3 >= 3.10 / node >= 20 exist
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-5}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-64}
CASES=${CASES:-a,b,c,d}
CHUNKS=${CHUNKS:-2000}
STREAM_CONNS=${STREAM_CONNS:-4}
[[ $CHUNKS =~ ^[1-9][0-9]*$ ]] || { echo "CHUNKS must be a positive number" >&2; exit 2; }
SERVER_CPU=${SERVER_CPU:-1}
LOADGEN_CPU=${LOADGEN_CPU:-0}
BASE_PORT=${BASE_PORT:-18700}
E2A_TARGET_DIR=${E2A_TARGET_DIR:-/tmp/bench-target}
SKIP_BUILD=${SKIP_BUILD:-0}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- build ------------------------------------------------------------------------------------
if [[ $SKIP_BUILD != 1 ]]; then
  log "building the bench workspace (release, jobs=$CARGO_BUILD_JOBS)"
  nice -n 10 cargo build --release --manifest-path "$HERE/Cargo.toml" >&2
  # on its own, so that its features are not unified into the peers' (see Cargo.toml)
  nice -n 10 cargo build --release --manifest-path "$HERE/Cargo.toml" -p e2a-floor >&2
fi
BENCH_TARGET=$(cd "$HERE" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BENCH_TARGET=${BENCH_TARGET:-$HERE/target}
BIN=$BENCH_TARGET/release
for b in loadgen peer-a2a bare-axum e2a-floor; do
  [[ -x $BIN/$b ]] || die "$BIN/$b is missing (build the bench workspace)"
done
if [[ -n ${E2A_BIN:-} ]]; then
  log "using E2A_BIN=$E2A_BIN (no e2a-cli build)"
else
  log "building e2a-cli (release, --target-dir $E2A_TARGET_DIR, jobs=$CARGO_BUILD_JOBS)"
  (cd "$ROOT" && nice -n 10 cargo build --release -p e2a-cli --target-dir "$E2A_TARGET_DIR" >&2)
  E2A_BIN=$E2A_TARGET_DIR/release/e2a
fi
[[ -x $E2A_BIN ]] || die "$E2A_BIN is not an executable"
E2A_BIN=$(cd "$(dirname "$E2A_BIN")" && pwd)/$(basename "$E2A_BIN")
if [[ -n ${E2A_BEFORE_BIN:-} ]]; then
  [[ -x $E2A_BEFORE_BIN ]] || die "E2A_BEFORE_BIN=$E2A_BEFORE_BIN is not an executable"
  E2A_BEFORE_BIN=$(cd "$(dirname "$E2A_BEFORE_BIN")" && pwd)/$(basename "$E2A_BEFORE_BIN")
fi

# --- optional peers: the official Python and JS A2A servers (pinned in tools/bench/peers) -------
PY_PEER=()
JS_PEER=()
if [[ ${SDK_PEERS:-1} == 1 ]]; then
  venv=$BENCH_TARGET/peers/venv
  lock=$HERE/peers/python/requirements.lock
  if command -v python3 >/dev/null && python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    if ! cmp -s "$lock" "$venv/.installed.lock" 2>/dev/null; then
      log "installing the a2a-sdk (Python) peer into $venv"
      rm -rf "$venv"
      if python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check -r "$lock" >&2; then
        cp "$lock" "$venv/.installed.lock"
      else
        log "the a2a-sdk (Python) peer could not be installed: its rows are left out"
      fi
    fi
    [[ -f $venv/.installed.lock ]] && PY_PEER=("$venv/bin/python" "$HERE/peers/python/server.py")
  else
    log "no python3 >= 3.10: the a2a-sdk (Python) rows are left out"
  fi
  if command -v node >/dev/null && node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)'; then
    if (cd "$HERE/peers/js" && npm ci --no-audit --no-fund --silent >&2); then
      JS_PEER=(node "$HERE/peers/js/server.mjs")
    else
      log "the @a2a-js/sdk peer could not be installed: its rows are left out"
    fi
  else
    log "no node >= 20: the @a2a-js/sdk rows are left out"
  fi
fi

# --- workspace, pinning, cleanup --------------------------------------------------------------
WORK=$(mktemp -d /tmp/e2a-bench.XXXXXX)
RESULTS=$WORK/results.tsv
# events_per_req and cpu_us_per_frame (CPU µs per request / events per request): SSE rounds only,
# `-` for JSON ones.
printf '#case\tserver\tround\trps\tp50_ms\tp99_ms\tcpu_us_per_req\trequests\terrors\tserver_cpu_pct\tloadgen_cpu_pct\tother_load_pct\tevents_per_req\tcpu_us_per_frame\n' >"$RESULTS"
PIDS=()
cleanup() {
  local pid
  # (a server stopped between its rounds, see `run_only`, is continued to take the TERM)
  for pid in "${PIDS[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
# The sqlite store of case a grows by ~100 MB a run: removed at the end, the rest is kept.
trap 'cleanup; rm -f "$WORK"/tasks.db*' EXIT
trap 'exit 130' INT TERM

PIN_NOTE="server on core $SERVER_CPU, load generator on core $LOADGEN_CPU (taskset)"
SERVER_PIN=(taskset -c "$SERVER_CPU")
LOAD_PIN=(taskset -c "$LOADGEN_CPU")
if ! taskset -c "$SERVER_CPU" true 2>/dev/null || ! taskset -c "$LOADGEN_CPU" true 2>/dev/null; then
  SERVER_PIN=()
  LOAD_PIN=()
  PIN_NOTE="UNPINNED: taskset -c $SERVER_CPU / -c $LOADGEN_CPU failed; servers and load generator share all cores"
  log "$PIN_NOTE"
fi
CLK_TCK=$(getconf CLK_TCK)

# --- helpers ----------------------------------------------------------------------------------
# start_server NAME PORT CMD...: starts CMD pinned, in $WORK, logs to $WORK/NAME.log; sets $SPID.
start_server() {
  local name=$1 port=$2
  shift 2
  (cd "$WORK" && exec "${SERVER_PIN[@]}" "$@") >"$WORK/$name.log" 2>&1 &
  SPID=$!
  PIDS+=("$SPID")
  wait_ready "$name" "$port" "$SPID"
}

# wait_ready NAME PORT PID: polls GET /healthz for up to 30 s.
wait_ready() {
  local name=$1 port=$2 pid=$3
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || { cat "$WORK/$name.log" >&2; die "$name exited at startup"; }
    if "$BIN/loadgen" --url "http://127.0.0.1:$port/healthz" --once --timeout 1 >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  cat "$WORK/$name.log" >&2
  die "$name did not become ready on 127.0.0.1:$port"
}

stop_servers() { cleanup; }

# CPU ticks (utime + stime, fields 14 and 15) of a whole process.
cpu_ticks() {
  local rest
  rest=$(sed 's/^.*) //' "/proc/$1/stat")
  # After "(comm) ", field 3 (state) comes first: utime is the 12th word, stime the 13th.
  awk '{print $12 + $13}' <<<"$rest"
}

# Busy ticks of the whole machine (user + nice + system + steal; not idle, iowait, irq, softirq).
machine_busy() { awk '/^cpu /{print $2 + $3 + $4 + $9; exit}' /proc/stat; }

json_field() { sed -n "s/.*\"$1\":\([-0-9.e]*\).*/\1/p" <<<"$2"; }

# Per-case request definitions, filled by the case functions below:
#   URL_PATH, BODY (file), MODE, CONN, HDRS (array of -H args), CHECKS (array of loadgen args),
#   LOAD_EXTRA (more loadgen args: case e's --drain)
LOAD_EXTRA=()
# run_load PORT SECONDS: one loadgen run; prints its JSON line.
run_load() {
  local port=$1 secs=$2
  "${LOAD_PIN[@]}" "$BIN/loadgen" --url "http://127.0.0.1:$port$URL_PATH" --body "$BODY" \
    "${HDRS[@]}" -c "$CONN" -d "$secs" --mode "$MODE" "${CHECKS[@]}" "${LOAD_EXTRA[@]}" 2>>"$WORK/loadgen.err"
}

# run_only PID NAME:PORT:PID...: the server PID runs, the case's others are stopped (SIGSTOP)
# until their own turn: an idle server's periodic work (a store's prune, a sweep) then runs in
# its own rounds, on its own account, not on the core of the server being measured.
run_only() {
  local only=$1 s name port pid
  shift
  for s in "$@"; do
    IFS=: read -r name port pid <<<"$s"
    if [[ $pid == "$only" ]]; then kill -CONT "$pid"; else kill -STOP "$pid"; fi 2>/dev/null || true
  done
}

# rounds CASE NAME:PORT:PID ...: warms each server up, then ROUNDS rounds of A B A B ...
rounds() {
  local case=$1
  shift
  local s name port pid r t0 t1 m0 m1 out req cpu_us srv_pct other_pct epr cpu_frame
  for s in "$@"; do
    IFS=: read -r name port pid <<<"$s"
    run_only "$pid" "$@"
    log "case $case: warming up $name (${WARMUP}s)"
    run_load "$port" "$WARMUP" >/dev/null
  done
  for r in $(seq "$ROUNDS"); do
    for s in "$@"; do
      IFS=: read -r name port pid <<<"$s"
      run_only "$pid" "$@"
      m0=$(machine_busy)
      t0=$(cpu_ticks "$pid")
      out=$(run_load "$port" "$SECS")
      t1=$(cpu_ticks "$pid")
      m1=$(machine_busy)
      req=$(json_field requests "$out")
      cpu_us=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$req" 'BEGIN{ if (n > 0) printf "%.1f", d * 1e6 / hz / n; else print "nan" }')
      srv_pct=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v s="$(json_field secs "$out")" 'BEGIN{ printf "%.0f", d / hz / s * 100 }')
      # Everything else that ran meanwhile, in % of one core: other processes (a build, say),
      # steal time, and the kernel's own work outside irq/softirq.
      other_pct=$(awk -v m=$((m1 - m0)) -v t=$((t1 - t0)) -v c="$(json_field client_cpu_pct "$out")" \
        -v s="$(json_field secs "$out")" -v hz="$CLK_TCK" 'BEGIN{ o = (m - t) / hz / s * 100 - c; printf "%.0f", (o < 0 ? 0 : o) }')
      # SSE: the events per response (loadgen's mean) and the CPU per event, the frame
      epr=$(json_field events_per_req "$out")
      cpu_frame=-
      if [[ -n $epr ]]; then
        cpu_frame=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$req" -v e="$epr" \
          'BEGIN{ if (n > 0 && e > 0) printf "%.3f", d * 1e6 / hz / (n * e); else print "nan" }')
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$name" "$r" \
        "$(json_field rps "$out")" "$(json_field p50_ms "$out")" "$(json_field p99_ms "$out")" \
        "$cpu_us" "$req" "$(json_field errors "$out")" "$srv_pct" "$(json_field client_cpu_pct "$out")" \
        "$other_pct" "${epr:--}" "$cpu_frame" >>"$RESULTS"
      log "case $case round $r/$ROUNDS $name: $out cpu_us_per_req=$cpu_us cpu_us_per_frame=$cpu_frame server_cpu=${srv_pct}% other_load=${other_pct}%"
    done
  done
  for s in "$@"; do
    IFS=: read -r name port pid <<<"$s"
    kill -CONT "$pid" 2>/dev/null || true
  done
}

A2A_HDRS=(-H 'A2A-Version: 1.0' -H 'Content-Type: application/json')
E2A_ECHO_BODY=$WORK/e2a-echo-request.json
# the peer's agent work for e2a (one text answer): the script agent
MINIMAL_AGENT=$HERE/minimal-agent.json
printf '%s\n' '{"method":"chat.send","params":{"query":"hello"}}' >"$E2A_ECHO_BODY"
# {{n}}: loadgen puts a run-unique counter there, so no two requests share a messageId.
A2A_SEND_BODY=$WORK/a2a-send.json
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"bench-{{n}}","role":"ROLE_USER","parts":[{"text":"hello"}]}}}' >"$A2A_SEND_BODY"
A2A_STREAM_BODY=$WORK/a2a-stream.json
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"bench-{{n}}","role":"ROLE_USER","parts":[{"text":"hello"}]}}}' >"$A2A_STREAM_BODY"

# Case e, token streams: a script agent answering `tokens` with CHUNKS text chunks of 4
# characters (`tok `), then completing.
STREAM_AGENT=$WORK/stream-agent.json
printf '{"scenarios":[{"name":"%s text chunks","match":{"text":"tokens"},"steps":[{"type":"text","text":"%s","chunk_size":4},{"type":"complete","result":{"content":"streamed %s chunks"}}]}]}\n' \
  "$CHUNKS" "$(printf 'tok %.0s' $(seq "$CHUNKS"))" "$CHUNKS" >"$STREAM_AGENT"
E2A_TOKENS_BODY=$WORK/e2a-tokens-request.json
printf '%s\n' '{"method":"chat.send","params":{"query":"tokens"}}' >"$E2A_TOKENS_BODY"
A2A_TOKENS_BODY=$WORK/a2a-tokens.json
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"bench-{{n}}","role":"ROLE_USER","parts":[{"text":"tokens"}]}}}' >"$A2A_TOKENS_BODY"

# capture PORT OUTFILE: one request of the current definition; its body to OUTFILE.
capture() {
  "$BIN/loadgen" --url "http://127.0.0.1:$1$URL_PATH" --body "$BODY" "${HDRS[@]}" --once >"$2" 2>>"$WORK/capture.err" ||
    die "capturing a response from 127.0.0.1:$1$URL_PATH failed: $(tail -1 "$WORK/capture.err") $(head -c 300 "$2")"
}

# sdk_peers FIRST_PORT: starts the optional SDK peers on FIRST_PORT and the next; sets $SDK_ROWS
# to their `name:port:pid` entries for `rounds`.
sdk_peers() {
  SDK_ROWS=()
  if ((${#PY_PEER[@]})); then
    start_server a2a-sdk-py "$1" "${PY_PEER[@]}" "$1"
    SDK_ROWS+=("a2a-sdk-py:$1:$SPID")
  fi
  if ((${#JS_PEER[@]})); then
    start_server a2a-js "$(($1 + 1))" "${JS_PEER[@]}" "$(($1 + 1))"
    SDK_ROWS+=("a2a-js:$(($1 + 1)):$SPID")
  fi
}

# before NAME PORT SERVE_ARGS...: with E2A_BEFORE_BIN, starts `E2A_BEFORE_BIN serve --bind
# 127.0.0.1:PORT SERVE_ARGS...` as NAME@before; sets $BEFORE_ROWS to its `name:port:pid` entry.
before() {
  BEFORE_ROWS=()
  [[ -n ${E2A_BEFORE_BIN:-} ]] || return 0
  local name=$1@before port=$2
  shift 2
  start_server "$name" "$port" "$E2A_BEFORE_BIN" serve --bind "127.0.0.1:$port" "$@"
  BEFORE_ROWS=("$name:$port:$SPID")
}

# --- cases ------------------------------------------------------------------------------------
case_a() {
  URL_PATH=/a2a BODY=$A2A_SEND_BODY MODE=json CONN=$CONNS
  HDRS=("${A2A_HDRS[@]}")
  CHECKS=(--expect 'You said: hello' --reject '"error"')
  local p=$BASE_PORT
  start_server e2a-memory $((p + 1)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 1))" --a2a --store memory --agent echo
  local m=$SPID
  capture $((p + 1)) "$WORK/a2a-send-response.json"
  start_server e2a-sqlite $((p + 2)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 2))" --a2a --store "sqlite:$WORK/tasks.db" --agent echo
  local s=$SPID
  start_server peer-a2a $((p + 3)) "$BIN/peer-a2a" $((p + 3))
  local q=$SPID
  capture $((p + 3)) "$WORK/a2a-send-peer-response.json"
  start_server peer-a2a-mirror $((p + 4)) "$BIN/peer-a2a" $((p + 4)) --events mirror
  local r=$SPID
  capture $((p + 4)) "$WORK/a2a-send-peer-mirror-response.json"
  start_server bare-axum $((p + 5)) "$BIN/bare-axum" $((p + 5)) --a2a-body "$WORK/a2a-send-response.json"
  local b=$SPID
  start_server e2a-minimal $((p + 6)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 6))" --a2a --store memory --agent "script:$MINIMAL_AGENT"
  local n=$SPID
  capture $((p + 6)) "$WORK/a2a-send-minimal-response.json"
  sdk_peers $((p + 7))
  before e2a-memory $((p + 9)) --a2a --store memory --agent echo
  rounds a "e2a-memory:$((p + 1)):$m" "${BEFORE_ROWS[@]}" "e2a-sqlite:$((p + 2)):$s" "peer-a2a:$((p + 3)):$q" \
    "peer-a2a-mirror:$((p + 4)):$r" "bare-axum:$((p + 5)):$b" "e2a-minimal:$((p + 6)):$n" "${SDK_ROWS[@]}"
  stop_servers
}

case_b() {
  URL_PATH=/v1/e2a/requests BODY=$E2A_ECHO_BODY MODE=json CONN=$CONNS
  HDRS=(-H 'Accept: application/json' -H 'Content-Type: application/json')
  CHECKS=(--expect 'You said: hello')
  local p=$((BASE_PORT + 10))
  start_server e2a $((p + 1)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 1))" --agent echo
  local e=$SPID
  capture $((p + 1)) "$WORK/e2a-echo-response.json"
  start_server bare-axum $((p + 2)) "$BIN/bare-axum" $((p + 2)) --e2a-body "$WORK/e2a-echo-response.json"
  local b=$SPID
  start_server e2a-floor $((p + 3)) "$BIN/e2a-floor" $((p + 3))
  local f=$SPID
  before e2a $((p + 4)) --agent echo
  rounds b "e2a:$((p + 1)):$e" "${BEFORE_ROWS[@]}" "bare-axum:$((p + 2)):$b" "e2a-floor:$((p + 3)):$f"
  stop_servers
}

case_c() {
  URL_PATH=/v1/e2a/requests BODY=$E2A_ECHO_BODY MODE=sse CONN=1
  HDRS=(-H 'Accept: text/event-stream' -H 'Content-Type: application/json')
  CHECKS=(--expect 'You said: hello')
  local p=$((BASE_PORT + 20))
  start_server e2a $((p + 1)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 1))" --agent echo
  capture $((p + 1)) "$WORK/e2a-echo-sse-response.txt"
  local e=$SPID
  before e2a $((p + 2)) --agent echo
  rounds c "e2a:$((p + 1)):$e" "${BEFORE_ROWS[@]}"
  stop_servers
}

case_d() {
  URL_PATH=/a2a BODY=$A2A_STREAM_BODY MODE=sse CONN=$CONNS
  HDRS=("${A2A_HDRS[@]}" -H 'Accept: text/event-stream')
  CHECKS=(--expect 'You said: hello' --reject '"error"')
  local p=$((BASE_PORT + 30))
  start_server e2a-memory $((p + 1)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 1))" --a2a --store memory --agent echo
  local m=$SPID
  capture $((p + 1)) "$WORK/a2a-stream-response.txt"
  start_server peer-a2a $((p + 2)) "$BIN/peer-a2a" $((p + 2))
  local q=$SPID
  capture $((p + 2)) "$WORK/a2a-stream-peer-response.txt"
  start_server peer-a2a-mirror $((p + 3)) "$BIN/peer-a2a" $((p + 3)) --events mirror
  local r=$SPID
  capture $((p + 3)) "$WORK/a2a-stream-peer-mirror-response.txt"
  start_server e2a-minimal $((p + 4)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 4))" --a2a --store memory --agent "script:$MINIMAL_AGENT"
  local n=$SPID
  capture $((p + 4)) "$WORK/a2a-stream-minimal-response.txt"
  sdk_peers $((p + 5))
  before e2a-memory $((p + 7)) --a2a --store memory --agent echo
  rounds d "e2a-memory:$((p + 1)):$m" "${BEFORE_ROWS[@]}" "peer-a2a:$((p + 2)):$q" "peer-a2a-mirror:$((p + 3)):$r" "e2a-minimal:$((p + 4)):$n" "${SDK_ROWS[@]}"
  stop_servers
}

# Case e: token streams, server CPU per frame. Two groups, one after the other: E2A SSE (e2a and
# bare-axum replaying its captured stream), then A2A SendStreamingMessage (e2a with the memory
# store, bare-axum replaying its captured stream, peer-a2a with as many artifact chunks).
# loadgen --drain: a stream in flight at the end of a round is read to its end and counted, so
# that a round's server CPU is the work of its counted requests (a stream may take a good part
# of a round: peer-a2a's take seconds) and the server is idle between rounds.
case_e() {
  local p=$((BASE_PORT + 40))
  LOAD_EXTRA=(--drain --timeout 60)
  URL_PATH=/v1/e2a/requests BODY=$E2A_TOKENS_BODY MODE=sse CONN=$STREAM_CONNS
  HDRS=(-H 'Accept: text/event-stream' -H 'Content-Type: application/json')
  CHECKS=(--expect "streamed $CHUNKS chunks")
  start_server e2a-sse $((p + 1)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 1))" --agent "script:$STREAM_AGENT"
  local e=$SPID
  capture $((p + 1)) "$WORK/e2a-tokens-response.txt"
  start_server bare-e2a $((p + 2)) "$BIN/bare-axum" $((p + 2)) --sse-replay "$URL_PATH=$WORK/e2a-tokens-response.txt"
  local b=$SPID
  before e2a-sse $((p + 3)) --agent "script:$STREAM_AGENT"
  rounds e "e2a-sse:$((p + 1)):$e" "${BEFORE_ROWS[@]}" "bare-e2a:$((p + 2)):$b"
  stop_servers

  URL_PATH=/a2a BODY=$A2A_TOKENS_BODY MODE=sse CONN=$STREAM_CONNS
  HDRS=("${A2A_HDRS[@]}" -H 'Accept: text/event-stream')
  CHECKS=(--expect 'TASK_STATE_COMPLETED' --reject '"error"')
  start_server e2a-a2a $((p + 4)) "$E2A_BIN" serve --bind "127.0.0.1:$((p + 4))" --a2a --store memory --agent "script:$STREAM_AGENT"
  local m=$SPID
  capture $((p + 4)) "$WORK/a2a-tokens-response.txt"
  start_server bare-a2a $((p + 5)) "$BIN/bare-axum" $((p + 5)) --sse-replay "$URL_PATH=$WORK/a2a-tokens-response.txt"
  b=$SPID
  start_server peer-a2a $((p + 6)) "$BIN/peer-a2a" $((p + 6)) --artifact-chunks "$CHUNKS"
  local q=$SPID
  capture $((p + 6)) "$WORK/a2a-tokens-peer-response.txt"
  before e2a-a2a $((p + 7)) --a2a --store memory --agent "script:$STREAM_AGENT"
  rounds e "e2a-a2a:$((p + 4)):$m" "${BEFORE_ROWS[@]}" "bare-a2a:$((p + 5)):$b" "peer-a2a:$((p + 6)):$q"
  stop_servers
  LOAD_EXTRA=()
}

# --- run --------------------------------------------------------------------------------------
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE_START=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
E2A_VERSION=$("$E2A_BIN" --version 2>/dev/null || echo unknown)
log "work dir: $WORK; $PIN_NOTE; load average $LOAD_START"
IFS=, read -ra WANT <<<"$CASES"
for c in "${WANT[@]}"; do
  case $c in
    a | b | c | d | e) "case_$c" ;;
    *) die "unknown case $c (a, b, c, d or e)" ;;
  esac
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report -----------------------------------------------------------------------------------
# One response of each kind, as captured before the rounds: its size in bytes.
sizes() {
  local f line=""
  for f in a2a-send-response.json:"a e2a" a2a-send-peer-response.json:"a peer-a2a" \
    a2a-send-peer-mirror-response.json:"a peer-a2a-mirror" a2a-send-minimal-response.json:"a e2a-minimal" \
    a2a-stream-minimal-response.txt:"d e2a-minimal" e2a-echo-response.json:"b e2a" \
    e2a-echo-sse-response.txt:"c e2a" a2a-stream-response.txt:"d e2a" \
    a2a-stream-peer-response.txt:"d peer-a2a" a2a-stream-peer-mirror-response.txt:"d peer-a2a-mirror" \
    e2a-tokens-response.txt:"e e2a-sse" a2a-tokens-response.txt:"e e2a-a2a" \
    a2a-tokens-peer-response.txt:"e peer-a2a"; do
    [[ -s $WORK/${f%%:*} ]] && line+="${line:+, }${f#*:} $(wc -c <"$WORK/${f%%:*}") B"
  done
  [[ -n $line ]] && printf 'Response sizes: %s.\n' "$line"
  return 0
}
report() {
  cat <<EOF
Machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(uname -sr);
$PIN_NOTE. Date: $DATE_START. Load average (1/5/15 min) at start: $LOAD_START, at end: $LOAD_END.
$E2A_VERSION ($E2A_BIN); ROUNDS=$ROUNDS x SECS=$SECS s per server, WARMUP=$WARMUP s, CONNS=$CONNS$(
    [[ ,$CASES, == *,e,* ]] && printf '; case e: CHUNKS=%s, STREAM_CONNS=%s' "$CHUNKS" "$STREAM_CONNS").
Medians over rounds; each column's median is taken on its own ("req/s range": the lowest and
highest round).
EOF
  awk -F'\t' '
    function median(key, col,   n, i, j, t, a) {
      n = cnt[key]
      for (i = 1; i <= n; i++) a[i] = v[key, i, col] + 0
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      if (n % 2) return a[(n + 1) / 2]
      return (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function least(key, col,   i, x) {
      x = v[key, 1, col] + 0
      for (i = 2; i <= cnt[key]; i++) if (v[key, i, col] + 0 < x) x = v[key, i, col] + 0
      return x
    }
    function most(key, col,   i, x) {
      x = v[key, 1, col] + 0
      for (i = 2; i <= cnt[key]; i++) if (v[key, i, col] + 0 > x) x = v[key, i, col] + 0
      return x
    }
    /^#/ { next }
    {
      key = $1 SUBSEP $2
      if (!(key in cnt)) { order[++nk] = key; cnt[key] = 0 }
      cnt[key]++
      for (c = 4; c <= 14; c++) v[key, cnt[key], c] = $c
      errs[key] += $9
    }
    END {
      ref["a"] = "peer-a2a"; ref["b"] = "bare-axum"; ref["d"] = "peer-a2a"
      desc["a"] = "a. A2A SendMessage"; desc["b"] = "b. E2A JSON echo"
      desc["c"] = "c. E2A SSE, 1 conn"; desc["d"] = "d. A2A SendStreamingMessage"
      # cases a to d
      head = 0
      for (k = 1; k <= nk; k++) {
        split(order[k], kc, SUBSEP)
        cs = kc[1]; sv = kc[2]; key = order[k]
        if (cs == "e") continue
        if (!head++) {
          print ""
          print "| case | server | req/s | req/s range | p50 ms | p99 ms | CPU µs/req | server CPU % | loadgen CPU % | other load % | errors | req/s vs ref | CPU/req vs ref |"
          print "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        }
        rps = median(key, 4); cpu = median(key, 7)
        rr = "–"; cr = "–"
        rk = cs SUBSEP ref[cs]
        if ((cs in ref) && (rk in cnt)) {
          if (sv == ref[cs]) { rr = "ref"; cr = "ref" }
          else {
            r0 = median(rk, 4); c0 = median(rk, 7)
            if (r0 > 0) rr = sprintf("%.2fx", rps / r0)
            if (c0 > 0) cr = sprintf("%.2fx", cpu / c0)
          }
        }
        printf "| %s | %s | %.0f | %.0f–%.0f | %.3f | %.3f | %.1f | %.0f | %.0f | %.0f | %d | %s | %s |\n", \
          desc[cs], sv, rps, least(key, 4), most(key, 4), median(key, 5), median(key, 6), cpu, \
          median(key, 10), median(key, 11), median(key, 12), errs[key], rr, cr
      }
      # the durable store against memory, round by round (the two ran next to each other)
      mk = "a" SUBSEP "e2a-memory"; sk = "a" SUBSEP "e2a-sqlite"
      if ((mk in cnt) && (sk in cnt)) {
        n = cnt[mk] < cnt[sk] ? cnt[mk] : cnt[sk]
        for (i = 1; i <= n; i++) {
          m = v[mk, i, 4] + 0
          v["ratio", i, 4] = m > 0 ? (v[sk, i, 4] + 0) / m : 0
        }
        cnt["ratio"] = n
        printf "\nSQLite / memory (case a, req/s, round by round): median %.2fx, range %.2fx–%.2fx over %d rounds.\n", \
          median("ratio", 4), least("ratio", 4), most("ratio", 4), n
      }
      # case e, token streams: CPU per frame, against the bare replay of the same protocol
      head = 0
      for (k = 1; k <= nk; k++) {
        split(order[k], kc, SUBSEP)
        cs = kc[1]; sv = kc[2]; key = order[k]
        if (cs != "e") continue
        if (!head++) {
          print ""
          print "| case | server | req/s | p50 ms | p99 ms | events/req | CPU µs/req | CPU µs/frame | server CPU % | loadgen CPU % | other load % | errors | CPU/frame vs replay |"
          print "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        }
        base = sv; sub(/@before$/, "", base)
        e2a = (base == "e2a-sse" || base == "bare-e2a")
        rs = e2a ? "bare-e2a" : "bare-a2a"
        rk = cs SUBSEP rs
        cr = "–"
        if (sv == rs) cr = "ref"
        else if (rk in cnt) { c0 = median(rk, 14); if (c0 > 0) cr = sprintf("%.2fx", median(key, 14) / c0) }
        printf "| %s | %s | %.0f | %.3f | %.3f | %.1f | %.0f | %.3f | %.0f | %.0f | %.0f | %d | %s |\n", \
          (e2a ? "e. E2A SSE tokens" : "e. A2A stream tokens"), sv, median(key, 4), median(key, 5), \
          median(key, 6), median(key, 13), median(key, 7), median(key, 14), median(key, 10), \
          median(key, 11), median(key, 12), errs[key], cr
      }
    }' "$RESULTS"
  cat <<EOF
$(sizes)

References: a and d against peer-a2a (a2a-server-lf 0.5.3), b against bare-axum (fixed bytes).
"req/s vs ref" above 1 is faster than the reference; "CPU/req vs ref" above 1 costs more CPU per
request. "server CPU %" and "loadgen CPU %" are of one core; "other load %" is what else kept
the machine busy meanwhile (other processes, steal), also in % of one core: rounds with much of
it are unreliable. Errors are summed over all rounds. Raw rounds: $RESULTS
EOF
  if [[ ,$CASES, == *,e,* ]]; then
    cat <<EOF
Case e: "CPU µs/frame" is the server's CPU over the round divided by requests x events per
response (SSE events, loadgen's mean). "CPU/frame vs replay": each E2A row against bare-e2a,
each A2A row (peer-a2a too) against bare-a2a, bare-axum replaying the bytes captured from e2a
one body chunk per event. Above 1 costs more CPU per frame than that replay.
EOF
  fi
}
REPORT=$(report)
printf '%s\n' "$REPORT"
if [[ -n ${OUT:-} ]]; then printf '%s\n' "$REPORT" >"$OUT"; fi
if [[ -s $WORK/loadgen.err ]]; then
  log "load generator reported errors (first lines of $WORK/loadgen.err):"
  head -5 "$WORK/loadgen.err" >&2
fi
