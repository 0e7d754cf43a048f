"""A bench peer: the official a2a-sdk (Python) server with an echo executor, doing what
peer-a2a's minimal mode does (one artifact `You said: <text>`, then COMPLETED), served with
uvicorn on 127.0.0.1:PORT (JSON-RPC at POST /a2a). Usage: python server.py PORT"""

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = get_message_text(context.message)
        await updater.add_artifact([new_text_part(f"You said: {text}")], name="output")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        raise NotImplementedError


def main() -> None:
    port = int(sys.argv[1])
    url = f"http://127.0.0.1:{port}/a2a"
    card = AgentCard(
        name="bench-echo",
        description="echo",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="answers 'You said: <text>'", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    healthz = Route("/healthz", lambda _request: PlainTextResponse("ok"))
    app = Starlette(routes=[healthz, *create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
