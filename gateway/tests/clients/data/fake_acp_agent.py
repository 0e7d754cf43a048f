#!/usr/bin/env python3
"""A minimal ACP agent for the gateway's acp:CMD backend tests (gateway/tests/acp_backend.rs).

The prompt text selects what it does:
  crash          exits with status 3 in the middle of the turn
  fs [PATH]      asks its client for fs/read_text_file of PATH (default /etc/hostname) and
                 terminal/create, says the error codes
  permission K   asks session/request_permission for a tool call of kind K, says the option chosen
  session        says its session id
  cwd            says its session's working directory (session/new's cwd)
  anything else  says "fake: <text>"
Every process start appends a line to $FAKE_ACP_COUNTER (when set).
"""
import json
import sys

from acp_lines import count_start, recv, request, say, send

count_start("FAKE_ACP_COUNTER")


sessions = 0
cwds = {}
while True:
    m = recv()
    method, rid, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        sessions += 1
        cwds[f"fake-{sessions}"] = p.get("cwd", "")
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"fake-{sessions}"}})
    elif method == "session/prompt":
        sid = p["sessionId"]
        text = "".join(b.get("text", "") for b in p.get("prompt", []))
        if text == "crash":
            say(sid, "about to crash")
            sys.exit(3)
        elif text == "fs" or text.startswith("fs "):
            path = text[3:] or "/etc/hostname"
            r1 = request("c1", "fs/read_text_file", {"sessionId": sid, "path": path})
            r2 = request("c2", "terminal/create", {"sessionId": sid, "command": "ls"})
            say(sid, json.dumps([r1.get("error", {}).get("code"), r2.get("error", {}).get("code")]))
        elif text.startswith("permission "):
            kind = text.split(" ", 1)[1]
            r = request("p1", "session/request_permission", {
                "sessionId": sid,
                "toolCall": {"toolCallId": "t1", "title": f"Run a {kind} tool", "kind": kind},
                "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
            say(sid, r["result"]["outcome"].get("optionId", "cancelled"))
        elif text == "session":
            say(sid, sid)
        elif text == "cwd":
            say(sid, cwds.get(sid, ""))
        else:
            say(sid, f"fake: {text}")
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
