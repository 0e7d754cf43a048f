#!/usr/bin/env bash
# Is `e2a acp --agent acp:CMD` a transparent ACP relay? Real third-party software says:
#   clients: the official TypeScript client (@agentclientprotocol/sdk, acp_transparent.mjs) and
#            the official Python client (agent-client-protocol, acp_transparent.py);
#   agents:  fast-agent (fast-agent-mcp on PyPI: `fast-agent acp --model passthrough`, offline)
#            and acp-agents/recording_agent.py (the official Python SDK, agent side, recording
#            what it receives).
# For each client × agent the scenario runs against the agent directly and again through
# `E2A_BIN acp --agent "acp:AGENT"`; each run checks itself (exit status) and prints a normalized
# JSON transcript; the two transcripts must be identical.
#
# usage: transparent.sh E2A_BIN
#   TRANSPARENT_LOGS=DIR  keep transcripts and logs in DIR (default: a temporary directory, removed)
#   TRANSPARENT_ONLY="node/recording python/fast-agent …"  run only these client/agent pairs
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 E2A_BIN" >&2; exit 2; }
E=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$E" ] || { echo "not executable: $1" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
start=$SECONDS

# find_python312, venv_from_lock
. "$here/../pyenv.sh"

echo "== install the clients and agents (npm ci; acp-agents/.venv from requirements.lock)"
[ -d node_modules/@agentclientprotocol/sdk ] || npm ci --no-audit --no-fund --loglevel=error
venv=acp-agents/.venv
venv_from_lock "$venv" acp-agents/requirements.lock "$(find_python312)"
PY="$here/$venv/bin/python"
FAST_AGENT="$here/$venv/bin/fast-agent"
"$FAST_AGENT" --version >/dev/null

if [ -n "${TRANSPARENT_LOGS:-}" ]; then
  logs=$TRANSPARENT_LOGS
  mkdir -p "$logs"
else
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
fi

# agent_cmd AGENT STATE-DIR : the agent command (one word per line)
agent_cmd() {
  case $1 in
    fast-agent) printf '%s\n' "$FAST_AGENT" --no-update-check --home "$2" acp --model passthrough ;;
    recording) printf '%s\n' "$PY" "$here/acp-agents/recording_agent.py" --history "$2" ;;
  esac
}

failed=0
# run LABEL CLIENT AGENT CMD… : one scenario run, bounded by a timeout; its transcript in $logs/LABEL.json
run() {
  local label=$1 client=$2 agent=$3
  shift 3
  local out="$logs/$label.json" log="$logs/$label.log" rc=0 t0=$SECONDS
  local c
  case $client in
    node) c=(node acp_transparent.mjs) ;;
    python) c=("$PY" acp_transparent.py) ;;
  esac
  ACP_AGENT_STDERR="$logs/$label.agent.log" timeout 150 "${c[@]}" "$agent" -- "$@" >"$out" 2>"$log" || rc=$?
  local n
  n=$(grep -c '^ok ' "$log" || true)
  if [ "$rc" = 0 ]; then
    echo "ok   [$label] $n checks passed ($((SECONDS - t0)) s)"
  else
    echo "FAIL [$label] exit status $rc ($n checks passed, $((SECONDS - t0)) s):"
    grep -E '^FAIL|timed out|Error' "$log" | head -20 | sed 's/^/       /'
    [ "$rc" != 124 ] || echo "       (killed by timeout)"
    echo "       agent stderr (last lines):"
    tail -5 "$logs/$label.agent.log" 2>/dev/null | sed 's/^/       /'
    failed=1
  fi
}

for client in node python; do
  for agent in fast-agent recording; do
    case " ${TRANSPARENT_ONLY:-$client/$agent} " in *" $client/$agent "*) ;; *) continue ;; esac
    echo "== $client client × $agent: directly, then through e2a acp --agent acp:…"
    mapfile -t direct < <(agent_cmd "$agent" "$logs/$client-$agent-direct.state")
    run "$client-$agent-direct" "$client" "$agent" "${direct[@]}"
    mapfile -t relayed < <(agent_cmd "$agent" "$logs/$client-$agent-relay.state")
    run "$client-$agent-relay" "$client" "$agent" "$E" acp --agent "acp:$(printf '%q ' "${relayed[@]}")"
    if [ ! -s "$logs/$client-$agent-direct.json" ] || [ ! -s "$logs/$client-$agent-relay.json" ]; then
      echo "FAIL [$client/$agent] no transcript to compare"
      failed=1
    elif diff -u --label "direct" --label "through e2a acp" "$logs/$client-$agent-direct.json" "$logs/$client-$agent-relay.json" >"$logs/$client-$agent.diff"; then
      echo "ok   [$client/$agent] the transcripts are identical ($(wc -l <"$logs/$client-$agent-direct.json") lines)"
    else
      echo "FAIL [$client/$agent] the relay changed what the client saw ($(grep -c '^[-+][^-+]' "$logs/$client-$agent.diff") lines differ):"
      head -120 "$logs/$client-$agent.diff" | sed 's/^/       /'
      failed=1
    fi
  done
done

# the two official SDKs, against the same agent directly, see the same thing
for agent in fast-agent recording; do
  a="$logs/node-$agent-direct.json" b="$logs/python-$agent-direct.json"
  [ -s "$a" ] && [ -s "$b" ] || continue
  if diff <(grep -v '^  "client": ' "$a") <(grep -v '^  "client": ' "$b") >"$logs/sdks-$agent.diff"; then
    echo "ok   [node≡python/$agent] the TypeScript and Python clients saw the same transcript"
  else
    echo "FAIL [node≡python/$agent] the TypeScript and Python clients saw different transcripts:"
    head -40 "$logs/sdks-$agent.diff" | sed 's/^/       /'
    failed=1
  fi
done

echo "== transparent relay: $([ $failed = 0 ] && echo "all runs passed, all transcripts identical" || echo FAILED) ($((SECONDS - start)) s)"
exit $failed
