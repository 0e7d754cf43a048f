"""A third-party A2A 1.0 agent built with the official Python a2a-sdk (server side).

Usage (with the venv at gateway/tests/clients/acp-agents/.venv, a2a-sdk 1.2.3):

    python sdk_agent.py --port PORT --mode message|artifact [--push] [--delay SECONDS]
                        [--legacy jsonrpc|rest]

Binds 127.0.0.1 only. The agent card is at http://127.0.0.1:PORT/.well-known/agent-card.json
and declares protocol 1.0 interfaces: JSONRPC at http://127.0.0.1:PORT/ (POST /) and
HTTP+JSON at the same base URL (POST /message:send, /message:stream, /tasks/...).
capabilities.streaming is true. For each user message (its text parts concatenated):

  --mode message   one agent Message whose single text part is "sdk says: <text>", no task.
  --mode artifact  a task: SUBMITTED, WORKING, an artifact named "answer" streamed in
                   two chunks whose concatenation is "sdk artifact: <text>", then COMPLETED
                   without a status message.

--push: push notifications (capabilities.pushNotifications): a push config sent with a message
(SendMessage's configuration.taskPushNotificationConfig) gets every event of its task, posted by
the SDK's own BasePushNotificationSender. --delay: the artifact mode waits this long before its
answer (a client sending with returnImmediately gets the task first, its answer by push).

--legacy: the agent speaks A2A 0.3 only (the SDK's own 0.3 compatibility layer), as an agent
of the 0.3 era does: `jsonrpc` serves 0.3's own card form (`url`, `preferredTransport`,
`protocolVersion: "0.3.0"`) and JSON-RPC with 0.3's method names only (a 1.0 name such as
`SendStreamingMessage` is refused, -32601); `rest` serves a card listing one HTTP+JSON interface
labelled `0.3.0` and 0.3's HTTP+JSON routes only (`/v1/message:stream`, `/v1/tasks/{id}`…).

CancelTask cancels the task (CANCELED).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

try:
    import uvicorn
    from a2a.helpers import get_message_text, new_text_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import (
        create_agent_card_routes,
        create_jsonrpc_routes,
        create_rest_routes,
    )
    import httpx
    from a2a.server.tasks import (
        BasePushNotificationSender,
        InMemoryPushNotificationConfigStore,
        InMemoryTaskStore,
        TaskUpdater,
    )
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Task,
        TaskState,
        TaskStatus,
    )
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
except ImportError as exc:  # wrong interpreter / venv
    sys.exit(f"sdk_agent: missing dependency ({exc}); run with the acp-agents .venv python")


class SdkAgentExecutor(AgentExecutor):
    """Answers every message with a Message (mode message) or a streamed artifact (artifact)."""

    def __init__(self, mode: str, delay: float) -> None:
        self.mode = mode
        self.delay = delay

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.message is None:
            raise ValueError("no user message in the request")
        text = get_message_text(context.message, delimiter="")
        if self.mode == "message":
            await event_queue.enqueue_event(
                new_text_message(f"sdk says: {text}", context_id=context.context_id)
            )
            return
        # artifact mode: publish the task first, then its updates.
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        await asyncio.sleep(self.delay)
        answer = f"sdk artifact: {text}"
        half = len(answer) // 2
        artifact_id = f"{task_id}:answer"
        for i, chunk in enumerate((answer[:half], answer[half:])):
            await asyncio.sleep(0.05)  # so that the chunks arrive as separate stream events
            await updater.add_artifact(
                [Part(text=chunk)],
                artifact_id=artifact_id,
                name="answer",
                append=i > 0,
                last_chunk=i == 1,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def legacy_card(base: str, mode: str, push: bool) -> dict:
    """A card of A2A 0.3's own form: one JSON-RPC interface at `url`."""
    return {
        "name": f"sdk-agent-{mode}-0.3",
        "description": f"a2a-sdk test agent (mode {mode}) speaking A2A 0.3",
        "version": "1.0.0",
        "protocolVersion": "0.3.0",
        "url": base,
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": True, "pushNotifications": push},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echoes the user text", "tags": ["test"]}],
    }


def only_0_3_methods(endpoint):
    """The JSON-RPC endpoint, refusing 1.0 method names (0.3's have a slash)."""

    async def handle(request: Request):
        try:
            body = await request.json()  # starlette keeps the body for the endpoint
        except ValueError:
            body = {}
        method = body.get("method", "") if isinstance(body, dict) else ""
        if "/" not in method:
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id") if isinstance(body, dict) else None,
                                 "error": {"code": -32601, "message": f"not an A2A 0.3 method: {method}"}})
        return await endpoint(request)

    return handle


def build_app(port: int, mode: str, push: bool = False, delay: float = 0.0, legacy: str | None = None) -> Starlette:
    base = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name=f"sdk-agent-{mode}",
        description=f"a2a-sdk test agent (mode {mode}) for the e2a cross-protocol matrix",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes the user text", tags=["test"])],
        supported_interfaces=[
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version="0.3.0", url=base),
        ] if legacy == "rest" else [
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=base),
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=base),
        ],
    )
    pushes = {}
    if push:
        configs = InMemoryPushNotificationConfigStore()
        pushes = {
            "push_config_store": configs,
            "push_sender": BasePushNotificationSender(httpx.AsyncClient(timeout=10), configs),
        }
    handler = DefaultRequestHandler(
        agent_executor=SdkAgentExecutor(mode, delay),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        **pushes,
    )
    app = Starlette()
    if legacy == "jsonrpc":
        served = legacy_card(base, mode, push)
        app.routes.append(Route("/.well-known/agent-card.json", lambda _: JSONResponse(served), methods=["GET"]))
        for route in create_jsonrpc_routes(request_handler=handler, rpc_url="/", enable_v0_3_compat=True):
            app.routes.append(Route(route.path, only_0_3_methods(route.endpoint), methods=["POST"]))
        return app
    app.routes.extend(create_agent_card_routes(agent_card=card))
    if legacy == "rest":
        routes = create_rest_routes(request_handler=handler, enable_v0_3_compat=True)
        app.routes.extend(r for r in routes if r.path.startswith("/v1/"))
        return app
    app.routes.extend(create_jsonrpc_routes(request_handler=handler, rpc_url="/"))
    app.routes.extend(create_rest_routes(request_handler=handler))
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1")
    parser.add_argument("--mode", choices=["message", "artifact"], required=True)
    parser.add_argument("--push", action="store_true", help="serve push notifications")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before the artifact mode's answer")
    parser.add_argument("--legacy", choices=["jsonrpc", "rest"], help="speak A2A 0.3 only, on this binding")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error(f"invalid port {args.port}")
    try:
        uvicorn.run(build_app(args.port, args.mode, args.push, args.delay, args.legacy), host="127.0.0.1", port=args.port,
                    log_level=args.log_level)
    except OSError as exc:
        sys.exit(f"sdk_agent: cannot serve on 127.0.0.1:{args.port}: {exc}")
    except SystemExit as exc:  # uvicorn's startup failure (e.g. port in use, logged above)
        if exc.code:
            sys.exit(f"sdk_agent: cannot serve on 127.0.0.1:{args.port} (uvicorn exit {exc.code})")


if __name__ == "__main__":
    main()
