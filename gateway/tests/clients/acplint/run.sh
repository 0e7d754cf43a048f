#!/usr/bin/env bash
# acplint (PyPI, a third-party ACP agent linter, pinned in requirements.lock) against `e2a acp`:
#   (a) E2A_BIN acp --agent script:gateway/tests/clients/data/acp-script.json
#   (b) E2A_BIN acp --agent echo
# All 14 categories; JSON report; the stdio wire of each run is recorded (tee on both sides of
# the agent) so that every failing check is judged against what acplint sent and e2a answered.
# A failing check is either a known linter defect (acplint reads the ACP spec wrongly: listed
# with its one-line reason, the exact wire evidence required) or ours.
#
# Usage: gateway/tests/clients/acplint/run.sh E2A_BIN
#   E2A_BIN must not change during the run (copy a binary that is refreshed elsewhere first).
#   Python >= 3.11 (acplint's floor): $PYTHON, else python3, else the newest ~/.pyenv/versions/3.*.
# Exit: 0 when every failing check is a known linter defect; 1 when one is ours, or acplint
# gave no report (crash, 300 s timeout); 2 on bad usage.
# Notes on acplint's options: --timeout is ignored by acplint 0.1.0 (its transport waits 30 s
# per request, hard-coded); --no-auto-allow is left off: no acplint prompt reaches a permission
# step of these agents, and acplint's auto-answer is not spec-shaped anyway (see the report).
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 E2A_BIN" >&2; exit 2; }
[[ -x $1 && -f $1 ]] || { echo "E2A_BIN: not an executable file: $1" >&2; exit 2; }
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
script="$root/gateway/tests/clients/data/acp-script.json"

# --- the pinned linter, in .venv (git-ignored by gateway/tests/clients/.gitignore: .venv/) ---
pick_python() {
  local c
  for c in ${PYTHON:-} python3 $(ls -d "$HOME"/.pyenv/versions/3.* 2>/dev/null | sort -V -r | sed 's|$|/bin/python3|'); do
    command -v "$c" >/dev/null 2>&1 || continue
    "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo "$c"; return 0; }
  done
  return 1
}
venv="$here/.venv"
if [[ ! -x $venv/bin/acplint ]] || ! cmp -s "$here/requirements.lock" "$venv/.installed.lock"; then
  py=$(pick_python) || { echo "no python >= 3.11 (acplint needs it)" >&2; exit 1; }
  echo "== install acplint (pip -r requirements.lock, $("$py" --version))"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.lock"
  cp "$here/requirements.lock" "$venv/.installed.lock"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# lint NAME AGENT_CMD… : runs acplint against the agent, then judges every failing check
ours=0
lint() {
  local name=$1 dir="$work/$1" rc=0
  shift
  mkdir -p "$dir/cwd"
  # the agent command acplint spawns (no --agent-args: acplint splits them on blanks)
  {
    echo '#!/usr/bin/env bash'
    printf 'tee -a %q | ' "$dir/in.jsonl"
    printf '%q ' "$@"
    printf '| tee -a %q\n' "$dir/out.jsonl"
  } >"$dir/agent.sh"
  chmod +x "$dir/agent.sh"
  echo "== acplint ($name): $*"
  (cd "$dir/cwd" && timeout -k 10 300 "$venv/bin/acplint" --agent "$dir/agent.sh" --cwd "$dir/cwd" \
    --output json --output-file "$dir/report.json") >"$dir/acplint.log" 2>&1 || rc=$?
  if [[ ! -s $dir/report.json ]]; then
    echo "acplint gave no report (exit $rc):"
    tail -n 30 "$dir/acplint.log"
    ours=1
    return
  fi
  "$venv/bin/python" - "$name" "$dir" "$rc" <<'PY' || ours=1
import json
import sys
from pathlib import Path

import pydantic
from acplint.schema import InitializeResponse

name, d, rc = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
report = json.loads((d / "report.json").read_text())


def frames(path):
    out = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


sent, got = frames(d / "in.jsonl"), frames(d / "out.jsonl")
answers = {m["id"]: m for m in got if "id" in m and "method" not in m}
prompts = [m for m in sent if m.get("method") == "session/prompt" and "id" in m]


def rejected_for_content(m):
    p, a = m.get("params") or {}, answers.get(m["id"]) or {}
    return "prompt" not in p and "content" in p and (a.get("error") or {}).get("code") == -32602


all_prompts_rejected = bool(prompts) and all(rejected_for_content(m) for m in prompts)
update_kinds = {
    ((m.get("params") or {}).get("update") or {}).get("sessionUpdate")
    for m in got
    if m.get("method") == "session/update"
}

VERSION = ("acplint models ProtocolVersion as the string \"1\"; the spec's ProtocolVersion is an "
           "integer (schema.json $defs.ProtocolVersion: uint16), e2a answers 1")
PROMPT = ("acplint sends session/prompt params `content`; the spec's PromptRequest requires "
          "`prompt` (ContentBlock[], $defs.PromptRequest), so e2a answers -32602 and no turn runs")
CAMEL = ("acplint counts sessionUpdate `agentMessageChunk`; the spec's discriminator is "
         "`agent_message_chunk` ($defs.SessionUpdate)")


def known_defect(r):
    """(reason, wire evidence) when the failure is acplint's own misreading of the spec."""
    det = r.get("details") or {}
    if r["name"] in ("initialize_v1", "schema_initialize"):
        raw = det.get("raw_result") or {}
        if type(raw.get("protocolVersion")) is int and raw["protocolVersion"] == 1:
            try:  # everything else in e2a's answer passes acplint's own model
                InitializeResponse.model_validate({**raw, "protocolVersion": "1"})
                return VERSION, "e2a answered protocolVersion 1 (integer)"
            except pydantic.ValidationError:
                return None
    if r["name"] == "protocol_version_returned":
        if type(det.get("actual")) is int and det["actual"] == 1:
            return VERSION, "e2a answered protocolVersion 1 (integer)"
    if r["category"] == "streaming" and r["name"] in (
        "session_update_received", "agent_message_chunk_received", "prompt_stop_reason"
    ) and all_prompts_rejected:
        first = answers[prompts[0]["id"]]["error"]
        return PROMPT, (f"all {len(prompts)} session/prompt sent `content`, e2a answered each "
                        f"{first['code']} {first['message']!r}")
    if r["name"] == "agent_message_chunk_received" and "agent_message_chunk" in update_kinds:
        return CAMEL, "e2a streamed session/update agent_message_chunk"
    return None


results = report["results"]
bad = [r for r in results if r["status"] in ("FAIL", "ERROR")]
mine = 0
for r in bad:
    k = known_defect(r)
    tag = f"{r['status']:5} {r['category']}/{r['name']}"
    if k:
        print(f"  {tag}: known linter defect: {k[0]}")
        print(f"        acplint: {r['message']} | wire: {k[1]}")
    else:
        mine += 1
        print(f"  {tag}: OURS: {r['message']}")
        if r.get("details"):
            print(f"        details: {json.dumps(r['details'])[:600]}")
n_pass = sum(r["status"] == "PASS" for r in results)
n_skip = sum(r["status"] == "SKIP" for r in results)
print(f"acplint ({name}): {len(results)} checks — {n_pass} pass, {len(bad)} fail/error, {n_skip} skip; "
      f"of the failures {len(bad) - mine} known linter defects, {mine} ours "
      f"(acplint exit {rc}: {report['conformance_level']})")
sys.exit(1 if mine else 0)
PY
}

lint script "$bin" acp --agent "script:$script"
lint echo "$bin" acp --agent echo

if [[ $ours -ne 0 ]]; then
  echo "acplint: failures of ours (see above)"
  exit 1
fi
echo "acplint: every failing check is a known linter defect"
