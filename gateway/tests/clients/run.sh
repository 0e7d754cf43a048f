#!/usr/bin/env bash
# Official clients nobody here wrote, against `e2a acp` and `e2a serve --agui`:
#   - the transparent ACP hop (transparent.sh): the official TypeScript and Python ACP clients
#     against fast-agent and a recording agent, directly and through `e2a acp --agent acp:…`;
#     the transcripts must be identical;
#   - @agentclientprotocol/sdk (npm, pinned in package-lock.json) spawning `e2a acp`: directly,
#     in front of an ACP agent behind the gateway (acp:CMD), in front of a second gateway over
#     E2A (e2a:URL) and over A2A (a2a:URL);
#   - acpx (npm, pinned in acpx/package-lock.json), a second black-box ACP client: `exec`;
#   - @ag-ui/client HttpAgent (npm, pinned) against `e2a serve --agui`, directly and in front of
#     an ACP agent;
#   - ag-ui-validate (PyPI, pinned in requirements.lock) on the live endpoint and on recorded
#     runs (tool calls, RUN_ERROR, interrupt).
# Servers listen on 127.0.0.1 only; every client run is bounded by a timeout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$here"

echo "== install the official clients (npm ci, pip -r requirements.lock)"
npm ci --no-audit --no-fund --loglevel=error
# acpx: `npm install` from its lock (npm ci refuses it; see acpx/package.json)
(cd acpx && npm install --no-audit --no-fund --loglevel=error)
if [ ! -x .venv/bin/ag-ui-validate ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q -r requirements.lock
fi

echo "== build e2a"
# E2A_SKIP_BUILD=1 uses the e2a already in target/debug
[ -n "${E2A_SKIP_BUILD:-}" ] || (cd "$root" && cargo build --locked -q -p e2a-cli)
E="$root/target/debug/e2a"
# $work, start_server, free_port, and the servers stopped at exit
. "$here/../support/serve.sh"
logs=$work
# `e2a acp` keeps its sessions in the user's state directory: a throwaway one here
export XDG_STATE_HOME="$logs/state"

ACP_SCRIPT="script:$here/data/acp-script.json"
AGUI_SCRIPT="script:$here/data/agui-script.json"

echo "== ACP: official client → e2a acp --agent script"
timeout 120 node acp_client.mjs direct -- "$E" acp --agent "$ACP_SCRIPT"

echo "== ACP: acpx (a second, black-box ACP client) → e2a acp --agent script"
# acpx_exec EXPECTED ACPX-ARGS… : `acpx … exec PROMPT` must print EXPECTED, end the turn and
# exit with $ACPX_RC (default 0; acpx exits 5 when it denied a permission)
acpx_exec() {
  local expected=$1
  shift
  local out rc=0
  out=$(HOME="$logs/acpx-home" timeout 120 acpx/node_modules/.bin/acpx --format text "$@" 2>&1) || rc=$?
  if [ "$rc" != "${ACPX_RC:-0}" ]; then
    echo "$out"
    echo "FAIL [acpx] exit status $rc, expected ${ACPX_RC:-0}"
    return 1
  fi
  if grep -qF -- "$expected" <<<"$out" && grep -qF "[done] end_turn" <<<"$out"; then
    echo "ok   [acpx] $* → $expected"
  else
    echo "$out"
    echo "FAIL [acpx] expected $expected"
    return 1
  fi
}
mkdir -p "$logs/acpx-home"
acpx_exec "It is 21 °C in Paris today." --agent "$E acp --agent $ACP_SCRIPT" exec "what is the weather in Paris?"
acpx_exec "Deployed." --approve-all --agent "$E acp --agent $ACP_SCRIPT" exec "please deploy"
ACPX_RC=5 acpx_exec "Not deployed." --deny-all --agent "$E acp --agent $ACP_SCRIPT" exec "please deploy"
acpx_exec "It is 21 °C in Paris today." --agent "$E acp --agent acp:'$E acp --agent $ACP_SCRIPT'" exec "what is the weather in Paris?"

echo "== ACP: official client → gateway/examples/acp_agent.rs (your own Agent behind AcpServer)"
[ -n "${E2A_SKIP_BUILD:-}" ] || (cd "$root" && cargo build --locked -q -p e2a-gateway --example acp_agent)
SCENARIO=example timeout 120 node acp_client.mjs example -- "$root/target/debug/examples/acp_agent"

echo "== ACP: official client → e2a acp --agent acp:\"e2a acp --agent script\" (the transparent hop: the client answers the agent's permission requests)"
timeout 120 node acp_client.mjs bridge-acp -- "$E" acp --agent "acp:$E acp --agent $ACP_SCRIPT"

echo "== ACP: official client → e2a acp --agent e2a:URL → e2a serve --agent script"
start_server e2a-back --agent "$ACP_SCRIPT"
timeout 120 node acp_client.mjs bridge-e2a -- "$E" acp --agent "e2a:http://127.0.0.1:$port"

echo "== ACP: official client → e2a acp --agent a2a:URL → e2a serve --a2a --agent script"
start_server a2a-back --a2a --store memory --agent "$ACP_SCRIPT"
# the A2A hop carries tool calls and the approval pause as e2a frames (metadata e2a_delta_kind /
# e2a_response_kind on the status messages): the client is asked, allow and deny
timeout 120 node acp_client.mjs bridge-a2a -- "$E" acp --agent "a2a:http://127.0.0.1:$port"
# the cancel at the front stopped the run at the back: its task there reads CANCELED
canceled=$(curl -sf -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' "http://127.0.0.1:$port/a2a" \
  -d '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_CANCELED"}}' \
  | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["result"]["tasks"]))')
if [ "${canceled:-0}" -ge 1 ]; then
  echo "ok   [bridge-a2a] the cancel at the front canceled the task at the back ($canceled canceled)"
else
  echo "FAIL [bridge-a2a] no canceled task at the back after the cancel at the front"; exit 1
fi

echo "== AG-UI: official HttpAgent → e2a serve --agui --agent script"
start_server agui --agui --agent "$AGUI_SCRIPT"
agui_port=$port
timeout 120 node agui_client.mjs "http://127.0.0.1:$agui_port"

echo "== AG-UI: official HttpAgent answers an interrupt asked before the gateway was killed (SQLite)"
start_server agui-restart --agui --store "sqlite:$logs/agui-restart.db" --agent "$AGUI_SCRIPT"
PHASE=ask STATE="$logs/agui-interrupt.json" timeout 60 node agui_client.mjs "http://127.0.0.1:$port"
kill -KILL "${pids[-1]}"
wait "${pids[-1]}" 2>/dev/null || true
start_server agui-restarted --agui --store "sqlite:$logs/agui-restart.db" --agent "$AGUI_SCRIPT"
PHASE=resume STATE="$logs/agui-interrupt.json" timeout 60 node agui_client.mjs "http://127.0.0.1:$port"

echo "== AG-UI: official HttpAgent → e2a serve --agui --agent acp:\"e2a acp --agent script\""
start_server agui-acp --agui --agent "acp:$E acp --agent $AGUI_SCRIPT"
INTERRUPTS=policy-deny timeout 120 node agui_client.mjs "http://127.0.0.1:$port" /agents/default/agui

echo "== AG-UI: ag-ui-validate on the live endpoint and on recorded runs"
timeout 60 .venv/bin/ag-ui-validate --no-color --features agentic-chat "http://127.0.0.1:$agui_port/agui"
for text in "what is the weather" "crash" "please deploy"; do
  curl -fsN --max-time 30 -H 'Content-Type: application/json' \
    -d "{\"threadId\":\"t-$RANDOM\",\"runId\":\"r-$RANDOM\",\"messages\":[{\"id\":\"m1\",\"role\":\"user\",\"content\":\"$text\"}],\"tools\":[],\"context\":[],\"state\":{},\"forwardedProps\":{}}" \
    "http://127.0.0.1:$agui_port/agui" >"$logs/run.sse"
  echo "-- $text"
  timeout 60 .venv/bin/ag-ui-validate --no-color "$logs/run.sse"
done

echo "== ACP: acplint (PyPI, pinned: acplint/requirements.lock) against e2a acp — its 6 failures are its own reading of the spec, judged one by one in acplint/run.sh"
bash "$here/acplint/run.sh" "$E"

echo "== ACP transparent hop: the official TypeScript and Python clients × fast-agent (PyPI, passthrough) and a recording agent, directly and through e2a acp --agent acp:… (pinned: acp-agents/requirements.lock)"
bash "$here/transparent.sh" "$E"

echo "== ACP: params.workspace_dir reaches fast-agent through acp: as its session cwd (e2a serve --workspace-root)"
bash "$here/workspace_dir.sh" "$E"

echo "== official clients: all sessions passed"
