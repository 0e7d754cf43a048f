#!/usr/bin/env bash
# A prompt's own directory (E2A §11.6 `params.workspace_dir`) reaches a real ACP agent as its
# session's cwd: fast-agent (PyPI `fast-agent-mcp`, passthrough, pinned in
# acp-agents/requirements.lock) behind `e2a serve --agent acp:… --workspace-root ROOT`. fast-agent
# keeps its sessions under its session's cwd (`.fast-agent/sessions/`, its default home being
# relative), so each prompt's directory holds its session; a directory outside the root is
# refused and nothing is made there. Usage: workspace_dir.sh E2A_BIN (after transparent.sh made
# the venv). Listens on 127.0.0.1 only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
E=$1
FAST_AGENT="$here/acp-agents/.venv/bin/fast-agent"
. "$here/../support/serve.sh"
root="$work/workspaces"
mkdir -p "$root" "$work/cwd"
# from an empty directory: fast-agent reads a fastagent.config.yaml from its working directory
SERVE_DIR="$work/cwd" start_server serve --workspace-root "$root" \
  --agent "acp:$FAST_AGENT --no-update-check acp --model passthrough"

ask() { # ask TEXT WORKSPACE_DIR: the final frame
  curl -fs --max-time 60 -H 'Content-Type: application/json' \
    -d "{\"method\":\"chat.send\",\"params\":{\"query\":\"$1\",\"workspace_dir\":\"$2\"}}" \
    "http://127.0.0.1:$port/v1/e2a/requests"
}

for ws in proj-a proj-b/nested; do
  answer=$(ask "hello from $ws" "$ws")
  if ! grep -qF "\"content\":\"hello from $ws\"" <<<"$answer"; then
    echo "FAIL: fast-agent did not answer in $ws: $answer"; cat "$work/serve.log"; exit 1
  fi
  sessions=("$root/$ws/.fast-agent/sessions/"*/)
  if [ ! -d "${sessions[0]}" ]; then
    echo "FAIL: fast-agent's session is not under $root/$ws:"; find "$root" -maxdepth 5; exit 1
  fi
  echo "ok: workspace_dir=$ws is fast-agent's session cwd (${sessions[0]#$root/})"
done

answer=$(ask "out of bounds" "../escape" || true)
if [ -e "$work/escape" ]; then
  echo "FAIL: a directory was made outside the root: $answer"; exit 1
fi
echo "ok: workspace_dir=../escape made nothing outside the root ($(grep -o '"code":"[A-Z_.]*"' <<<"$answer" || echo "answered in the default directory"))"
