"""OTLP trace export of `e2a serve --config FILE` ([telemetry]), black-box, across two gateways.

Runs an OTLP/HTTP receiver (protobuf, `POST /v1/traces`, decoded with opentelemetry-proto, pinned in
requirements.lock) on a free 127.0.0.1 port, and two gateways exporting to it: B
(`service_name = "gateway-b"`, the script agent of script.json) and A (`service_name =
"gateway-a"`, `agent = "a2a:B"`), each with an in-memory store. Then:
- `e2a config check` of both files (a binary without [telemetry] fails here, saying so);
- an A2A `SendMessage` to A with a W3C `traceparent` of a trace chosen here: answered through B
  (B's ListTasks has the task), `X-Trace-ID` echoes the trace id;
- the receiver gets spans of service `gateway-a` and `gateway-b` in that trace: A's request span is
  a child of the caller's span, B's spans hang under one of A's (under its `backend.call`), the
  trace is one tree; `agent.run` carries `e2a.request_id` and `e2a.agent`;
- an E2A HTTP request to A with a `traceparent`: its final frame's `correlation_id` is the trace
  id, A's `agent.run` names its `request_id`;
- a request without trace context gets a fresh trace id in `X-Trace-ID`, and its spans are in it;
- SIGTERM right after an answer: both gateways exit 0 within drain + 2 s, and that answer's spans
  were exported by then.
Every span received is written to WORK_DIR/spans.json.

Usage:
  trace_otlp.py [E2A_BIN [WORK_DIR]]     (E2A_BIN default: $E2A_BIN; WORK_DIR default: a temp dir)

Each check prints PASS/FAIL; the last line is "trace-otlp: N passed, M failed" (exit 1 on a failure).
"""

import gzip
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from report import Report

REPORT = Report("trace-otlp: ")
check = REPORT.check
info = REPORT.info
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "script.json")
DRAIN_SECS = 3
SPAN_WAIT_SECS = 10
KIND = {v: k.removeprefix("SPAN_KIND_").lower() for k, v in Span.SpanKind.items()}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the OTLP/HTTP receiver ------------------------------------------------------------------

def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


class Receiver:
    """Every span of every export, flattened: dicts with service, name, kind, trace_id, span_id,
    parent (bytes; b"" for a root), attrs, start, end; and every POST (path, content type,
    encoding, status, error)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans = []
        self.posts = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def read_body(self):
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    data = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def answer(self, status, body=b"", ctype="application/x-protobuf"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                path = self.path.split("?", 1)[0]
                ctype = self.headers.get("Content-Type", "")
                encoding = self.headers.get("Content-Encoding", "").strip().lower()
                body = self.read_body()
                status, error = 200, None
                try:
                    if encoding == "gzip":
                        body = gzip.decompress(body)
                    elif encoding == "deflate":
                        body = zlib.decompress(body)
                    elif encoding not in ("", "identity"):
                        raise ValueError(f"Content-Encoding {encoding!r}")
                    if path != "/v1/traces":
                        status, error = 404, f"POST {path}"
                    elif not ctype.lower().startswith("application/x-protobuf"):
                        status, error = 415, f"Content-Type {ctype!r}"
                    else:
                        request = ExportTraceServiceRequest()
                        request.ParseFromString(body)
                        receiver.add(request)
                except Exception as e:  # noqa: BLE001 - a body that does not decode is the finding
                    status, error = 400, repr(e)
                with receiver.lock:
                    receiver.posts.append((path, ctype, encoding, status, error))
                if status == 200:
                    self.answer(200, ExportTraceServiceResponse().SerializeToString())
                else:
                    self.answer(status, (error or "").encode(), "text/plain")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, request):
        spans = []
        for rs in request.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append({
                        "service": resource.get("service.name"), "name": s.name, "kind": KIND.get(s.kind, s.kind),
                        "trace_id": bytes(s.trace_id), "span_id": bytes(s.span_id), "parent": bytes(s.parent_span_id),
                        "attrs": {kv.key: any_value(kv.value) for kv in s.attributes},
                        "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
                    })
        with self.lock:
            self.spans.extend(spans)

    def in_trace(self, trace_id):
        with self.lock:
            return [s for s in self.spans if s["trace_id"] == trace_id]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def by_service(spans, service):
    return [s for s in spans if s["service"] == service]


def tree(spans, root_parent):
    """The spans of one trace as an indented tree (service/name kind [attrs]), from the spans
    whose parent is `root_parent` or not among them."""
    ids = {s["span_id"] for s in spans}
    children = {}
    for s in spans:
        key = s["parent"] if s["parent"] in ids else None
        children.setdefault(key, []).append(s)
    lines = []

    def walk(parent, depth):
        for s in sorted(children.get(parent, []), key=lambda s: s["start"]):
            attrs = {k: v for k, v in s["attrs"].items() if k.startswith("e2a.")}
            orphan = "" if depth or s["parent"] in (root_parent, b"") else f" (parent {s['parent'].hex()} not exported)"
            lines.append(f"{'  ' * depth}{s['service']}/{s['name']} {s['kind']} {attrs or ''}{orphan}".rstrip())
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def elsewhere(receiver, trace_id, service, name):
    """Where `service`'s `name` spans that name trace `trace_id` in e2a.correlation_id went
    when they are not in it: for a failure's detail."""
    with receiver.lock:
        found = [s for s in receiver.spans if s["service"] == service and s["name"] == name
                 and s["attrs"].get("e2a.correlation_id") == trace_id.hex() and s["trace_id"] != trace_id]
    return [f"{service}/{name} with e2a.correlation_id={trace_id.hex()} is in trace {s['trace_id'].hex()} "
            f"(parent {s['parent'].hex() or 'none'})" for s in found]


def wait_for(receiver, trace_id, done, secs=SPAN_WAIT_SECS):
    """Polls the spans of `trace_id` until `done(spans)` or `secs` pass; then waits one more flush
    interval for stragglers while the set still grows."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline and not done(receiver.in_trace(trace_id)):
        time.sleep(0.2)
    seen = -1
    while len(receiver.in_trace(trace_id)) != seen:
        seen = len(receiver.in_trace(trace_id))
        time.sleep(1.5)
    return receiver.in_trace(trace_id)


# --- gateways --------------------------------------------------------------------------------

def config(name, agent, otlp_port):
    return f"""\
agent = "{agent}"

[server]
drain_secs = {DRAIN_SECS}

[a2a]
enabled = true

[store]
url = "memory"

[telemetry]
otlp_endpoint = "http://127.0.0.1:{otlp_port}"
service_name = "{name}"
"""


class Gateway:
    def __init__(self, e2a, work, name, agent, otlp_port):
        self.e2a, self.work, self.name = e2a, work, name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.file = os.path.join(work, f"{name}.toml")
        with open(self.file, "w") as f:
            f.write(config(name, agent, otlp_port))
        self.log = os.path.join(work, f"{name}.log")
        self.proc = None

    def log_tail(self, n=3000):
        try:
            with open(self.log) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def start(self):
        log = open(self.log, "w")
        self.proc = subprocess.Popen([self.e2a, "serve", "--config", self.file, "--bind", f"127.0.0.1:{self.port}"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return check(f"{self.name}: e2a serve --config starts (GET /healthz)", True)
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        return check(f"{self.name}: e2a serve --config starts (GET /healthz)", False,
                     f"exit {self.proc.poll()}; log:\n{self.log_tail()}")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def config_checks(e2a, gateways):
    r = subprocess.run([e2a, "config", "schema"], capture_output=True, text=True, timeout=60)
    check("config schema has [telemetry] otlp_endpoint and service_name",
          r.returncode == 0 and "otlp_endpoint" in r.stdout and "service_name" in r.stdout,
          (r.returncode, r.stderr[-300:]) if r.returncode else "not in the schema this binary prints")
    ok = True
    for g in gateways:
        r = subprocess.run([e2a, "config", "check", g.file], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and "telemetry" in r.stderr:
            detail = f"this binary has no [telemetry] support: exit {r.returncode}: {r.stderr.strip()}"
        else:
            detail = (r.returncode, r.stdout, r.stderr)
        ok &= check(f"config check {os.path.basename(g.file)} (with [telemetry]): exit 0", r.returncode == 0, detail)
    return ok


# --- requests --------------------------------------------------------------------------------

def new_trace():
    trace, span = secrets.token_hex(16), secrets.token_hex(8)
    return trace, span, f"00-{trace}-{span}-01"


def send_message(base, text, headers=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}}}
    return httpx.post(f"{base}/a2a", json=body, headers={"A2A-Version": "1.0", **(headers or {})}, timeout=30)


def status_text(task):
    return "".join(p.get("text", "") for p in (task.get("status", {}).get("message") or {}).get("parts", []))


def result_of(r):
    try:
        return r.json().get("result") or {}
    except ValueError:
        return {}


def is_hex_id(s, n):
    return isinstance(s, str) and len(s) == n and all(c in "0123456789abcdef" for c in s) and set(s) != {"0"}


# --- the sessions ----------------------------------------------------------------------------

def a2a_through_two(a, b, receiver):
    trace, span, tp = new_trace()
    tid, caller_span = bytes.fromhex(trace), bytes.fromhex(span)
    info(f"A2A SendMessage to gateway-a with traceparent {tp}")

    # 1. the answer, through B; X-Trace-ID
    r = send_message(a.base, "hello", {"traceparent": tp})
    task = result_of(r).get("task") or {}
    check("SendMessage to A (traceparent): a completed task 'Echo: hello'", r.status_code == 200
          and task.get("status", {}).get("state") == "TASK_STATE_COMPLETED" and status_text(task) == "Echo: hello",
          (r.status_code, r.text[:500]))
    check("SendMessage to A: X-Trace-ID is the traceparent's trace id", r.headers.get("x-trace-id") == trace,
          f"X-Trace-ID {r.headers.get('x-trace-id')!r}, expected {trace}")

    # 2. B ran it: its store has the task
    r = httpx.post(f"{b.base}/a2a", headers={"A2A-Version": "1.0"}, timeout=30,
                   json={"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}})
    tasks = result_of(r).get("tasks") or []
    check("ListTasks on B: the task A's a2a: backend sent ('Echo: hello', completed)", r.status_code == 200
          and any(t.get("status", {}).get("state") == "TASK_STATE_COMPLETED" and status_text(t) == "Echo: hello"
                  for t in tasks), (r.status_code, r.text[:500]))
    info(f"B's task JSON {'names' if trace in r.text else 'does not name'} the trace id (correlation_id is not part of "
         "an A2A task; the E2A check below sees it)")

    # 3. the spans
    def linked(spans):
        a_ids = {s["span_id"] for s in by_service(spans, "gateway-a")}
        return any(s["parent"] in a_ids for s in by_service(spans, "gateway-b"))

    started = time.monotonic()
    spans = wait_for(receiver, tid, linked)
    spans_a, spans_b = by_service(spans, "gateway-a"), by_service(spans, "gateway-b")
    info(f"spans of trace {trace} ({time.monotonic() - started:.1f}s after the answer):\n{tree(spans, caller_span) or '(none)'}")
    with receiver.lock:
        services = sorted({str(s["service"]) for s in receiver.spans})
        total = len(receiver.spans)
    info(f"all exports: {total} spans from services {services}")
    check("spans of service.name gateway-a in the trace", spans_a != [],
          f"none of {total} spans received (services {services}) is gateway-a's in trace {trace}")
    check("spans of service.name gateway-b in the trace", spans_b != [],
          f"none of {total} spans received (services {services}) is gateway-b's in trace {trace}")
    check("every span carries 16-byte trace and 8-byte span ids, start <= end (both set)",
          spans != [] and all(len(s["trace_id"]) == 16 and len(s["span_id"]) == 8 and len(s["parent"]) in (0, 8)
                              and 0 < s["start"] <= s["end"] for s in spans),
          [(s["service"], s["name"], s["span_id"].hex(), s["parent"].hex(), s["start"], s["end"]) for s in spans])
    roots_a = [s for s in spans_a if s["parent"] == caller_span]
    check("A's request span is a child of the caller's traceparent span", roots_a != [],
          f"no gateway-a span has parent {span}: "
          f"{[(s['name'], s['parent'].hex()) for s in spans_a]}")
    a_ids = {s["span_id"]: s for s in spans_a}
    hop = [s for s in spans_b if s["parent"] in a_ids]
    check("the hop is linked: a gateway-b span's parent is a gateway-a span", hop != [],
          f"gateway-b parents {[(s['name'], s['parent'].hex()) for s in spans_b]}, "
          f"gateway-a span ids {[(s['name'], s['span_id'].hex()) for s in spans_a]}")
    if hop:
        info("B hangs under: " + ", ".join(f"gateway-b/{s['name']} <- gateway-a/{a_ids[s['parent']]['name']}"
                                           for s in hop))
    run_a = [s for s in spans_a if s["name"] == "agent.run"]
    check("A exports agent.run in the trace, with e2a.request_id and e2a.agent",
          any({"e2a.request_id", "e2a.agent"} <= set(s["attrs"]) for s in run_a),
          f"gateway-a spans in the trace: {[s['name'] for s in spans_a]}; "
          f"{elsewhere(receiver, tid, 'gateway-a', 'agent.run') or [(s['name'], s['attrs']) for s in run_a]}")
    check("B exports agent.run in the same trace", any(s["name"] == "agent.run" for s in spans_b),
          f"gateway-b spans in the trace: {[s['name'] for s in spans_b]}; "
          f"{elsewhere(receiver, tid, 'gateway-b', 'agent.run')}")
    calls = [s for s in spans_a if s["name"] == "backend.call"]
    check("A exports backend.call (its a2a: agent) in the trace", calls != [],
          f"gateway-a spans in the trace: {[s['name'] for s in spans_a]}")

    def under(s, ancestors):
        seen = set()
        while s is not None and s["span_id"] not in seen:
            if s["span_id"] in ancestors:
                return True
            seen.add(s["span_id"])
            s = a_ids.get(s["parent"])
        return False

    call_ids = {s["span_id"] for s in calls}
    check("B's span hangs under A's backend.call (the traceparent A sends is of its current span)",
          calls != [] and any(under(a_ids[s["parent"]], call_ids) for s in hop),
          [(s["name"], a_ids[s["parent"]]["name"]) for s in hop] or "no gateway-b span under a gateway-a span")
    ids = {s["span_id"] for s in spans} | {caller_span}
    orphans = [(s["service"], s["name"], s["parent"].hex() or "(root)") for s in spans if s["parent"] not in ids]
    check("the trace is one tree under the caller's span (every parent exported or the caller's)",
          spans != [] and orphans == [], orphans or "no spans")
    dup = len(spans) - len({s["span_id"] for s in spans})
    check("no span exported twice", dup == 0, f"{dup} duplicate span ids")


def e2a_http(a, receiver):
    trace, span, tp = new_trace()
    tid = bytes.fromhex(trace)
    rid = f"req-{uuid.uuid4()}"
    body = {"method": "chat.send", "request_id": rid, "params": {"query": "over e2a"}}
    r = httpx.post(f"{a.base}/v1/e2a/requests", json=body, headers={"Accept": "application/json", "traceparent": tp},
                   timeout=30)
    try:
        frame = r.json()
    except ValueError:
        frame = {}
    check("E2A HTTP to A (traceparent): answered through B", r.status_code == 200 and "Echo: over e2a" in r.text,
          (r.status_code, r.text[:500]))
    check("E2A HTTP: the final frame's correlation_id is the trace id", frame.get("correlation_id") == trace,
          f"correlation_id {frame.get('correlation_id')!r}, expected {trace}")
    check("E2A HTTP: X-Trace-ID is the trace id", r.headers.get("x-trace-id") == trace,
          f"X-Trace-ID {r.headers.get('x-trace-id')!r}")
    spans = wait_for(receiver, tid, lambda sp: by_service(sp, "gateway-b") != []
                     and any(s["name"] == "agent.run" for s in by_service(sp, "gateway-a")))
    runs = [s for s in by_service(spans, "gateway-a") if s["name"] == "agent.run"]
    check("E2A HTTP: A's agent.run in the trace names the request's e2a.request_id",
          any(s["attrs"].get("e2a.request_id") == rid for s in runs), [s["attrs"] for s in runs] or "no agent.run")
    if runs:
        info(f"A's agent.run attributes: {runs[0]['attrs']}")
    check("E2A HTTP: gateway-b spans in the trace too", by_service(spans, "gateway-b") != [],
          [(s["service"], s["name"]) for s in spans])
    # the only E2A request of the session: every span A made for it is in its trace
    with receiver.lock:
        of_request = [s for s in receiver.spans if s["service"] == "gateway-a"
                      and "/v1/e2a/requests" in (s["attrs"].get("url.path"), s["attrs"].get("path"))]
    strays = [(s["name"], s["trace_id"].hex(), s["parent"].hex() or "(root)") for s in of_request
              if s["trace_id"] != tid]
    check("E2A HTTP: every span of A for the request is in its trace (no second root per request)",
          of_request != [] and strays == [], strays or "no span names the path")


def no_context(b, receiver):
    r = httpx.post(f"{b.base}/a2a", headers={"A2A-Version": "1.0"}, timeout=30,
                   json={"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {}})
    trace = r.headers.get("x-trace-id")
    check("a request without trace context: X-Trace-ID is a new W3C trace id (32 lowercase hex)",
          r.status_code == 200 and is_hex_id(trace, 32), (r.status_code, trace))
    if is_hex_id(trace, 32):
        spans = wait_for(receiver, bytes.fromhex(trace), lambda sp: sp != [])
        check("... and B's spans are in that trace, rooted there (a span without parent)",
              by_service(spans, "gateway-b") != [] and any(s["parent"] == b"" for s in spans),
              [(s["service"], s["name"], s["parent"].hex()) for s in spans] or "no span in that trace")


def shutdown(a, b, receiver):
    """An answer, then at once SIGTERM to both: exit 0 within drain + 2 s, the answer's spans
    exported by then."""
    trace, _, tp = new_trace()
    r = send_message(a.base, "hello again", {"traceparent": tp})
    check("SendMessage before SIGTERM answered", r.status_code == 200 and result_of(r).get("task"),
          (r.status_code, r.text[:300]))
    sent = time.monotonic()
    for g in (a, b):
        g.proc.send_signal(signal.SIGTERM)
    for g in (a, b):
        limit = DRAIN_SECS + 2
        try:
            code = g.proc.wait(timeout=max(0.0, sent + limit - time.monotonic()))
            took = time.monotonic() - sent
            check(f"{g.name}: SIGTERM -> exit 0 within drain + 2 s ({limit}s)", code == 0 and took <= limit,
                  f"exit {code} after {took:.1f}s; log:\n{g.log_tail(1500)}")
        except subprocess.TimeoutExpired:
            check(f"{g.name}: SIGTERM -> exit 0 within drain + 2 s ({limit}s)", False,
                  f"still running after {limit}s; log:\n{g.log_tail(1500)}")
            g.stop()
    time.sleep(0.3)  # an export sent at exit may still be in the receiver's handler
    spans = receiver.in_trace(bytes.fromhex(trace))
    check("spans of the answer just before SIGTERM exported by shutdown (gateway-a and gateway-b)",
          by_service(spans, "gateway-a") != [] and by_service(spans, "gateway-b") != [],
          [(s["service"], s["name"]) for s in spans] or "no span of that trace")


def main(argv):
    e2a = argv[1] if len(argv) > 1 else os.environ.get("E2A_BIN")
    if not e2a:
        print(__doc__)
        return 2
    work = argv[2] if len(argv) > 2 else tempfile.mkdtemp(prefix="trace-otlp-")
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    receiver = Receiver()
    info(f"OTLP receiver on 127.0.0.1:{receiver.port}; work dir {work}")
    b = Gateway(e2a, work, "gateway-b", f"script:{SCRIPT}", receiver.port)
    a = Gateway(e2a, work, "gateway-a", f"a2a:{b.base}", receiver.port)
    try:
        if config_checks(e2a, [a, b]) and b.start() and a.start():
            a2a_through_two(a, b, receiver)
            e2a_http(a, receiver)
            no_context(b, receiver)
            shutdown(a, b, receiver)
            with receiver.lock:
                posts = list(receiver.posts)
            bad = [p for p in posts if p[3] != 200]
            kinds = sorted({(p[1], p[2] or "identity") for p in posts})
            check(f"every export: POST /v1/traces, protobuf, decoded ({len(posts)} posts, {kinds})",
                  posts != [] and bad == [], bad or "no export received")
    except Exception as e:  # a session that breaks counts as a failure
        import traceback

        traceback.print_exc()
        check("session", False, repr(e))
    finally:
        for g in (a, b):
            g.stop()
        receiver.stop()
        dump = os.path.join(work, "spans.json")
        with open(dump, "w") as f:
            json.dump([{k: v.hex() if isinstance(v, bytes) else v for k, v in s.items()} for s in receiver.spans],
                      f, indent=1, default=str)
        info(f"every span received: {dump}")
    return REPORT.finish(started)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
