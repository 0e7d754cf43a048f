"""A2A push notifications of `e2a serve --a2a`, end to end: the official A2A Python SDK client
(a2a-sdk, pinned in requirements.lock) over JSON-RPC, HTTP+JSON and gRPC, and a webhook
receiver of its own on 127.0.0.1 (the standard library's http.server) that records every POST
(headers, body, time, its answer) and can answer 503 to the first N attempts, or to all.

Writes a config file into WORK_DIR (`[a2a.push] allow_private = true`, `retry_base_ms = 50`,
`max_attempts = 4`), checks it with `e2a config check`, and starts its own gateways:

- A: `e2a serve --a2a --store sqlite:WORK_DIR/push.db --agent script:script.json --config FILE`.
  Per binding: Create (token, Bearer authentication; an empty id gets one), Get, List (and
  pages), Delete, Delete again (no error), Get after Delete (TaskNotFound), Create on an unknown
  task; a streaming send with `configuration.taskPushNotificationConfig`: the receiver gets
  every event of the stream, the same events in the same order, each a StreamResponse JSON body
  with `Authorization: Bearer <credentials>` and `X-A2A-Notification-Token: <token>`.
  Retries: the receiver refuses the first 3 attempts (503); the events still all arrive, in
  order, the first event retried with backoff. Giving up: the first 4 attempts refused
  (max_attempts = 4): that event is given up on and delivery goes on with the next.
- A again on the same file (SIGTERM first; `--push-max-attempts 50`): a slow task with a push
  config while the receiver refuses everything; SIGKILL mid-task, between two attempts; the
  receiver then accepts; A started once more on the same file: every event the store logged
  before the kill and the failed status the restart settles the task with arrive, in order,
  none lost or repeated. Configs of the earlier tasks are not delivered again.
- S: `e2a serve --a2a --store memory` without the development flag: configs (and a send's
  config) whose url is `http://127.0.0.1:…`, `https://127.0.0.1/…`, `https://localhost/…` or
  `https://[::1]/…` are refused (InvalidParams naming url) on every binding, a public
  `https://1.1.1.1/…` is taken; the card says pushNotifications: true.
- The gateways' logs (E2A_LOG=debug) never contain a token or credentials.

Usage:
  push_sessions.py E2A_BIN WORK_DIR

Each check prints PASS/FAIL; the last line is "N passed, M failed" (exit 1 on a failure).
"""

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google.protobuf.json_format import MessageToDict, Parse

from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError

from report import Report

REPORT = Report("push: ")
check = REPORT.check
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "script.json")
BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
RETRY_BASE_MS = 50
MAX_ATTEMPTS = 4
# every token and credential handed to a gateway: none may reach its logs
SECRETS = []
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def short(value, n=1500):
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= n else text[:n] + "…"


def secret(kind):
    value = f"{kind}-{secrets.token_hex(12)}"
    SECRETS.append(value)
    return value


# --- the webhook receiver --------------------------------------------------------------------

class Receiver:
    """Records every request to 127.0.0.1:PORT/hook/NAME; answers 503 to the first
    `fail_first` POSTs of a hook, or to all of them while `refuse` is set, else 200."""

    def __init__(self):
        self.lock = threading.Lock()
        self.posts = []  # {"path", "method", "headers" (lower-case names), "body", "at", "status"}
        self.rules = {}  # path -> {"fail_first": N} | {"refuse": True}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status = receiver.record(self.command, self.path, self.headers, body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):  # noqa: N802
                status = receiver.record(self.command, self.path, self.headers, b"")
                self.send_response(405 if status == 200 else status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_PUT = do_DELETE = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/hook/{name}"

    def record(self, method, path, headers, body):
        with self.lock:
            rule = self.rules.get(path, {})
            before = sum(1 for p in self.posts if p["path"] == path and p["method"] == "POST")
            if method != "POST":
                status = 200
            elif rule.get("refuse"):
                status = 503
            elif before < rule.get("fail_first", 0):
                status = 503
            else:
                status = 200
            self.posts.append({"path": path, "method": method, "body": body, "at": time.monotonic(),
                               "headers": {k.lower(): v for k, v in headers.items()}, "status": status})
            return status

    def set_rule(self, name, **rule):
        with self.lock:
            self.rules[f"/hook/{name}"] = rule

    def attempts(self, name):
        with self.lock:
            return [p for p in self.posts if p["path"] == f"/hook/{name}"]

    def accepted(self, name):
        return [p for p in self.attempts(name) if p["status"] == 200]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def body_dict(post):
    """A POST's body as a StreamResponse (strict ProtoJSON), in MessageToDict form; or the
    parse error as a string."""
    try:
        return MessageToDict(Parse(post["body"].decode(), StreamResponse()))
    except Exception as e:  # noqa: BLE001 - the parse error is the finding
        return f"not a StreamResponse: {e!r}: {post['body'][:300]!r}"


def state_of(ev):
    if not isinstance(ev, dict):
        return None
    if "task" in ev:
        return ev["task"].get("status", {}).get("state")
    if "statusUpdate" in ev:
        return ev["statusUpdate"].get("status", {}).get("state")
    return None


def kinds(evs):
    return [next(iter(e)) if isinstance(e, dict) and e else e for e in evs]


def is_terminal_update(ev):
    return isinstance(ev, dict) and "statusUpdate" in ev and state_of(ev) in TERMINAL


async def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def wait_delivered(rx, name, timeout=15):
    """Waits until the hook accepted a terminal statusUpdate; its accepted bodies."""
    await wait_for(lambda: any(is_terminal_update(body_dict(p)) for p in rx.accepted(name)), timeout)
    return [body_dict(p) for p in rx.accepted(name)]


def headers_ok(posts, token, credentials):
    """Every post: Content-Type application/json, Authorization Bearer <credentials>,
    X-A2A-Notification-Token <token>; the posts that are not, as (header values)."""
    bad = []
    for p in posts:
        h = p["headers"]
        ctype = h.get("content-type", "").split(";")[0].strip().lower()
        if (ctype != "application/json" or h.get("authorization") != f"Bearer {credentials}"
                or h.get("x-a2a-notification-token") != token):
            bad.append({"content-type": h.get("content-type"), "authorization": h.get("authorization"),
                        "x-a2a-notification-token": h.get("x-a2a-notification-token")})
    return posts != [] and bad == [], bad[:3]


# --- gateways --------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    def __init__(self, e2a, work, name, args, port=None):
        self.name, self.port = name, port or free_port()
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "w")
        env = {**os.environ, "E2A_LOG": "debug"}
        self.proc = subprocess.Popen([e2a, "serve", "--a2a", "--bind", f"127.0.0.1:{self.port}", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.base = f"http://127.0.0.1:{self.port}"

    async def up(self):
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient(timeout=2) as h:
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if (await h.get(f"{self.base}/.well-known/agent-card.json")).status_code == 200:
                        check(f"gateway {self.name} starts", True)
                        return True
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
        with open(self.log_path) as f:
            tail = f.read()[-3000:]
        check(f"gateway {self.name} starts", False, f"exit {self.proc.poll()}; log:\n{tail}")
        return False

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# --- clients ---------------------------------------------------------------------------------

def grpc_channel(target):
    import grpc

    return grpc.aio.insecure_channel(target)


async def client_for(base, binding="JSONRPC", streaming=True):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding],
                          httpx_client=httpx.AsyncClient(timeout=30),
                          grpc_channel_factory=grpc_channel if binding == "GRPC" else None)
    return await create_client(base, client_config=config)


def message(text):
    return Message(message_id=f"py-{uuid.uuid4()}", role=Role.ROLE_USER, parts=[Part(text=text)])


async def collect(aiter):
    return [ev async for ev in aiter]


def slug(binding):
    return binding.lower().replace("+", "")


def push_config(url, token, credentials, **kw):
    return TaskPushNotificationConfig(url=url, token=token,
                                      authentication=AuthenticationInfo(scheme="Bearer", credentials=credentials), **kw)


def same_config(got, want):
    """The fields a config is read back with (the credentials may or may not be echoed)."""
    g, w = MessageToDict(got), MessageToDict(want)
    for d in (g, w):
        d.get("authentication", {}).pop("credentials", None)
    return g == w


def errors_on_url(e):
    return isinstance(e, InvalidParamsError) and "url" in str(e)


# --- sessions --------------------------------------------------------------------------------

async def card_checks(base, label):
    async with httpx.AsyncClient(timeout=10) as h:
        card = await A2ACardResolver(h, base).get_agent_card()
    check(f"{label}: card says capabilities.pushNotifications true", card.capabilities.push_notifications is True,
          MessageToDict(card.capabilities))


async def crud(base, binding, rx):
    """Create/Get/List/Delete on one binding, on an existing (completed) task."""
    p = f"[{binding}] "
    c = await client_for(base, binding, streaming=False)
    task = (await collect(c.send_message(SendMessageRequest(message=message("hello push")))))[-1].task
    check(p + "a task to configure", task.id != "" and task.status.state == TaskState.TASK_STATE_COMPLETED,
          MessageToDict(task))
    token, cred = secret("tok"), secret("cred")
    want = push_config(rx.url(f"crud-{slug(binding)}"), token, cred, task_id=task.id, id=f"cfg-{slug(binding)}")
    made = await c.create_task_push_notification_config(want)
    check(p + "Create: the config as given (id, taskId, url, token, authentication.scheme)", same_config(made, want),
          (MessageToDict(made), MessageToDict(want)))
    auto = await c.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task.id, url=rx.url(f"crud-auto-{slug(binding)}")))
    check(p + "Create without an id: an id is generated", auto.id not in ("", made.id) and auto.task_id == task.id,
          MessageToDict(auto))
    got = await c.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id, id=made.id))
    check(p + "Get: the config created", same_config(got, want), (MessageToDict(got), MessageToDict(want)))
    listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
    check(p + "List: both configs, no next page", sorted(x.id for x in listed.configs) == sorted([made.id, auto.id])
          and listed.next_page_token == "", MessageToDict(listed))
    first = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id,
                                                                                               page_size=1))
    second = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(
        task_id=task.id, page_size=1, page_token=first.next_page_token or "none"))
    check(p + "List with pageSize 1: two pages", len(first.configs) == 1 and first.next_page_token != ""
          and len(second.configs) == 1 and second.next_page_token == ""
          and {first.configs[0].id, second.configs[0].id} == {made.id, auto.id},
          (MessageToDict(first), MessageToDict(second)))
    delete = DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=made.id)
    for label in ["Delete", "Delete again (idempotent): no error"]:
        try:
            await c.delete_task_push_notification_config(delete)
            check(p + label, True)
        except Exception as e:  # noqa: BLE001 - any error is the finding
            check(p + label, False, repr(e))
    try:
        gone = await c.get_task_push_notification_config(GetTaskPushNotificationConfigRequest(task_id=task.id,
                                                                                           id=made.id))
        check(p + "Get after Delete: an error", False, f"answered {MessageToDict(gone)}")
    except A2AError as e:
        # A2A 1.0 names no error of its own for a missing config: TaskNotFound (what the SDK's
        # own server answers) or InvalidParams
        check(p + "Get after Delete: an error (TaskNotFound)", isinstance(e, (TaskNotFoundError, InvalidParamsError)),
              repr(e))
    listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
    check(p + "List after Delete: only the other config", [x.id for x in listed.configs] == [auto.id],
          MessageToDict(listed))
    try:
        other = await c.create_task_push_notification_config(
            push_config(rx.url("crud-unknown"), "t", "c", task_id=f"no-such-task-{uuid.uuid4()}"))
        check(p + "Create on an unknown task: TaskNotFound", False, f"answered {MessageToDict(other)}")
    except TaskNotFoundError:
        check(p + "Create on an unknown task: TaskNotFound", True)
    except Exception as e:  # noqa: BLE001
        check(p + "Create on an unknown task: TaskNotFound", False, repr(e))
    await c.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=auto.id))
    # the task was completed before its configs were made: no event after them, nothing sent
    await asyncio.sleep(0.3)
    posted = rx.attempts(f"crud-{slug(binding)}") + rx.attempts(f"crud-auto-{slug(binding)}")
    check(p + "configs made after the task's last event: nothing delivered", posted == [],
          [body_dict(x) for x in posted][:3])


async def send_with_push(base, binding, rx, name, fail_first=0):
    """A streaming send (`artifacts please`) with `configuration.taskPushNotificationConfig`;
    (the streamed events, the config's token and credentials)."""
    if fail_first:
        rx.set_rule(name, fail_first=fail_first)
    token, cred = secret("tok"), secret("cred")
    cfg = push_config(rx.url(name), token, cred, id=f"send-{name}")
    c = await client_for(base, binding, streaming=True)
    req = SendMessageRequest(message=message("artifacts please"),
                             configuration=SendMessageConfiguration(task_push_notification_config=cfg))
    events = [MessageToDict(e) for e in await collect(c.send_message(req))]
    return c, events, token, cred


async def delivery(base, binding, rx):
    p = f"[{binding}] send with taskPushNotificationConfig: "
    name = f"send-{slug(binding)}"
    c, events, token, cred = await send_with_push(base, binding, rx, name)
    check(p + "the stream completes", len(events) > 3 and "task" in events[0] and state_of(events[-1])
          == "TASK_STATE_COMPLETED", kinds(events))
    got = await wait_delivered(rx, name)
    posts = rx.attempts(name)
    check(p + "every body is a StreamResponse (strict ProtoJSON)", got != [] and all(isinstance(g, dict) for g in got),
          [g for g in got if not isinstance(g, dict)][:2])
    check(p + "first body the task, last the terminal statusUpdate (COMPLETED)", got != [] and "task" in got[0]
          and is_terminal_update(got[-1]) and state_of(got[-1]) == "TASK_STATE_COMPLETED",
          (kinds(got), [state_of(g) for g in got]))
    check(p + f"the receiver got the stream's {len(events)} events, the same and in order", got == events,
          short({"pushed": kinds(got), "streamed": kinds(events),
                 "first difference": next(([a, b] for a, b in zip(got, events) if a != b), None)}))
    check(p + "each event once (a healthy receiver: no repeat)", len(posts) == len(events),
          (len(posts), len(events)))
    ok, bad = headers_ok(posts, token, cred)
    check(p + "Content-Type application/json, Authorization Bearer <credentials>, X-A2A-Notification-Token",
          ok, bad)
    task_id = events[0].get("task", {}).get("id", "")
    listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task_id))
    check(p + "the send's config is listed on its task", [(x.id, x.task_id, x.url) for x in listed.configs]
          == [(f"send-{name}", task_id, rx.url(name))], MessageToDict(listed))


async def retries(base, rx):
    p = "[JSONRPC] retries: "
    name = "retry"
    _, events, token, cred = await send_with_push(base, "JSONRPC", rx, name, fail_first=3)
    got = await wait_delivered(rx, name)
    posts = rx.attempts(name)
    check(p + "the receiver refused the first 3 attempts; every event still arrived, in order", got == events,
          short({"accepted": kinds(got), "streamed": kinds(events)}))
    check(p + f"the receiver saw {len(events)} events + 3 refused attempts", len(posts) == len(events) + 3,
          (len(posts), len(events), [x["status"] for x in posts]))
    first4 = posts[:4]
    check(p + "the first event was retried (503, 503, 503, then 200, the same body)",
          [x["status"] for x in first4] == [503, 503, 503, 200] and len({x["body"] for x in first4}) == 1
          and "task" in body_dict(first4[0]), [(x["status"], kinds([body_dict(x)])) for x in first4])
    gaps = [round((b["at"] - a["at"]) * 1000) for a, b in zip(first4, first4[1:])]
    # attempt k+1 comes at least retry_base * 2^(k-1) / 2 after attempt k (jitter in the upper half)
    least = [RETRY_BASE_MS * 2 ** k // 2 for k in range(3)]
    check(p + f"backoff: the retries waited at least {least} ms", len(gaps) == 3
          and all(g >= m - 5 for g, m in zip(gaps, least)), gaps)
    # ... and not much more than their delay (retry_base_ms says when the first retry comes):
    # at most retry_base * 2^(k-1), with half a second of slack for a busy machine
    most = [RETRY_BASE_MS * 2 ** k + 500 for k in range(3)]
    check(p + f"backoff: the retries came within their delay (at most {most} ms)", len(gaps) == 3
          and all(g <= m for g, m in zip(gaps, most)), f"gaps {gaps} ms with retry_base_ms = {RETRY_BASE_MS}")
    ok, bad = headers_ok(posts, token, cred)
    check(p + "retried attempts carry the same Authorization and token", ok, bad)


async def give_up(base, rx, log_path):
    p = f"[JSONRPC] max_attempts {MAX_ATTEMPTS}: "
    name = "giveup"
    _, events, token, cred = await send_with_push(base, "JSONRPC", rx, name, fail_first=MAX_ATTEMPTS)
    got = await wait_delivered(rx, name)
    posts = rx.attempts(name)
    first = [x for x in posts if x["body"] == posts[0]["body"]] if posts else []
    check(p + f"the first event tried {MAX_ATTEMPTS} times, all refused", "task" in body_dict(posts[0])
          and [x["status"] for x in first] == [503] * MAX_ATTEMPTS, [x["status"] for x in first])
    check(p + "then given up on: delivery goes on with the next event, in order", got == events[1:],
          short({"accepted": kinds(got), "streamed": kinds(events)}))
    # `e2a serve` writes its log lines in batches (every 20 ms): the line may come just after
    # the delivery that follows it
    deadline = time.monotonic() + 5
    while True:
        with open(log_path) as f:
            log = f.read()
        if "given up on" in log or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    check(p + "the log records the event given up on", "given up on" in log, "no 'given up on' line")


async def restart(e2a, work, rx, db, conf):
    """A slow task with a push config; the receiver refuses everything; SIGKILL mid-task; the
    gateway again on the same file; the receiver accepts: every event arrives."""
    p = "restart: "
    args = ["--store", f"sqlite:{db}", "--agent", f"script:{SCRIPT}", "--config", conf,
            "--push-max-attempts", "50"]
    before_hooks = {x["path"]: 0 for x in rx.posts}
    for x in rx.posts:
        before_hooks[x["path"]] += 1
    a2 = Gateway(e2a, work, "push-a2", args)
    if not await a2.up():
        return [a2]
    name = "restart"
    rx.set_rule(name, refuse=True)
    token, cred = secret("tok"), secret("cred")
    cfg = push_config(rx.url(name), token, cred, id="slow")
    c = await client_for(a2.base, "JSONRPC", streaming=True)
    req = SendMessageRequest(message=message("count slowly"),
                             configuration=SendMessageConfiguration(task_push_notification_config=cfg))
    seen, broke, killed_at = [], None, None
    try:
        async for ev in c.send_message(req):
            seen.append(MessageToDict(ev))
            if len(seen) == 4:
                # kill between two attempts: 20 ms after one was refused (its progress stored,
                # the claim let go), before the next (at least 25 ms later)
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    tried = rx.attempts(name)
                    if tried and 0.02 <= time.monotonic() - tried[-1]["at"] < 0.04:
                        break
                    await asyncio.sleep(0.002)
                a2.kill()
                killed_at = time.monotonic()
    except Exception as e:  # noqa: BLE001 - the broken connection, whatever the binding calls it
        broke = e
    refused = rx.attempts(name)
    check(p + "SIGKILL mid-task: the stream broke", killed_at is not None and broke is not None,
          (len(seen), repr(broke)))
    check(p + "before the kill the receiver refused every attempt (503)", refused != []
          and all(x["status"] == 503 for x in refused), [x["status"] for x in refused])
    rx.set_rule(name, fail_first=0)
    a3 = Gateway(e2a, work, "push-a3", args, port=a2.port)
    if not await a3.up():
        return [a2, a3]
    task_id = seen[0].get("task", {}).get("id", "") if seen else ""
    # nobody reads the task: the restarted gateway settles it (FAILED) and delivers on its own
    unread = await wait_delivered(rx, name, timeout=8)
    s = await client_for(a3.base, "JSONRPC", streaming=True)
    full = [MessageToDict(e) for e in await collect(s.subscribe(
        SubscribeToTaskRequest(id=task_id), context=ClientCallContext(service_parameters={"Last-Event-ID": "0"})))]
    check(p + "the store's log: the events streamed before the kill, then the restart's FAILED status",
          full[:len(seen)] == seen and len(full) > len(seen) and is_terminal_update(full[-1])
          and state_of(full[-1]) == "TASK_STATE_FAILED", (kinds(seen), kinds(full), state_of(full[-1]) if full else None))
    check(p + f"after the restart every event logged before the kill ({len(full) - 1}) arrived, in order",
          unread[:len(full) - 1] == full[:-1], short({"accepted": kinds(unread), "logged": kinds(full)}))
    check(p + "after the restart, with no client reading the task, its FAILED status arrives too",
          unread == full, short({"accepted within 8 s of the restart": kinds(unread), "logged": kinds(full),
                                 "states": [state_of(g) for g in unread]}))
    got = await wait_delivered(rx, name, timeout=8)
    check(p + f"in the end the receiver has all {len(full)} logged events, in order, none lost or repeated",
          got == full, short({"accepted": kinds(got), "logged": kinds(full), "states": [state_of(g) for g in got]}))
    ok, bad = headers_ok(rx.accepted(name), token, cred)
    check(p + "delivered after the restart with the config's Authorization and token", ok, bad)
    after_hooks = {}
    for x in rx.posts:
        if x["path"] != f"/hook/{name}":
            after_hooks[x["path"]] = after_hooks.get(x["path"], 0) + 1
    check(p + "configs of earlier tasks: nothing delivered again after the restarts",
          after_hooks == {k: v for k, v in before_hooks.items() if k != f"/hook/{name}"}, (before_hooks, after_hooks))
    return [a2, a3]


async def ssrf(base, rx):
    """A gateway without the development flag refuses loopback and plain-http webhooks."""
    ssrf_url = f"http://127.0.0.1:{rx.port}/hook/ssrf"
    refused = [ssrf_url, "https://127.0.0.1/hook/ssrf", f"https://localhost:{rx.port}/hook/ssrf",
               "https://[::1]/hook/ssrf"]
    for binding in BINDINGS:
        p = f"[{binding}] SSRF: "
        c = await client_for(base, binding, streaming=False)
        task = (await collect(c.send_message(SendMessageRequest(message=message("hello ssrf")))))[-1].task
        for url in refused:
            token, cred = secret("tok"), secret("cred")
            try:
                made = await c.create_task_push_notification_config(push_config(url, token, cred, task_id=task.id))
                check(p + f"Create with {url}: InvalidParams naming url", False, f"accepted: {MessageToDict(made)}")
            except Exception as e:  # noqa: BLE001
                check(p + f"Create with {url}: InvalidParams naming url", errors_on_url(e), repr(e))
        listed = await c.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=task.id))
        check(p + "no config stored", list(listed.configs) == [], MessageToDict(listed))
        public = await c.create_task_push_notification_config(
            push_config("https://1.1.1.1/hook", "t", "c", task_id=task.id, id="public"))
        check(p + "a public https webhook is taken (https://1.1.1.1/hook)", public.id == "public"
              and public.url == "https://1.1.1.1/hook", MessageToDict(public))
        await c.delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest(task_id=task.id,
                                                                                         id="public"))
        # a send whose configuration names a loopback webhook: refused, and no task made
        before = (await c.list_tasks(ListTasksRequest())).total_size
        cfg = push_config(ssrf_url, secret("tok"), secret("cred"))
        req = SendMessageRequest(message=message("hello ssrf send"),
                                 configuration=SendMessageConfiguration(task_push_notification_config=cfg))
        try:
            got = await collect(c.send_message(req))
            check(p + "a send with a loopback taskPushNotificationConfig: InvalidParams naming url", False,
                  f"answered {[MessageToDict(g) for g in got]}")
        except Exception as e:  # noqa: BLE001
            check(p + "a send with a loopback taskPushNotificationConfig: InvalidParams naming url",
                  errors_on_url(e) and "taskPushNotificationConfig" in str(e), repr(e))
        after = (await c.list_tasks(ListTasksRequest())).total_size
        check(p + "the refused send made no task", after == before, (before, after))
    await asyncio.sleep(0.3)
    check("SSRF: the receiver got nothing from the gateway without the flag", rx.attempts("ssrf") == [],
          len(rx.attempts("ssrf")))


def config_files(e2a, work):
    conf = os.path.join(work, "push.toml")
    with open(conf, "w") as f:
        f.write(f"[a2a.push]\nallow_private = true\nretry_base_ms = {RETRY_BASE_MS}\nmax_attempts = {MAX_ATTEMPTS}\n")
    r = subprocess.run([e2a, "config", "check", conf], capture_output=True, text=True, timeout=60)
    check("config check: [a2a.push] allow_private, retry_base_ms, max_attempts pass", r.returncode == 0,
          (r.returncode, r.stdout, r.stderr))
    bad = os.path.join(work, "push-bad.toml")
    with open(bad, "w") as f:
        f.write("[a2a.push]\nretry_base_ms = 0\n")
    r = subprocess.run([e2a, "config", "check", bad], capture_output=True, text=True, timeout=60)
    check("config check: retry_base_ms = 0 refused (exit 2, push-bad.toml:2: a2a.push.retry_base_ms)",
          r.returncode == 2 and "push-bad.toml:2: a2a.push.retry_base_ms" in r.stderr, (r.returncode, r.stderr))
    return conf


def secrets_checks(gateways):
    logs = {}
    for g in gateways:
        with open(g.log_path, errors="replace") as f:
            logs[g.name] = f.read()
    check("the gateways' logs were written (push lines at debug level)", all(logs.values())
          and "push notification delivered" in logs.get("push-a", "")
          and "will retry" in logs.get("push-a", ""), {k: len(v) for k, v in logs.items()})
    leaks = [(name, s) for name, text in logs.items() for s in SECRETS if s in text]
    check(f"no token or credentials ({len(SECRETS)} of them) in the gateways' logs", SECRETS != [] and leaks == [],
          leaks[:5])


async def main(argv):
    e2a, work = argv[1], argv[2]
    started = time.monotonic()
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, "push.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    rx = Receiver()
    gateways = []
    try:
        conf = config_files(e2a, work)
        a = Gateway(e2a, work, "push-a", ["--store", f"sqlite:{db}", "--agent", f"script:{SCRIPT}", "--config", conf])
        gateways.append(a)
        if await a.up():
            await card_checks(a.base, "A (--config with allow_private)")
            for binding in BINDINGS:
                await crud(a.base, binding, rx)
            for binding in BINDINGS:
                await delivery(a.base, binding, rx)
            await retries(a.base, rx)
            await give_up(a.base, rx, a.log_path)
            a.stop()
            gateways += await restart(e2a, work, rx, db, conf)
        s = Gateway(e2a, work, "push-s", ["--store", "memory", "--agent", f"script:{SCRIPT}"])
        gateways.append(s)
        if await s.up():
            await card_checks(s.base, "S (no dev flag)")
            await ssrf(s.base, rx)
        for g in gateways:
            g.stop()
        secrets_checks(gateways)
    except Exception as e:  # a session that breaks counts as a failure
        import traceback

        traceback.print_exc()
        check("session", False, repr(e))
    finally:
        for g in gateways:
            g.stop()
        rx.close()
    return REPORT.finish(started)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
