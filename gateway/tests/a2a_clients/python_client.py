"""Sessions of the official A2A Python SDK client (a2a-sdk, pinned in requirements.lock)
against `e2a serve --a2a --agent script:gateway/tests/a2a_clients/script.json`.

Usage:
  python_client.py sessions BASE_URL [--binding JSONRPC|HTTP+JSON|GRPC]
  python_client.py auth BASE_URL TOKEN [--binding JSONRPC|GRPC]
  python_client.py chain BASE_URL
  python_client.py tck BASE_URL            (against tck_script.json: the TCK's message-id prefixes)
  python_client.py restart-before BASE_URL STATE_FILE GATEWAY_PID
  python_client.py restart-after BASE_URL STATE_FILE

Each check prints PASS/FAIL; the last line is "N passed, M failed" (exit 1 on a failure).
"""

import asyncio
import json
import os
import signal
import sys
import time
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import (
    A2AClientError,
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    CredentialService,
    create_client,
)
from a2a.client.card_resolver import A2ACardResolver
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.types import SendMessageConfiguration
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from report import Report

REPORT = Report("")
check = REPORT.check


def message(text, task_id=None, context_id=None, message_id=None):
    m = Message(
        message_id=message_id or f"py-{uuid.uuid4()}",
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return m


def kind(ev):
    return ev.WhichOneof("payload")


def status_text(status):
    return "".join(p.text for p in status.message.parts)


def grpc_channel(target):
    """The channel to a card's GRPC interface (`host:port`), as the SDK's samples make it."""
    import grpc

    return grpc.aio.insecure_channel(target)


async def client_for(base, binding="JSONRPC", streaming=True, interceptors=None):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding],
                          grpc_channel_factory=grpc_channel if binding == "GRPC" else None)
    return await create_client(base, client_config=config, interceptors=interceptors)


async def collect(aiter):
    return [ev async for ev in aiter]


async def sessions(base, binding):
    REPORT.prefix = f"python[{binding}]: "
    card = await A2ACardResolver(httpx.AsyncClient(), base).get_agent_card()
    bindings = {i.protocol_binding: i.url for i in card.supported_interfaces}
    check("card resolution", card.capabilities.streaming and "JSONRPC" in bindings and "HTTP+JSON" in bindings
          and binding in bindings, MessageToDict(card))

    unary = await client_for(base, binding, streaming=False)
    events = await collect(unary.send_message(SendMessageRequest(message=message("hello there"))))
    task = events[-1].task
    check("SendMessage completes", task.status.state == TaskState.TASK_STATE_COMPLETED, MessageToDict(task))
    check("status message carries the final text", status_text(task.status) == "Echo: hello there",
          status_text(task.status))

    # a send naming no task starts a new task whatever its messageId (as the A2A TCK expects)
    first_message = message("hello again")
    one = (await collect(unary.send_message(SendMessageRequest(message=first_message))))[-1].task
    two = (await collect(unary.send_message(SendMessageRequest(message=first_message))))[-1].task
    check("a SendMessage repeating a messageId, naming no task, starts a new task", one.id and two.id
          and one.id != two.id and two.status.state == TaskState.TASK_STATE_COMPLETED, (one.id, two.id))

    # a text part past the gateway's string limit (2 MiB) is refused on every binding, gRPC's too
    try:
        await collect(unary.send_message(SendMessageRequest(message=message("x" * (3 << 20)))))
        check("a 3 MiB text part refused", False, "accepted")
    except Exception as e:
        check("a 3 MiB text part refused", True, repr(e)[:200])

    got = await unary.get_task(GetTaskRequest(id=task.id, history_length=1))
    check("GetTask with historyLength", got.id == task.id and len(got.history) == 1, MessageToDict(got))

    listed = await unary.list_tasks(ListTasksRequest(context_id=task.context_id))
    check("ListTasks by context", [t.id for t in listed.tasks] == [task.id] and listed.total_size == 1,
          MessageToDict(listed))

    stream = await client_for(base, binding)
    events = await collect(stream.send_message(SendMessageRequest(message=message("artifacts please"))))
    kinds = [kind(e) for e in events]
    check("SendStreamingMessage: task first, then updates", kinds[0] == "task" and kinds[-1] == "status_update", kinds)
    check("stream ends completed", events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED)
    task = await stream.get_task(GetTaskRequest(id=events[0].task.id))
    arts = {a.artifact_id: a for a in task.artifacts}
    check("text artifact appended in chunks", "".join(p.text for p in arts["notes"].parts) == "alpha beta gamma delta",
          MessageToDict(arts.get("notes", task)))
    check("file artifact (raw bytes)", arts["blob"].parts[0].raw == b"hello world!"
          and arts["blob"].parts[0].media_type == "application/octet-stream")
    check("file-url artifact", arts["link"].parts[0].url == "https://example.com/report.pdf")
    rows = [MessageToDict(p)["data"] for p in arts["rows"].parts]
    check("data artifact appended in chunks", rows == [[{"n": 1}, {"n": 2}], [{"n": 3}]], rows)

    reply = await collect(stream.send_message(SendMessageRequest(message=message("hi", message_id=f"reply-{uuid.uuid4()}"))))
    check("direct Message reply", len(reply) == 1 and kind(reply[0]) == "message"
          and "a direct reply" in reply[0].message.parts[0].text, [MessageToDict(r) for r in reply])

    # input-required round trip: the follow-up with the task id answers it
    first = await collect(stream.send_message(SendMessageRequest(message=message("book a table"))))
    paused = first[-1].status_update
    check("input-required pause", paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
          and "how many people" in status_text(paused.status), MessageToDict(paused))
    answer = message("4", task_id=paused.task_id, context_id=paused.context_id)
    second = await collect(stream.send_message(SendMessageRequest(message=answer)))
    done = second[-1].status_update
    check("follow-up answers the same task", done.task_id == paused.task_id
          and done.status.state == TaskState.TASK_STATE_COMPLETED and status_text(done.status) == "Booked for 4.",
          MessageToDict(done))
    check("contextId continuity", second[0].task.context_id == paused.context_id)

    # a send naming a task is delivered once: the same answer again gets the task, the agent
    # does not run again; other content under its messageId is refused
    again = (await collect(unary.send_message(SendMessageRequest(message=answer))))[-1].task
    check("the same answer (same messageId, same task) again gets the task", again.id == paused.task_id
          and again.status.state == TaskState.TASK_STATE_COMPLETED and status_text(again.status) == "Booked for 4.",
          MessageToDict(again))
    changed = Message()
    changed.CopyFrom(answer)
    changed.parts[0].text = "5"
    try:
        await collect(unary.send_message(SendMessageRequest(message=changed)))
        check("the same messageId and task with other content refused", False, "accepted")
    except Exception as e:  # the SDK's InvalidRequestError (an A2AError), or its client error
        check("the same messageId and task with other content refused", "messageId" in str(e), repr(e))

    # CancelTask mid-stream
    seen = []
    agen = stream.send_message(SendMessageRequest(message=message("count slowly")))
    canceled = None
    async for ev in agen:
        seen.append(ev)
        if kind(ev) == "artifact_update" and canceled is None:
            canceled = await stream.cancel_task(CancelTaskRequest(id=seen[0].task.id))
    check("CancelTask mid-stream", canceled is not None and canceled.status.state == TaskState.TASK_STATE_CANCELED,
          canceled and MessageToDict(canceled))
    check("stream ends canceled", seen[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED)
    try:
        await stream.cancel_task(CancelTaskRequest(id=seen[0].task.id))
        check("cancel of a canceled task refused", False, "no error")
    except TaskNotCancelableError:
        check("cancel of a canceled task refused (TaskNotCancelable)", True)
    try:
        await stream.get_task(GetTaskRequest(id="no-such-task"))
        check("unknown task refused", False, "no error")
    except TaskNotFoundError:
        check("unknown task refused (TaskNotFound)", True)

    # SubscribeToTask after a dropped connection: the snapshot, then exactly the rest
    full = "one two three four five six seven eight"
    agen = stream.send_message(SendMessageRequest(message=message("count slowly")))
    before = []
    async for ev in agen:
        before.append(ev)
        if len(before) == 4:
            break
    await agen.aclose()
    task_id = before[0].task.id
    after = await collect(stream.subscribe(SubscribeToTaskRequest(id=task_id)))
    snapshot = after[0].task
    text = "".join(p.text for a in snapshot.artifacts if a.name == "output" for p in a.parts)
    text += "".join(p.text for e in after[1:] if kind(e) == "artifact_update" for p in e.artifact_update.artifact.parts)
    check("SubscribeToTask after a dropped connection", kind(after[0]) == "task"
          and after[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED and text == full, text)

    # ... and with Last-Event-ID: exactly the events after the last one seen
    agen = stream.send_message(SendMessageRequest(message=message("count slowly")))
    before = []
    async for ev in agen:
        before.append(ev)
        if len(before) == 3:
            break
    await agen.aclose()
    task_id = before[0].task.id
    ctx = ClientCallContext(service_parameters={"Last-Event-ID": str(len(before))})
    rest = await collect(stream.subscribe(SubscribeToTaskRequest(id=task_id), context=ctx))
    everything = await collect(stream.subscribe(SubscribeToTaskRequest(id=task_id),
                                                context=ClientCallContext(service_parameters={"Last-Event-ID": "0"})))
    as_dicts = lambda evs: [MessageToDict(e) for e in evs]
    check("resubscribe with Last-Event-ID: nothing lost or repeated",
          as_dicts(before) + as_dicts(rest) == as_dicts(everything), (len(before), len(rest), len(everything)))

    rejected = await collect(stream.send_message(SendMessageRequest(message=message("forbidden thing"))))
    check("rejected task", rejected[-1].status_update.status.state == TaskState.TASK_STATE_REJECTED)
    failed = await collect(stream.send_message(SendMessageRequest(message=message("crash now"))))
    check("failed task", failed[-1].status_update.status.state == TaskState.TASK_STATE_FAILED
          and "crashed" in status_text(failed[-1].status_update.status))


class Token(CredentialService):
    def __init__(self, token):
        self.token = token

    async def get_credentials(self, security_scheme_name, context):
        return self.token if security_scheme_name == "bearer" else None


async def auth(base, token, binding="JSONRPC"):
    REPORT.prefix = f"python[auth {binding}]: "
    card = await A2ACardResolver(httpx.AsyncClient(), base).get_agent_card()
    check("card is public and declares bearer", "bearer" in card.security_schemes
          and card.security_schemes["bearer"].http_auth_security_scheme.scheme.lower() == "bearer")
    good = await client_for(base, binding, interceptors=[AuthInterceptor(Token(token))])
    events = await collect(good.send_message(SendMessageRequest(message=message("hello"))))
    check("bearer accepted", events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED)
    extended = await good.get_extended_agent_card(GetExtendedAgentCardRequest())
    check("GetExtendedAgentCard for an authenticated caller", extended.name == card.name)
    for name, interceptors in [("no token", None), ("wrong token", [AuthInterceptor(Token("wrong"))])]:
        bad = await client_for(base, binding, interceptors=interceptors)
        try:
            await collect(bad.send_message(SendMessageRequest(message=message("hello"))))
            check(f"{name} refused", False, "accepted")
        except A2AClientError as e:
            # HTTP: the 401; gRPC: UNAUTHENTICATED, its ErrorInfo reason
            refused = ("UNAUTHENTICATED" if binding == "GRPC" else "401") in str(e)
            check(f"{name} refused", refused, repr(e))


async def chain(base):
    REPORT.prefix = "python[chain]: "
    c = await client_for(base)
    events = await collect(c.send_message(SendMessageRequest(message=message("artifacts please"))))
    last = events[-1].status_update
    check("text through two gateways", last.status.state == TaskState.TASK_STATE_COMPLETED
          and status_text(last.status) == "Here are your artifacts.", MessageToDict(last))
    task = await c.get_task(GetTaskRequest(id=events[0].task.id))
    arts = {a.artifact_id: a for a in task.artifacts}
    check("artifacts through two gateways",
          "".join(p.text for p in arts["notes"].parts) == "alpha beta gamma delta"
          and arts["blob"].parts[0].raw == b"hello world!"
          and arts["link"].parts[0].url == "https://example.com/report.pdf",
          MessageToDict(task))
    paused = (await collect(c.send_message(SendMessageRequest(message=message("book a table")))))[-1].status_update
    done = (await collect(c.send_message(SendMessageRequest(
        message=message("2", task_id=paused.task_id, context_id=paused.context_id)))))[-1].status_update
    check("input-required through two gateways", status_text(done.status) == "Booked for 2.", MessageToDict(done))


async def tck(base):
    """The behaviours the A2A TCK drives by message-id prefix, through the official client."""
    REPORT.prefix = "python[tck]: "
    c = await client_for(base, streaming=False)
    ctx_id = f"tck-ctx-{uuid.uuid4()}"

    def send(prefix, config=None, **kw):
        req = SendMessageRequest(message=message("Hello from TCK", message_id=f"{prefix}-{uuid.uuid4()}", **kw))
        if config is not None:
            req.configuration.CopyFrom(config)
        return collect(c.send_message(req))

    done = (await send("tck-complete-task", context_id=ctx_id))[-1].task
    check("complete-task", done.status.state == TaskState.TASK_STATE_COMPLETED
          and status_text(done.status) == "Hello from TCK" and done.context_id == ctx_id, MessageToDict(done))
    quick = (await send("tck-delayed-complete", SendMessageConfiguration(return_immediately=True)))[-1].task
    check("returnImmediately answers while the task works", quick.status.state in
          (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING), MessageToDict(quick))
    slow = (await send("tck-delayed-complete"))[-1].task
    check("blocking waits for the end", slow.status.state == TaskState.TASK_STATE_COMPLETED
          and status_text(slow.status) == "Done after delay", MessageToDict(slow))
    for prefix, check_part in [
        ("tck-artifact-text", lambda p: p.text == "Generated text content"),
        ("tck-artifact-file-url", lambda p: p.url == "https://example.com/output.txt" and p.filename == "output.txt"),
        ("tck-artifact-file", lambda p: p.raw == b"TCK file content" and p.media_type == "text/plain"),
        ("tck-artifact-data", lambda p: MessageToDict(p).get("data") == {"key": "value", "count": 42}),
    ]:
        t = (await send(prefix))[-1].task
        ok = t.status.state == TaskState.TASK_STATE_COMPLETED and len(t.artifacts) == 1 and check_part(t.artifacts[0].parts[0])
        check(prefix, ok, MessageToDict(t))
    m = (await send("tck-message-response"))[-1]
    check("message-response", kind(m) == "message" and m.message.parts[0].text == "Direct message response")
    paused = (await send("tck-input-required"))[-1].task
    check("input-required", paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    canceled = await c.cancel_task(CancelTaskRequest(id=paused.id))
    check("cancel an input-required task", canceled.status.state == TaskState.TASK_STATE_CANCELED)
    rejected = (await send("tck-reject-task"))[-1].task
    check("reject-task", rejected.status.state == TaskState.TASK_STATE_REJECTED)
    for name, exc, kwargs in [
        ("message to a terminal task: UnsupportedOperation", UnsupportedOperationError, {"task_id": done.id}),
        ("message to an unknown task: TaskNotFound", TaskNotFoundError, {"task_id": "tck-nonexistent"}),
    ]:
        try:
            await send("tck-complete-task", **kwargs)
            check(name, False, "no error")
        except exc:
            check(name, True)
    bad = SendMessageRequest(message=Message(message_id="tck-send-003", role=Role.ROLE_USER,
                                             parts=[Part(raw=b"tck", media_type="application/x-unsupported-tck-type")]))
    try:
        await collect(c.send_message(bad))
        check("unsupported media type: ContentTypeNotSupported", False, "no error")
    except ContentTypeNotSupportedError:
        check("unsupported media type: ContentTypeNotSupported", True)
    for _ in range(2):
        await send("tck-complete-task", context_id=ctx_id)
    page = await c.list_tasks(ListTasksRequest(context_id=ctx_id, page_size=2))
    rest = await c.list_tasks(ListTasksRequest(context_id=ctx_id, page_size=2, page_token=page.next_page_token))
    ids = [t.id for t in page.tasks] + [t.id for t in rest.tasks]
    check("ListTasks pages with pageToken, empty nextPageToken at the end", page.next_page_token != ""
          and rest.next_page_token == "" and len(set(ids)) == 3 and page.total_size == 3, MessageToDict(page))


async def restart_before(base, state_file, pid):
    """Reads the first events of a slow task, SIGKILLs the gateway while the stream is open,
    and keeps every event that arrived before the connection broke."""
    REPORT.prefix = "python[restart]: "
    c = await client_for(base)
    seen = []
    broke = False
    try:
        async for ev in c.send_message(SendMessageRequest(message=message("count slowly"))):
            seen.append(MessageToDict(ev))
            if len(seen) == 4:
                os.kill(pid, signal.SIGKILL)
    except A2AClientError:
        broke = True
    with open(state_file, "w") as f:
        json.dump({"task_id": seen[0]["task"]["id"], "seen": seen}, f)
    check("the stream broke when the gateway was killed mid-stream", broke and len(seen) >= 4, len(seen))


async def restart_after(base, state_file):
    REPORT.prefix = "python[restart]: "
    with open(state_file) as f:
        state = json.load(f)
    c = await client_for(base)
    task_id, seen = state["task_id"], state["seen"]
    ctx = ClientCallContext(service_parameters={"Last-Event-ID": str(len(seen))})
    rest = [MessageToDict(e) for e in await collect(c.subscribe(SubscribeToTaskRequest(id=task_id), context=ctx))]
    full_ctx = ClientCallContext(service_parameters={"Last-Event-ID": "0"})
    full = [MessageToDict(e) for e in await collect(c.subscribe(SubscribeToTaskRequest(id=task_id), context=full_ctx))]
    check("after a restart: nothing lost or repeated", seen + rest == full, (len(seen), len(rest), len(full)))
    check("the log ends in a terminal state", full[-1].get("statusUpdate", {}).get("status", {}).get("state")
          in ("TASK_STATE_FAILED", "TASK_STATE_COMPLETED"), full[-1])
    task = await c.get_task(GetTaskRequest(id=task_id))
    check("GetTask after a restart", task.id == task_id and task.status.state in
          (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_COMPLETED), MessageToDict(task))


async def main(argv):
    mode, base = argv[1], argv[2]
    started = time.monotonic()
    try:
        if mode == "sessions":
            binding = argv[4] if len(argv) > 4 and argv[3] == "--binding" else "JSONRPC"
            await sessions(base, binding)
        elif mode == "auth":
            binding = argv[5] if len(argv) > 5 and argv[4] == "--binding" else "JSONRPC"
            await auth(base, argv[3], binding)
        elif mode == "chain":
            await chain(base)
        elif mode == "tck":
            await tck(base)
        elif mode == "restart-before":
            await restart_before(base, argv[3], int(argv[4]))
        elif mode == "restart-after":
            await restart_after(base, argv[3])
        else:
            raise SystemExit(f"unknown mode {mode}")
    except Exception as e:  # a session that breaks counts as a failure
        import traceback

        traceback.print_exc()
        check("session", False, repr(e))
    return REPORT.finish(started)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
