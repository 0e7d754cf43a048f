"""Normalized transcripts of one answer, read from what each client protocol delivered, and the
rule that says whether a client was shown everything the agent answered.

A transcript is a dict:
  text       the agent's words a user reads, in order
  segments   (reference only) the runs of text between other frames, each of which must show
  reasoning  the agent's reasoning (informational: not compared)
  tools      [{"id", "name", "result"}] tool calls, `result` when their result arrived
  artifacts  [{"name", "text"}] artifacts by name, `text` their parts as text
  asked      None | "input" | "approval": the agent paused for the user
  question   what it asked
  final      "completed" | "paused" | "refused" | "failed" | "canceled"
  error      the error or refusal message
The E2A SSE transcript of a case is the reference; `compare` lists what a client lost.
"""

import json
import re


def empty(client):
    return {"client": client, "text": "", "segments": [], "reasoning": "", "tools": [], "artifacts": [],
            "asked": None, "question": None, "final": None, "error": None}


def _whole_numbers(v):
    """Numbers as JSON has them: ProtoJSON reads every number of a data part as a float."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_whole_numbers(x) for x in v]
    if isinstance(v, dict):
        return {k: _whole_numbers(x) for k, x in v.items()}
    return v


def part_pieces(part):
    """What a user must be shown of one A2A/E2A artifact part, as pieces of text each of which
    must show: a text part whole; data by each of its scalar values with its key (renderings
    differ in key order and spacing); a file by its URL, or its name when its bytes came inline
    (the artifact's name is checked apart)."""
    if "text" in part:
        return [part["text"]]
    if "data" in part:
        return _leaves(_whole_numbers(part["data"]))
    f = part.get("file", part)
    return [str(f.get("url") or f.get("uri") or f.get("filename") or f.get("name") or "")]


def _leaves(v, key=None):
    if isinstance(v, dict):
        return [x for k, item in v.items() for x in _leaves(item, k)]
    if isinstance(v, list):
        return [x for item in v for x in _leaves(item, key)]
    scalar = json.dumps(v, ensure_ascii=False)
    return [f"{json.dumps(key)}:{scalar}" if key is not None else scalar]


def part_text(part):
    return " ".join(part_pieces(part))


def _tool(t, call_id, name=None, result=False):
    for tool in t["tools"]:
        if tool["id"] == call_id:
            tool["name"] = tool["name"] or name
            tool["result"] = tool["result"] or result
            return
    t["tools"].append({"id": call_id, "name": name, "result": result})


def _artifact(t, key, name, parts, append):
    pieces = [x for p in parts for x in part_pieces(p)]
    for a in t["artifacts"]:
        if a["key"] == key:
            a["pieces"] = (a["pieces"] if append else []) + pieces
            a["text"] = " ".join(a["pieces"])
            return
    t["artifacts"].append({"key": key, "name": name, "pieces": pieces, "text": " ".join(pieces)})


def _tool_delta(t, delta):
    call = delta.get("tool_call") if isinstance(delta, dict) else None
    if isinstance(call, dict):
        _tool(t, call.get("tool_call_id") or call.get("id"), call.get("name"))
    elif isinstance(delta, dict) and delta.get("tool_call_id"):
        _tool(t, delta["tool_call_id"], result=True)


def _shown_final(t, content):
    """A final content the stream did not show as text is shown after it (`e2a::shown`)."""
    if isinstance(content, str) and content and squash(content) not in squash(t["text"]):
        t["text"] += content
        t["segments"].append(content)


def _gathered(t, holder):
    """What a final frame sent alone holds of the stream before it (`e2a::shown::WholeAnswer`):
    `content`, `artifacts`, `tool_calls` of an answer's result or a failure's details."""
    for a in holder.get("artifacts") or []:
        _artifact(t, a.get("artifact_id"), a.get("name"), a.get("parts") or [], False)
    for call in holder.get("tool_calls") or []:
        _tool(t, call.get("tool_call_id"), call.get("name"), "result" in call)
    _shown_final(t, holder.get("content"))


def from_e2a(frames, client="e2a-sse"):
    """Frames (E2AResponse dicts) of one run: the reference, and the E2A clients' view."""
    t = empty(client)
    open_segment = False
    for f in frames:
        kind, body = f.get("response_kind"), f.get("body") or {}
        if kind == "e2a.chunk" and body.get("delta_kind") == "text":
            t["text"] += body.get("delta") or ""
            if open_segment:
                t["segments"][-1] += body.get("delta") or ""
            else:
                t["segments"].append(body.get("delta") or "")
            open_segment = True
            continue
        open_segment = False
        if kind == "e2a.chunk" and body.get("delta_kind") == "reasoning":
            t["reasoning"] += body.get("delta") or ""
        elif kind == "e2a.chunk" and body.get("delta_kind") == "tool":
            _tool_delta(t, body.get("delta"))
        elif kind == "e2a.chunk" and body.get("event_type") == "artifact":
            d = body.get("delta") or {}
            _artifact(t, d.get("artifact_id"), d.get("name"), d.get("parts") or [], d.get("append"))
        elif kind == "a2a.message":
            said = "\n".join(p["text"] for p in body.get("parts", []) if "text" in p)
            t["text"] += said
            t["segments"].append(said)
        elif kind == "plan.approval_required":
            _asked(t, body.get("input_kind") or "approval", body.get("plan_content"))
        elif kind == "e2a.complete":
            result = body.get("result") or {}
            _gathered(t, result)
            if result.get("state") == "input_required":
                t["final"] = "paused"
                t["asked"] = t["asked"] or result.get("input_kind") or "input"
                t["question"] = t["question"] or result.get("prompt")
            else:
                t["final"] = "completed"
        elif kind == "e2a.error":
            details = body.get("details") or {}
            _gathered(t, details)
            code = body.get("code") or ""
            t["final"] = "refused" if details.get("rejected") else "canceled" if "CANCEL" in code else "failed"
            t["error"] = body.get("message")
        elif kind not in ("e2a.chunk",):
            t.setdefault("unread", []).append(kind)
    return t


def _asked(t, kind, question):
    """One question of a pause (a pause may ask several): an approval among them asks for
    approval, and the questions are kept one per line, each once."""
    t["asked"] = "approval" if "approval" in (t["asked"], kind) else kind
    if question and question not in (t["question"] or "").split("\n"):
        t["question"] = f"{t['question']}\n{question}" if t["question"] else question


def _a2a_message(t, m, state=None):
    """An agent message of a status (or the task's history)."""
    meta = m.get("metadata") or {}
    parts = m.get("parts") or []
    said = "\n".join(p["text"] for p in parts if "text" in p)
    data = [p["data"] for p in parts if "data" in p]
    if meta.get("e2a_delta_kind") == "reasoning":
        t["reasoning"] += said
    elif meta.get("e2a_delta_kind") == "tool":
        for d in data:
            _tool_delta(t, d)
    elif meta.get("e2a_response_kind") == "plan.approval_required" or state == "TASK_STATE_INPUT_REQUIRED":
        kind = next((d.get("input_kind") for d in data if isinstance(d, dict) and d.get("input_kind")), "input")
        _asked(t, kind, said)
    elif state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
        t["error"] = said
    elif said:
        _shown_final(t, said)


FINAL = {"TASK_STATE_COMPLETED": "completed", "TASK_STATE_INPUT_REQUIRED": "paused",
         "TASK_STATE_AUTH_REQUIRED": "paused", "TASK_STATE_REJECTED": "refused",
         "TASK_STATE_FAILED": "failed", "TASK_STATE_CANCELED": "canceled"}


def _a2a_status(t, status):
    state = status.get("state")
    if status.get("message"):
        _a2a_message(t, status["message"], state)
    if state in FINAL:
        t["final"] = FINAL[state]


def _a2a_artifact(t, a, append):
    parts = a.get("parts") or []
    if a.get("name") == "output" or (a.get("artifactId") or "").endswith("-output"):
        t["text"] += "".join(p.get("text", "") for p in parts)
    else:
        _artifact(t, a.get("artifactId"), a.get("name"), parts, append)


def from_a2a(events, client):
    """A2A `StreamResponse`s (ProtoJSON dicts), a unary answer being one `task` or `message`."""
    t = empty(client)
    for ev in events:
        if "message" in ev:
            m = ev["message"]
            t["text"] += "\n".join(p["text"] for p in m.get("parts", []) if "text" in p)
            t["final"] = "completed"
        elif "task" in ev:
            task = ev["task"]
            status = task.get("status") or {}
            # the agent's messages in the history, but the status message (read with the state)
            current = (status.get("message") or {}).get("messageId")
            for m in task.get("history") or []:
                if m.get("role") == "ROLE_AGENT" and m.get("messageId") != current:
                    _a2a_message(t, m)
            for a in task.get("artifacts") or []:
                _a2a_artifact(t, a, False)
            _a2a_status(t, status)
        elif "statusUpdate" in ev:
            _a2a_status(t, ev["statusUpdate"].get("status") or {})
        elif "artifactUpdate" in ev:
            u = ev["artifactUpdate"]
            _a2a_artifact(t, u.get("artifact") or {}, u.get("append"))
    if t["final"] == "paused" and not t["asked"]:
        t["asked"] = "input"
    return t


def squash(s):
    """Text compared without its whitespace (renderings differ in spaces and line breaks)."""
    return re.sub(r"\s+", "", s or "")


def compare(ref, got, checks=("text", "tools", "artifacts", "final")):
    """What `got` lost of `ref` (empty: nothing). A client answering a pause in its own turn (ACP
    asks the user inside the turn) must have asked the same kind of question."""
    lost = []
    seen = squash(" ".join([got["text"], got.get("question") or "", got.get("error") or ""]
                           + [f"{a['name']} {a['text']}" for a in got["artifacts"]]))
    if "text" in checks:
        for seg in ref["segments"]:
            if squash(seg) and squash(seg) not in seen:
                lost.append(f"text {seg!r}")
    if "artifacts" in checks:
        for a in ref["artifacts"]:
            if squash(a["name"]) not in seen:
                lost.append(f"artifact {a['name']!r}")
            else:
                lost += [f"artifact {a['name']!r} content {p[:40]!r}" for p in a["pieces"] if squash(p) not in seen]
    if "tools" in checks:
        # by id: ACP shows a tool by a title, the others by its name
        ids = {tool["id"]: tool for tool in got["tools"]}
        for tool in ref["tools"]:
            if tool["id"] not in ids:
                lost.append(f"tool call {tool['id']!r} ({tool['name']})")
            elif tool["result"] and not ids[tool["id"]]["result"]:
                lost.append(f"tool result of {tool['id']!r}")
    if ref["asked"]:
        if got["asked"] != ref["asked"]:
            lost.append(f"asked {got['asked']!r}, not {ref['asked']!r}")
        elif squash(ref["question"]) not in seen:
            lost.append(f"question {ref['question']!r}")
    elif "final" in checks and got["final"] != ref["final"]:
        lost.append(f"final {got['final']!r}, not {ref['final']!r}")
    if ref["error"] and squash(ref["error"]) not in seen:
        lost.append(f"error {ref['error']!r}")
    return lost
