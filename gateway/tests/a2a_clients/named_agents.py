"""Named agents, callers and metrics of `e2a serve --config FILE`, black-box, through the official
A2A Python SDK client (a2a-sdk) and plain HTTP; /metrics parsed with prometheus-client (both
pinned in requirements.lock).

Writes a configuration (schema/config.json) into WORK_DIR: three named agents (`writer`, a script
agent with its own card; `echoer`, the echo agent; `helper`, an ACP agent behind `acp:`) and three callers (`alice`, an API
key by SHA-256, allowed writer and echoer, rate-limited to a burst of 3 and 1/s; `bob`, an API key
file, every agent; `planner`, RS256 JWTs checked against a JWKS file, with a key made here). Then:
`e2a config check` on it and on broken files (exit 2, FILE:LINE: KEY); `e2a serve --config` on a
free 127.0.0.1 port; each agent's card at its own URL and a message through the SDK with the right
caller; 401/403/429 and JWT expiry; one caller cannot read another's task; `/metrics`; the root
listing `GET /a2a/agents`.

Usage:
  named_agents.py E2A_BIN WORK_DIR

Each check prints PASS/FAIL; the last line is "N passed, M failed" (exit 1 on a failure).
"""

import asyncio
import base64
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from google.protobuf.json_format import MessageToDict
from prometheus_client.parser import text_string_to_metric_families

from a2a.client import A2AClientError, AuthInterceptor, ClientConfig, CredentialService, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.errors import TaskNotFoundError

from report import Report

REPORT = Report("named-agents: ")
check = REPORT.check
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "script.json")
# an ACP agent behind the third name (the gateway starts it: `acp:CMD`); it answers "mirror: <text>"
MIRROR = os.path.join(HERE, "..", "clients", "data", "mirror_acp_agent.py")
PYTHON = sys.executable
AGENTS = {"writer": "Writer", "echoer": "echoer", "helper": "helper"}  # name -> card name
ISSUER, AUDIENCE, KID = "https://issuer.test", "e2a", "test-key-1"

# every response the SDK clients and the raw requests got: (caller, method, path, status)
SEEN = []


# --- keys, tokens, configuration -------------------------------------------------------------

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n):
    return b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def jwt(key, claims, kid=KID):
    """An RS256 JWT: base64url(header).base64url(payload), signed RSASSA-PKCS1-v1_5 SHA-256."""
    header = {"alg": "RS256", "typ": "JWT", "kid": kid}
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def planner_claims(**over):
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "planner-bot", "iat": now, "exp": now + 600}
    claims.update(over)
    return claims


class Setup:
    def __init__(self, work):
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.alice = f"alice-{secrets.token_hex(16)}"
        self.bob = f"bob-{secrets.token_hex(16)}"
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pub = self.key.public_key().public_numbers()
        jwks = {"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256", "n": uint(pub.n), "e": uint(pub.e)}]}
        self.write("jwks.json", json.dumps(jwks))
        self.write("bob.key", self.bob + "\n")
        alice_sha = hashlib.sha256(self.alice.encode()).hexdigest()
        self.good = self.write("good.toml", f"""\
[a2a]
enabled = true

[store]
url = "memory"

[agents.writer]
agent = "script:{SCRIPT}"
card = {{ name = "Writer", description = "writes" }}

[agents.echoer]
agent = "echo"

[agents.helper]
agent = "acp:{PYTHON} {MIRROR}"

[callers.alice]
kind = "user"
api_key_sha256 = "{alice_sha}"
agents = ["writer", "echoer"]
rate_limit = {{ per_second = 1, burst = 3 }}

[callers.bob]
kind = "user"
api_key_file = "bob.key"

[callers.planner]
kind = "agent"
jwt = {{ algorithm = "RS256", jwks_file = "jwks.json", issuer = "{ISSUER}", audience = "{AUDIENCE}" }}

[metrics]
public = false
""")
        # broken files: (file, its text, the line of the error, the key named)
        self.bad = [
            ("bad-unknown-key.toml", "[server]\nbogus = 1\n", 2, "server.bogus"),
            ("bad-wrong-type.toml", '[server]\nmax_streams = "many"\n', 2, "server.max_streams"),
            ("bad-missing-secret.toml", '[callers.bob]\nkind = "user"\napi_key_file = "missing.key"\n', 3,
             "callers.bob.api_key_file"),
        ]
        for name, text, _, _ in self.bad:
            self.write(name, text)

    def write(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        return path


# --- clients ---------------------------------------------------------------------------------

class Token(CredentialService):
    def __init__(self, token):
        self.token = token

    async def get_credentials(self, security_scheme_name, context):
        return self.token if security_scheme_name == "bearer" else None


class Pacer:
    """Spaces a rate-limited caller's credentialed requests (1/s) so only the burst test meets 429."""

    def __init__(self, interval):
        self.interval, self.last = interval, 0.0

    async def __call__(self, request):
        if "authorization" in request.headers:
            await self.wait()

    async def wait(self):
        wait = self.last + self.interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self.last = time.monotonic()


def http(caller, pacer=None):
    async def seen(response):
        SEEN.append((caller, response.request.method, response.request.url.path, response.status_code))

    hooks = {"response": [seen]}
    if pacer:
        hooks["request"] = [pacer]
    return httpx.AsyncClient(timeout=30, event_hooks=hooks)


def grpc_channel(target):
    import grpc

    return grpc.aio.insecure_channel(target)


async def sdk(url, caller, token, binding="JSONRPC", pacer=None):
    config = ClientConfig(streaming=False, supported_protocol_bindings=[binding], httpx_client=http(caller, pacer),
                          grpc_channel_factory=grpc_channel if binding == "GRPC" else None)
    interceptors = [AuthInterceptor(Token(token))] if token else None
    return await create_client(url, client_config=config, interceptors=interceptors)


def message(text):
    return Message(message_id=f"py-{uuid.uuid4()}", role=Role.ROLE_USER, parts=[Part(text=text)])


async def send(client, text):
    """SendMessage (blocking): the last event, a task or a message."""
    events = [ev async for ev in client.send_message(SendMessageRequest(message=message(text)))]
    return events[-1]


def answer(ev):
    """The answer: (state, status message text, all its text: status message and artifacts);
    a direct message: (None, its text, its text)."""
    if ev.WhichOneof("payload") == "message":
        text = "".join(p.text for p in ev.message.parts)
        return None, text, text
    t = ev.task
    status = "".join(p.text for p in t.status.message.parts)
    return t.status.state, status, status + "".join(p.text for a in t.artifacts for p in a.parts)


# Sent with every request expected to be refused: the gateway answers a refusal before reading
# the request's body, and then closes the connection without saying so (see
# refused_connection_checks); a fresh connection each keeps the other checks from meeting that.
CLOSE = {"Connection": "close"}


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


def rpc_body(method, params):
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def send_params(text):
    return {"message": {"messageId": f"raw-{uuid.uuid4()}", "role": "ROLE_USER", "parts": [{"text": text}]}}


# --- the sessions ----------------------------------------------------------------------------

def config_checks(e2a, setup):
    r = subprocess.run([e2a, "config", "check", setup.good], capture_output=True, text=True, timeout=60)
    check("config check: a good file passes (exit 0)", r.returncode == 0, (r.returncode, r.stdout, r.stderr))
    for name, _, line, key in setup.bad:
        path = os.path.join(setup.work, name)
        r = subprocess.run([e2a, "config", "check", path], capture_output=True, text=True, timeout=60)
        check(f"config check {name}: exit 2, stderr names {name}:{line}: {key}",
              r.returncode == 2 and f"{name}:{line}: {key}:" in r.stderr, (r.returncode, r.stderr))
    r = subprocess.run([e2a, "config", "schema"], capture_output=True, text=True, timeout=60)
    try:
        schema = json.loads(r.stdout)
    except ValueError:
        schema = None
    check("config schema prints the JSON Schema", r.returncode == 0 and isinstance(schema, dict)
          and "api_key_sha256" in r.stdout and "rate_limit" in r.stdout, (r.returncode, r.stdout[:300], r.stderr))


def start(e2a, setup):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(os.path.join(setup.work, "named.log"), "w")
    proc = subprocess.Popen([e2a, "serve", "--config", setup.good, "--bind", f"127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    up = False
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                up = True
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    if not up:
        with open(os.path.join(setup.work, "named.log")) as f:
            detail = f.read()[-3000:]
    check("e2a serve --config starts (GET /healthz)", up, up or f"exit {proc.poll()}; log:\n{detail}")
    return proc, base, up


def held_body_exchange(port, path, token):
    """POSTs `path`'s head (Content-Length set) without its body and reads the answer (a server
    that waits for the body gets it after a second); then sends the body, if not sent yet, and a
    second request (GET /healthz) on the same connection. Returns the first answer's status line,
    whether it announced the close (`Connection: close` or HTTP/1.0), and the second's status
    line (None when the connection was closed)."""
    body = json.dumps(rpc_body("SendMessage", send_params("hi"))).encode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    second_request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n"
                  f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        s.settimeout(1)
        try:
            first = read_response(s)
        except socket.timeout:
            first = None
        s.settimeout(5)
        if first is None:  # it waits for the body: fine
            s.sendall(body)
            first = read_response(s)
            body = b""
        time.sleep(0.2)
        try:
            s.sendall(body + second_request)
            second = read_response(s)
        except OSError:
            second = b""
    head = first.split(b"\r\n\r\n", 1)[0].lower()
    status = lambda data: data.split(b"\r\n", 1)[0].decode() if data else None
    announced = b"\r\nconnection: close" in head or head.startswith(b"http/1.0")
    return status(first), announced, status(second)


def read_response(s):
    """One HTTP/1.1 response with a Content-Length body, or b"" at EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


async def refused_connection_checks(base, setup, alice_pace):
    """A refusal answered before the request's body is read must leave the connection usable
    (the body then read and discarded) or announce `Connection: close`: a client that pools
    connections (httpx, the SDKs) otherwise sends its next request into a closed socket
    ("Server disconnected without sending a response")."""
    port = int(base.rsplit(":", 1)[1])
    for label, path, token in [("401 (no credential)", "/a2a/agents/writer", None),
                               ("403 (alice -> helper)", "/a2a/agents/helper", setup.alice)]:
        if token == setup.alice:
            await alice_pace.wait()
        first, close, second = await asyncio.to_thread(held_body_exchange, port, path, token)
        check(f"{label} before the body is read: the connection stays usable or says Connection: close",
              first is not None and first.split(" ")[1:2] == [label[:3]] and (close or second is not None),
              f"answer {first!r} without Connection: close, then the next request on the connection: "
              f"{second or 'connection closed'}")


async def sessions(base, setup):
    alice_pace = Pacer(1.1)
    raw = http("raw")
    keys = {"writer": setup.bob, "echoer": setup.alice, "helper": setup.bob}
    who = {"writer": "bob", "echoer": "alice", "helper": "bob"}

    # 3. each agent: its own card, then a message through the SDK with a caller allowed it
    for name, card_name in AGENTS.items():
        url = f"{base}/a2a/agents/{name}"
        card = await A2ACardResolver(http("anyone"), url).get_agent_card()
        ifaces = {i.protocol_binding: i.url for i in card.supported_interfaces if i.protocol_binding != "GRPC"}
        check(f"{name}: card at its own URL (name {card_name!r}, interfaces at {url})",
              card.name == card_name and ifaces.get("JSONRPC") == url
              and all(u == url or u.startswith(url + "/") for u in ifaces.values()), MessageToDict(card))
        grpc = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
        check(f"{name}: card's gRPC interface is the gateway's, with tenant {name!r}",
              len(grpc) == 1 and grpc[0].url == base.removeprefix("http://") and grpc[0].tenant == name,
              MessageToDict(card))
        check(f"{name}: card declares bearer", "bearer" in card.security_schemes
              and card.security_schemes["bearer"].http_auth_security_scheme.scheme.lower() == "bearer",
              MessageToDict(card))
        if name == "writer":
            check("writer: card description from the config", card.description == "writes", card.description)
        caller = who[name]
        client = await sdk(url, caller, keys[name], pacer=alice_pace if caller == "alice" else None)
        text = f"hello {name} from {caller}"
        state, status, said = answer(await send(client, text))
        # the script agent answers per script.json ("Echo: {input}"), the echo agent repeats the
        # text, the ACP agent says "mirror: <text>"
        if name == "writer":
            ok = status == f"Echo: {text}"
        elif name == "helper":
            ok = f"mirror: {text}" in said
        else:
            ok = text in said
        check(f"{name}: {caller}'s message answered through the SDK",
              state == TaskState.TASK_STATE_COMPLETED and ok, (state, status, said))
    # gRPC: the root agent's service reaches a named agent by the card's tenant; allow-lists hold
    bob_grpc = await sdk(f"{base}/a2a/agents/echoer", "bob", setup.bob, binding="GRPC")
    state, _, said = answer(await send(bob_grpc, "hello echoer over grpc"))
    check("echoer over gRPC (tenant from its card): bob's message answered",
          state == TaskState.TASK_STATE_COMPLETED and "hello echoer over grpc" in said, (state, said))
    await alice_pace.wait()
    alice_grpc = await sdk(f"{base}/a2a/agents/helper", "alice", setup.alice, binding="GRPC")
    try:
        await send(alice_grpc, "hi")
        check("alice -> helper over gRPC: refused", False, "answered")
    except Exception as e:  # noqa: BLE001 - the SDK's error for PERMISSION_DENIED
        check("alice -> helper over gRPC: PERMISSION_DENIED", "PERMISSION_DENIED" in str(e), repr(e))
    alice_writer = await sdk(f"{base}/a2a/agents/writer", "alice", setup.alice, pacer=alice_pace)
    state, status, _ = answer(await send(alice_writer, "hi writer"))
    check("writer: alice (allowed writer) answered", state == TaskState.TASK_STATE_COMPLETED
          and status == "Echo: hi writer", (state, status))

    # E2A HTTP of a named agent, with the same callers
    alice_http = http("alice", alice_pace)
    body = {"method": "chat.send", "request_id": f"req-{uuid.uuid4()}", "params": {"query": "over e2a"}}
    r = await raw.post(f"{base}/agents/echoer/v1/e2a/requests", json=body,
                       headers={**bearer(setup.bob), "Accept": "application/json"})
    check("echoer over E2A HTTP (/agents/echoer/v1/e2a/requests)", r.status_code == 200 and "over e2a" in r.text,
          (r.status_code, r.text[:300]))
    r = await alice_http.post(f"{base}/agents/helper/v1/e2a/requests", json=body,
                              headers={**bearer(setup.alice), "Accept": "application/json", **CLOSE})
    check("alice -> helper over E2A HTTP: 403", r.status_code == 403, (r.status_code, r.text[:300]))

    # 4. refusals; the JWT caller
    r = await alice_http.post(f"{base}/a2a/agents/helper", json=rpc_body("SendMessage", send_params("hi")),
                              headers={**bearer(setup.alice), "A2A-Version": "1.0", **CLOSE})
    # the JSON-RPC binding answers the refusal in its own form: a JSON-RPC error, id null
    refusal = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
    check("alice -> helper (not in her agents): 403, a JSON-RPC error (PERMISSION_DENIED)", r.status_code == 403
          and refusal.get("jsonrpc") == "2.0" and refusal.get("id") is None
          and (refusal.get("error") or {}).get("data", [{}])[0].get("reason") == "PERMISSION_DENIED",
          (r.status_code, r.headers.get("content-type"), r.text[:300]))
    r = await alice_http.get(f"{base}/a2a/agents/helper/tasks/some-task",
                             headers={**bearer(setup.alice), "A2A-Version": "1.0", **CLOSE})
    refusal = r.json() if "json" in r.headers.get("content-type", "") else {}
    check("alice -> helper over HTTP+JSON: 403, an AIP-193 problem (PERMISSION_DENIED)", r.status_code == 403
          and r.headers.get("content-type", "").startswith("application/problem+json")
          and (refusal.get("error") or {}).get("status") == "PERMISSION_DENIED",
          (r.status_code, r.headers.get("content-type"), r.text[:300]))
    for label, token in [("no credential", None), ("an unknown key", "not-a-key")]:
        r = await raw.post(f"{base}/a2a/agents/writer", json=rpc_body("SendMessage", send_params("hi")),
                           headers={**bearer(token), "A2A-Version": "1.0", **CLOSE})
        check(f"{label}: 401", r.status_code == 401, (r.status_code, r.text[:300]))
    try:
        nobody = await sdk(f"{base}/a2a/agents/echoer", "nobody", None)
        await send(nobody, "hi")
        check("SDK without a credential refused (401)", False, "accepted")
    except A2AClientError as e:
        check("SDK without a credential refused (401)", "401" in str(e), str(e))

    good_jwt = jwt(setup.key, planner_claims())
    planner = await sdk(f"{base}/a2a/agents/helper", "planner", good_jwt)
    state, _, said = answer(await send(planner, "plan something"))
    check("planner with a valid RS256 JWT (kid from the JWKS) accepted", state == TaskState.TASK_STATE_COMPLETED
          and "plan something" in said, (state, said))
    now = int(time.time())
    for label, token in [
        ("an expired JWT", jwt(setup.key, planner_claims(iat=now - 7200, exp=now - 3600))),
        ("a JWT signed by another key", jwt(setup.other_key, planner_claims())),
        ("a JWT for another audience", jwt(setup.key, planner_claims(aud="someone-else"))),
        ("a JWT from another issuer", jwt(setup.key, planner_claims(iss="https://evil.test"))),
    ]:
        r = await raw.post(f"{base}/a2a/agents/helper", json=rpc_body("SendMessage", send_params("hi")),
                           headers={**bearer(token), "A2A-Version": "1.0", **CLOSE})
        check(f"{label}: 401", r.status_code == 401, (r.status_code, r.text[:300]))
    await refused_connection_checks(base, setup, alice_pace)

    # 5. one caller's task is not another's
    bob_writer = await sdk(f"{base}/a2a/agents/writer", "bob", setup.bob)
    ev = await send(bob_writer, "bob's private task")
    task = ev.task
    check("bob's task on writer", ev.WhichOneof("payload") == "task" and task.id != "", MessageToDict(ev))
    got = await bob_writer.get_task(GetTaskRequest(id=task.id))
    check("bob GetTask of his task: found", got.id == task.id, MessageToDict(got))
    for binding in ["JSONRPC", "HTTP+JSON"]:
        alice = await sdk(f"{base}/a2a/agents/writer", "alice", setup.alice, binding=binding, pacer=alice_pace)
        try:
            got = await alice.get_task(GetTaskRequest(id=task.id))
            check(f"alice GetTask of bob's task [{binding}]: TaskNotFound", False, MessageToDict(got))
        except TaskNotFoundError:
            check(f"alice GetTask of bob's task [{binding}]: TaskNotFound", True)
    listed = await alice_writer.list_tasks(ListTasksRequest())
    check("alice ListTasks on writer: not bob's task", task.id not in [t.id for t in listed.tasks],
          MessageToDict(listed))
    bob_rest = await sdk(f"{base}/a2a/agents/writer", "bob", setup.bob, binding="HTTP+JSON")
    got = await bob_rest.get_task(GetTaskRequest(id=task.id))
    check("bob GetTask of his task [HTTP+JSON]: found", got.id == task.id, MessageToDict(got))

    # 6. alice's rate limit: burst 3, 1/s
    await asyncio.sleep(3.5)  # the bucket refills
    answers = []
    for _ in range(5):
        r = await raw.post(f"{base}/a2a/agents/echoer", json=rpc_body("SendMessage", send_params("quick")),
                           headers={**bearer(setup.alice), "A2A-Version": "1.0", **CLOSE})
        answers.append(r)
    codes = [r.status_code for r in answers]
    check("rate limit: the burst of 3 is allowed", codes[:3] == [200, 200, 200], codes)
    limited = [r for r in answers if r.status_code == 429]
    retry = [r.headers.get("retry-after") for r in limited]
    check("rate limit: 5 quick requests meet 429 with Retry-After", limited != []
          and all(v is not None and v.strip().isdigit() and int(v) >= 1 for v in retry), (codes, retry))

    # 7. /metrics
    r = await raw.get(f"{base}/metrics", headers=CLOSE)
    check("/metrics without a credential: 401", r.status_code == 401, (r.status_code, r.text[:200]))
    r = await raw.get(f"{base}/metrics", headers=bearer(setup.bob))
    samples, parsed = [], "not parsed"
    if r.status_code == 200:
        try:
            families = list(text_string_to_metric_families(r.text))
            samples = [s for f in families for s in f.samples if s.name == "e2a_http_requests_total"]
            parsed = True
        except Exception as e:  # noqa: BLE001 - any parse failure is the finding
            parsed = repr(e)
    check("/metrics with bob's key: Prometheus text with e2a_http_requests_total",
          r.status_code == 200 and parsed is True and samples != [], (r.status_code, parsed, r.text[:500]))
    check("e2a_http_requests_total: labels agent, binding (a2a|e2a|agui|other), status",
          samples != [] and all({"agent", "binding", "status"} <= set(s.labels)
                                and s.labels["binding"] in ("a2a", "e2a", "agui", "other") for s in samples),
          [s.labels for s in samples])
    # every request to writer's A2A routes came from this test: those that got through auth (its
    # card, JSON-RPC, HTTP+JSON), by method and status, are exactly what the counter says
    # (a `method` label is beyond the contract: counted by status alone when there is none)
    prefix = "/a2a/agents/writer"
    by_method = samples != [] and all("method" in s.labels for s in samples)
    mine = {}
    for _, method, path, status in SEEN:
        if (path == prefix or path.startswith(prefix + "/")) and status not in (401, 403, 429):
            k = (method, str(status)) if by_method else str(status)
            mine[k] = mine.get(k, 0) + 1
    counted = {}
    for s in samples:
        if s.labels.get("agent") == "writer" and s.labels.get("binding") == "a2a":
            k = (s.labels["method"], s.labels.get("status")) if by_method else s.labels.get("status")
            counted[k] = counted.get(k, 0) + s.value
    check(f"agent=\"writer\" binding=\"a2a\": exactly the test's requests to writer, by status {mine}",
          sum(mine.values()) >= 10 and all(counted.get(k, 0) == v for k, v in mine.items()), (mine, counted))
    e2a_echoer = sum(s.value for s in samples if s.labels.get("agent") == "echoer" and s.labels.get("binding") == "e2a")
    check("agent=\"echoer\" binding=\"e2a\" counts the E2A HTTP request", e2a_echoer >= 1,
          [s.labels for s in samples if s.labels.get("agent") == "echoer"])

    # 8. the listing of the named agents' cards (public)
    r = await raw.get(f"{base}/a2a/agents")
    try:
        listing = r.json()
    except ValueError:
        listing = None
    cards = listing.get("agents") if isinstance(listing, dict) else None
    names = sorted(c.get("name") for c in cards) if isinstance(cards, list) else None
    check("GET /a2a/agents (no credential) lists the three cards", r.status_code == 200
          and names == sorted(AGENTS.values()), (r.status_code, r.text[:500]))
    if isinstance(cards, list):
        # the HTTP interfaces (the gRPC one is the gateway's host:port, with the agent as tenant)
        urls = {c.get("name"): [i.get("url") for i in c.get("supportedInterfaces", [])
                                if i.get("protocolBinding") != "GRPC"] for c in cards}
        ok = all(urls.get(card) and all(u.startswith(f"{base}/a2a/agents/{name}") for u in urls[card])
                 for name, card in AGENTS.items())
        check("listed cards point at the named routes", ok, urls)


async def main(argv):
    e2a, work = argv[1], argv[2]
    started = time.monotonic()
    proc = None
    try:
        setup = Setup(work)
        config_checks(e2a, setup)
        proc, base, up = start(e2a, setup)
        if up:
            await sessions(base, setup)
    except Exception as e:  # a session that breaks counts as a failure
        import traceback

        traceback.print_exc()
        check("session", False, repr(e))
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return REPORT.finish(started)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
