"""A third-party A2A 1.0 agent built with the official Python a2a-sdk (server side).

Usage (with the venv at gateway/tests/clients/acp-agents/.venv, a2a-sdk 1.2.3):

    python sdk_agent.py --port PORT --mode message|artifact [--push] [--delay SECONDS]

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


def build_app(port: int, mode: str, push: bool = False, delay: float = 0.0) -> Starlette:
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
    app.routes.extend(create_agent_card_routes(agent_card=card))
    app.routes.extend(create_jsonrpc_routes(request_handler=handler, rpc_url="/"))
    app.routes.extend(create_rest_routes(request_handler=handler))
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="TCP port on 127.0.0.1")
    parser.add_argument("--mode", choices=["message", "artifact"], required=True)
    parser.add_argument("--push", action="store_true", help="serve push notifications")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before the artifact mode's answer")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error(f"invalid port {args.port}")
    try:
        uvicorn.run(build_app(args.port, args.mode, args.push, args.delay), host="127.0.0.1", port=args.port,
                    log_level=args.log_level)
    except OSError as exc:
        sys.exit(f"sdk_agent: cannot serve on 127.0.0.1:{args.port}: {exc}")
    except SystemExit as exc:  # uvicorn's startup failure (e.g. port in use, logged above)
        if exc.code:
            sys.exit(f"sdk_agent: cannot serve on 127.0.0.1:{args.port} (uvicorn exit {exc.code})")


if __name__ == "__main__":
    main()
