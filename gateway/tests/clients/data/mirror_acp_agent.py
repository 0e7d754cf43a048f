#!/usr/bin/env python3
"""An ACP agent that shows what reached it, for the transparent-relay tests (gateway/tests/acp_relay.rs).

Every line it reads is appended to $MIRROR_LOG (when set). Every process start appends "start"
to $MIRROR_STARTS (when set).

  initialize        answers with its own agentInfo, authMethods, capabilities and _meta
  session/new       answers with a session id and two modes, then sends available_commands_update
  session/set_mode  sends current_mode_update, answers {}
  _mirror/echo      answers {"method", "params"}: the params exactly as received
  session/prompt, by the prompt's text:
    ask       asks the client session/request_permission, then fs/read_text_file; says both answers
    secret    says a text with a bearer token in it
    noise     writes a line that is not JSON to stdout, then says "after noise"
    crash     exits with status 3 in the middle of the turn
    flood N   says N chunks of 80 bytes, writing how many it has said to $MIRROR_FLOODED every 1,000
    slow      says "tick" and waits: session/cancel ends the turn with stopReason cancelled,
              $/cancel_request of the prompt's id answers it with error -32800
    else      says "mirror: <text>"
"""
import json
import os
import sys

import acp_lines
from acp_lines import count_start, recv, request, say, send, update

count_start("MIRROR_STARTS")
acp_lines.LOG = os.environ.get("MIRROR_LOG")


sessions = 0
while True:
    m = recv()
    method, rid, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": True, "mcpCapabilities": {"http": True, "sse": True},
                                  "promptCapabilities": {"image": True}},
            "authMethods": [{"id": "mirror-key", "name": "Mirror key", "description": "a key"}],
            "agentInfo": {"name": "mirror", "title": "Mirror agent", "version": "1.2.3"},
            "_meta": {"mirror.example/flavour": "plain"}}})
    elif method == "session/new":
        sessions += 1
        sid = f"mirror-{sessions}"
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid, "modes": {
            "currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}}})
        update(sid, {"sessionUpdate": "available_commands_update",
                     "availableCommands": [{"name": "plan", "description": "Make a plan"}]})
    elif method == "session/set_mode":
        update(p["sessionId"], {"sessionUpdate": "current_mode_update", "currentModeId": p["modeId"]})
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "_mirror/echo":
        send({"jsonrpc": "2.0", "id": rid, "result": {"method": method, "params": p}})
    elif method == "session/prompt":
        sid = p["sessionId"]
        text = "".join(b.get("text", "") for b in p.get("prompt", []))
        stop = "end_turn"
        if text == "ask":
            r1 = request("c1", "session/request_permission", {
                "sessionId": sid,
                "toolCall": {"toolCallId": "t1", "title": "Edit a file", "kind": "edit"},
                "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
            r2 = request(0, "fs/read_text_file", {"sessionId": sid, "path": "/work/notes.txt"})
            say(sid, json.dumps([r1.get("result"), r2.get("result")], sort_keys=True))
        elif text == "secret":
            say(sid, "use Authorization: Bearer abcdefgh12345678 please")
        elif text == "noise":
            sys.stdout.write("this line is not JSON\n")
            sys.stdout.flush()
            say(sid, "after noise")
        elif text == "crash":
            say(sid, "about to crash")
            sys.exit(3)
        elif text.startswith("flood "):
            n = int(text.split()[1])
            for i in range(1, n + 1):
                say(sid, "x" * 80)
                if i % 1000 == 0 or i == n:
                    with open(os.environ["MIRROR_FLOODED"], "w") as f:
                        f.write(str(i))
        elif text == "slow":
            say(sid, "tick")
            while True:
                c = recv()
                if c.get("method") == "session/cancel":
                    stop = "cancelled"
                    break
                if c.get("method") == "$/cancel_request" and c["params"].get("requestId") == rid:
                    stop = None
                    break
            if stop is None:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32800, "message": "Request cancelled"}})
                continue
        else:
            say(sid, f"mirror: {text}")
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
