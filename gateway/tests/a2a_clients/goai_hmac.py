"""GoAI-HMAC-SHA256 machine identity against `e2a serve --config FILE`, black-box: every
signature here is computed with Python's own `hmac` and `hashlib` from the canonical string the
gateway README writes down — nothing of the gateway's code signs.

Writes a configuration into WORK_DIR: two named agents (`writer`, `reader`: echo) and two
machine callers (`planner`, every agent; `outsider`, `reader` only), each with an HMAC key file.
Then, over A2A HTTP+JSON (`POST /a2a/agents/writer/message:send`, `GET …/tasks/{id}`) and the
official a2a-sdk types: a valid signature is served (POST with a body, GET with none); the same
request again (its nonce spent), a time outside the window either way, a body other than the one
signed, another key, an unknown agent code and a missing header are each 401 without the key in
the answer; a valid caller not allowed the agent is 403; the gateway's log names each reason and
never a key.

Usage:
  goai_hmac.py E2A_BIN WORK_DIR

Each check prints PASS/FAIL; the last line is "N passed, M failed" (exit 1 on a failure).
"""

import datetime
import hashlib
import hmac
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.types import Message, Part, Role, SendMessageRequest

from report import Report

REPORT = Report("goai-hmac: ")
check = REPORT.check


def canonical(method, path, agent, timestamp, nonce, digest):
    return "\n".join(["GoAI-HMAC-SHA256", method.upper(), path, agent, timestamp, nonce, digest])


def signed_headers(key, agent, method, path, body, timestamp=None, nonce=None, signed_body=None):
    """The five headers of a signed request; `signed_body` (default `body`) is what the digest says."""
    timestamp = timestamp or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    nonce = nonce or str(uuid.uuid4())
    digest = hashlib.sha256(body if signed_body is None else signed_body).hexdigest()
    mac = hmac.new(key.encode(), canonical(method, path, agent, timestamp, nonce, digest).encode(), hashlib.sha256)
    return {
        "Authorization": f"GoAI-HMAC-SHA256 Signature={mac.hexdigest()}",
        "X-GoAI-Agent-Code": agent,
        "X-GoAI-Timestamp": timestamp,
        "X-GoAI-Nonce": nonce,
        "X-GoAI-Content-SHA256": digest,
        "A2A-Version": "1.0",
        "Content-Type": "application/json",
    }


def send_body(text):
    """A `SendMessageRequest` made with the official SDK's types, as ProtoJSON."""
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    return json.dumps(MessageToDict(SendMessageRequest(message=m))).encode()


def start(e2a, work, config):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = os.path.join(work, "hmac.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([e2a, "serve", "--config", config, "--bind", f"127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return proc, base, log_path
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    with open(log_path) as f:
        detail = f.read()[-3000:]
    check("e2a serve --config starts", False, f"exit {proc.poll()}; log:\n{detail}")
    return proc, None, log_path


def main(argv):
    started = time.monotonic()
    e2a, work = argv[1], argv[2]
    os.makedirs(work, exist_ok=True)
    planner_key, outsider_key = secrets.token_hex(24), secrets.token_hex(24)
    with open(os.path.join(work, "planner.key"), "w") as f:
        f.write(planner_key + "\n")
    with open(os.path.join(work, "outsider.key"), "w") as f:
        f.write(outsider_key + "\n")
    config = os.path.join(work, "hmac.toml")
    with open(config, "w") as f:
        f.write("""\
[a2a]
enabled = true

[store]
url = "memory"

[agents.writer]
agent = "echo"

[agents.reader]
agent = "echo"

[callers.planner]
kind = "agent"
hmac_key_file = "planner.key"
hmac_window_secs = 120

[callers.outsider]
kind = "agent"
hmac_key_file = "outsider.key"
agents = ["reader"]
""")
    proc, base, log_path = start(e2a, work, config)
    if base is None:
        return REPORT.finish(started)
    try:
        path = "/a2a/agents/writer/message:send"
        url = base + path

        def post(headers, body):
            return httpx.post(url, content=body, headers=headers, timeout=20)

        body = send_body("signed hello")
        headers = signed_headers(planner_key, "planner", "POST", path, body)
        r = post(headers, body)
        ok = r.status_code == 200
        task_id = r.json().get("task", {}).get("id") if ok else None
        check("a valid signature is served (POST with a body)", ok and task_id, f"{r.status_code} {r.text[:300]}")
        r = post(headers, body)
        check("the same request again (its nonce spent) is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")
        check("a refusal never carries the key", planner_key not in r.text, r.text[:200])

        if task_id:
            get_path = f"/a2a/agents/writer/tasks/{task_id}"
            r = httpx.get(base + get_path, headers=signed_headers(planner_key, "planner", "GET", get_path, b""), timeout=20)
            check("a signed GET with no body (the digest of nothing) is served", r.status_code == 200
                  and r.json().get("id") == task_id, f"{r.status_code} {r.text[:200]}")

        now = datetime.datetime.now(datetime.timezone.utc)
        for label, delta in [("ten minutes late", -600), ("ten minutes early", 600)]:
            at = (now + datetime.timedelta(seconds=delta)).strftime("%Y-%m-%dT%H:%M:%SZ")
            body = send_body("late")
            r = post(signed_headers(planner_key, "planner", "POST", path, body, timestamp=at), body)
            check(f"a time {label} is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")

        body = send_body("what was signed")
        r = post(signed_headers(planner_key, "planner", "POST", path, body, signed_body=send_body("other")), body)
        check("a body other than the one signed is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")

        body = send_body("wrong key")
        r = post(signed_headers(secrets.token_hex(24), "planner", "POST", path, body), body)
        check("a signature with another key is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")

        r = post(signed_headers(planner_key, "ghost", "POST", path, body), body)
        check("an unknown agent code is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")

        missing = signed_headers(planner_key, "planner", "POST", path, body)
        del missing["X-GoAI-Nonce"]
        r = post(missing, body)
        check("a missing X-GoAI-Nonce is 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")

        r = post(signed_headers(outsider_key, "outsider", "POST", path, body), body)
        check("a valid caller not allowed the agent is 403", r.status_code == 403, f"{r.status_code} {r.text[:200]}")
        reader = "/a2a/agents/reader/message:send"
        r = httpx.post(base + reader, content=body, timeout=20,
                       headers=signed_headers(outsider_key, "outsider", "POST", reader, body))
        check("the same caller is served by the agent it may call", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    with open(log_path) as f:
        log = f.read()
    for reason in ["the nonce was used before", "X-GoAI-Timestamp is outside the window",
                   "the body does not match X-GoAI-Content-SHA256", "the signature does not match",
                   "no caller of this agent code has an HMAC key", "no X-GoAI-Nonce"]:
        check(f"the log names the reason: {reason}", reason in log, log[-1500:])
    check("the log never holds a key", planner_key not in log and outsider_key not in log, "a key is in the log")
    return REPORT.finish(started)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
