"""Newline-delimited JSON-RPC over stdio, for the small ACP agents of the tests
(fake_acp_agent.py, mirror_acp_agent.py)."""
import json
import os
import sys

# A file every line read is appended to (mirror_acp_agent.py: $MIRROR_LOG), or None.
LOG = None


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def recv():
    """The next message; the process exits when its input ends."""
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    if LOG:
        with open(LOG, "a") as f:
            f.write(line)
    return json.loads(line)


def request(rid, method, params):
    """Sends a request to the client and waits for its answer (other messages are dropped)."""
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        m = recv()
        if m.get("id") == rid and "method" not in m:
            return m


def update(sid, u):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})


def say(sid, text):
    update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def count_start(var):
    """Appends a line to the file named by $var (when set): how many times the agent started."""
    if os.environ.get(var):
        with open(os.environ[var], "a") as f:
            f.write("start\n")
