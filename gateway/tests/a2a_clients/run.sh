#!/usr/bin/env bash
# Official A2A clients against `e2a serve --a2a`: the a2a-sdk Python client (PyPI, pinned in
# requirements.lock) and the @a2a-js/sdk client (npm, pinned in js/package-lock.json).
#
# Sessions: card resolution, SendMessage, streaming, GetTask, ListTasks, CancelTask mid-stream,
# input-required round trip, artifacts of each kind, direct message reply, SubscribeToTask after
# a dropped connection (snapshot and Last-Event-ID), errors — over JSON-RPC, HTTP+JSON and gRPC
# (the gRPC binding on the same port, a2a-sdk's grpcio client); bearer
# auth accepted and refused; a restart (SIGKILL mid-stream, same SQLite file, resubscribe: no
# event lost or repeated); a chain (`--agent a2a:URL` in front of a second gateway); named agents
# and callers of `e2a serve --config FILE` (named_agents.py: config check, each agent's card and
# routes, API keys, an RS256 JWT, allow-lists, a rate limit, task isolation, /metrics parsed with
# prometheus-client); OTLP trace export across two gateways (trace_otlp.py: spans decoded with
# opentelemetry-proto by a receiver of its own, the hop A -> B linked, shutdown flush); push
# notifications (push_sessions.py: Create/Get/List/Delete of configs on the three bindings, a
# send's taskPushNotificationConfig delivered to a webhook receiver of its own, retries, giving
# up, delivery after a SIGKILL and a restart, SSRF refusals without --push-allow-private, no
# token or credentials in the logs); GoAI-HMAC-SHA256 machine callers (goai_hmac.py: signatures
# computed with Python's hmac; replay, window, tampered body, wrong key or agent, allow-list).
#
# Usage: gateway/tests/a2a_clients/run.sh   (from anywhere; needs cargo, python3 >= 3.10, node >= 20)
# Env: E2A_BIN (a built e2a binary; default: cargo build -p e2a-cli), A2A_CLIENTS_WORK (scratch dir).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="${A2A_CLIENTS_WORK:-$root/target/a2a-clients}"
mkdir -p "$work"
script="$here/script.json"

if [[ -z "${E2A_BIN:-}" ]]; then
  (cd "$root" && cargo build --locked -q -p e2a-cli)
  E2A_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/e2a"
fi

# --- install the pinned clients -------------------------------------------------------------
venv="$work/venv"
. "$here/../pyenv.sh"
venv_from_lock "$venv" "$here/requirements.lock"
py="$venv/bin/python"
(cd "$here/js" && npm ci --no-audit --no-fund --silent)

# --- gateways --------------------------------------------------------------------------------
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME PORT ARGS...: starts `e2a serve` on 127.0.0.1:PORT, waits for its card; sets $last_pid
start() {
  local name="$1" port="$2"; shift 2
  "$E2A_BIN" serve --a2a --bind "127.0.0.1:$port" "$@" >"$work/$name.log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$port/.well-known/agent-card.json" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "gateway $name did not start:"; cat "$work/$name.log"; return 1
}

passed=0; failed=0
# run LABEL CMD...: runs a client session, adds its "N passed, M failed" line to the totals
run() {
  local label="$1"; shift
  local out rc=0
  out="$(timeout 300 "$@" 2>&1)" || rc=$?
  echo "$out"
  local line
  line="$(echo "$out" | grep -Eo '[0-9]+ passed, [0-9]+ failed' | tail -1 || true)"
  if [[ -z "$line" ]]; then
    echo "FAIL $label: no result (exit $rc)"; failed=$((failed + 1)); return
  fi
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  if [[ $rc -ne 0 && $(echo "$line" | cut -d' ' -f3) -eq 0 ]]; then failed=$((failed + 1)); fi
}

db="$work/tasks.db"
rm -f "$db" "$db-wal" "$db-shm"
port="$(free_port)"
start main "$port" --store "sqlite:$db" --agent "script:$script"
base="http://127.0.0.1:$port"
run python-jsonrpc "$py" "$here/python_client.py" sessions "$base" --binding JSONRPC
run python-rest "$py" "$here/python_client.py" sessions "$base" --binding HTTP+JSON
run python-grpc "$py" "$here/python_client.py" sessions "$base" --binding GRPC
run js node "$here/js/stream.mjs" "$base"

# restart: SIGKILL the gateway mid-stream (from the client), start it on the same file, resubscribe
run restart-before "$py" "$here/python_client.py" restart-before "$base" "$work/restart.json" "$last_pid"
kill -9 "$last_pid" 2>/dev/null || true; wait "$last_pid" 2>/dev/null || true
start main-restarted "$port" --store "sqlite:$db" --agent "script:$script"
run restart-after "$py" "$here/python_client.py" restart-after "$base" "$work/restart.json"

# bearer auth accepted and refused
token="a2a-test-$RANDOM$RANDOM"
printf '%s\n' "$token" >"$work/token"
aport="$(free_port)"
start auth "$aport" --store memory --token-file "$work/token" --agent "script:$script"
run auth "$py" "$here/python_client.py" auth "http://127.0.0.1:$aport" "$token"
run auth-grpc "$py" "$here/python_client.py" auth "http://127.0.0.1:$aport" "$token" --binding GRPC

# chain: a gateway whose agent is a remote A2A agent (a second gateway)
cport="$(free_port)"
start chain "$cport" --store memory --agent "a2a:$base"
run chain "$py" "$here/python_client.py" chain "http://127.0.0.1:$cport"

# the behaviours an A2A TCK drives by message-id prefix (tck_script.json)
tport="$(free_port)"
start tck "$tport" --store memory --agent "script:$here/tck_script.json"
run tck "$py" "$here/python_client.py" tck "http://127.0.0.1:$tport"

# named agents, callers (API keys, an RS256 JWT, allow-lists, a rate limit) and /metrics of
# `e2a serve --config FILE`: the session writes its config, checks it and starts the gateway itself
rm -rf "$work/named"
run named-agents "$py" "$here/named_agents.py" "$E2A_BIN" "$work/named"

# GoAI-HMAC-SHA256 machine callers: every signature computed with Python's hmac (goai_hmac.py)
rm -rf "$work/hmac"
run goai-hmac "$py" "$here/goai_hmac.py" "$E2A_BIN" "$work/hmac"

# push notifications: the session writes its [a2a.push] config, starts its gateways (one on a
# SQLite file it restarts, one without --push-allow-private) and a webhook receiver on 127.0.0.1
rm -rf "$work/push"
run push "$py" "$here/push_sessions.py" "$E2A_BIN" "$work/push"

# [telemetry]: two gateways (A's agent is a2a:B) export OTLP/HTTP spans to a receiver the session
# runs on 127.0.0.1; one trace from the caller's traceparent through both
rm -rf "$work/trace"
run trace-otlp "$py" "$here/trace_otlp.py" "$E2A_BIN" "$work/trace"

echo "a2a-clients: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
