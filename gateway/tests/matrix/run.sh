#!/usr/bin/env bash
# The cross-protocol matrix (matrix.py): every client protocol (E2A JSON and SSE; A2A JSON-RPC,
# HTTP+JSON and gRPC with the official a2a-sdk; AG-UI with @ag-ui/client; ACP with
# @agentclientprotocol/sdk) against every kind of agent (echo, the script agent's scenarios,
# fast-agent over A2A and over ACP, an a2a-sdk server answering with a Message and with a named
# artifact), through one `e2a serve --config` and `e2a acp --config`. Prints the table; exits 1
# when a client was not shown everything the agent answered.
#
# usage: gateway/tests/matrix/run.sh        (needs python3 >= 3.10, a Python >= 3.12, node >= 20)
# Env: E2A_BIN (a built e2a; default: cargo build -p e2a-cli), MATRIX_WORK (scratch dir),
#      MATRIX_ONLY="script echo" (only these agents' cases).
# Every server listens on 127.0.0.1; every client run is bounded by a timeout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tests=$(cd "$here/.." && pwd)
work=${MATRIX_WORK:-$root/target/matrix}
if [ -z "${E2A_BIN:-}" ]; then
  (cd "$root" && cargo build --locked -q -p e2a-cli)
  E2A_BIN=$root/target/debug/e2a
fi
E2A_BIN=$(cd "$(dirname "$E2A_BIN")" && pwd)/$(basename "$E2A_BIN")

echo "== clients and agents (pinned: a2a_clients/requirements.lock, clients/package-lock.json, clients/acp-agents/requirements.lock)"
. "$tests/pyenv.sh"
# the same environments the client suites use: made once, shared
venv_from_lock "$root/target/a2a-clients/venv" "$tests/a2a_clients/requirements.lock"
venv_from_lock "$tests/clients/acp-agents/.venv" "$tests/clients/acp-agents/requirements.lock" "$(find_python312)"
[ -d "$tests/clients/node_modules/@agentclientprotocol/sdk" ] ||
  (cd "$tests/clients" && npm ci --no-audit --no-fund --loglevel=error)

rm -rf "$work"
only=()
for agent in ${MATRIX_ONLY:-}; do only+=(--only "$agent"); done
cd "$here"
timeout 900 "$root/target/a2a-clients/venv/bin/python" matrix.py "$E2A_BIN" "$work" \
  --fast-agent "$tests/clients/acp-agents/.venv/bin/fast-agent" \
  --agent-python "$tests/clients/acp-agents/.venv/bin/python" "${only[@]}"
