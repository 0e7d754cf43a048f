"""A small ACP agent written with the official Python SDK (`agent-client-protocol`, agent side).

It records what it receives so that a client can tell whether a relay in between (`e2a acp
--agent acp:CMD`) passed every message through unchanged, and it exercises every direction of
ACP: agent → client requests (session/request_permission, fs/read_text_file), session/update
notifications of several kinds, an extension method and notification, session modes and config
options, session/cancel and `$/cancel_request`, and session/load after a restart.

usage: python recording_agent.py [--history DIR]     (or RECORDING_AGENT_HISTORY=DIR)

  initialize           agentInfo, one authMethod, agentCapabilities (loadSession,
                       mcpCapabilities, sessionCapabilities.list), a `_meta`
  session/new          records the raw cwd, mcpServers and `_meta` it received; returns two modes
                       and a select config option; then sends available_commands_update
  session/set_mode     current_mode_update, then {}
  session/set_config_option   config_option_update, then the new configOptions
  session/load         replays the session's history from DIR (works after a restart)
  session/list         the sessions stored in DIR
  _recording/echo      returns its params
  _recording/fail      a JSON-RPC error (code -32042, with data)
  _recording/note      (notification) recorded, reported by "whoami"
  $/cancel_request     cancels the in-flight session/prompt with that JSON-RPC id
  session/prompt       "whoami" → JSON of what this agent received (cwd, mcpServers, `_meta`,
                       methods, notes, cancel requests); "permission" → asks the client and
                       replies with its outcome; "read PATH" → fs/read_text_file, replies with
                       the content; "slow" → streams chunks for 5 s, honouring session/cancel and
                       $/cancel_request (stopReason cancelled); anything else → echoed in two chunks
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import acp
from acp import RequestError
from acp.helpers import update_agent_message_text, update_user_message_text
from acp.schema import (
    AgentCapabilities,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

AGENT_NAME = "recording-agent"
AGENT_VERSION = "1.0.0"
MODES = [("ask", "Ask", "Answers questions, changes nothing"), ("code", "Code", "Edits files")]
VERBOSITY = [("low", "Low"), ("high", "High")]
COMMANDS = [("whoami", "Show what the agent received"), ("slow", "Stream for a while")]


def history_dir() -> Path:
    args = sys.argv[1:]
    if "--history" in args:
        d = Path(args[args.index("--history") + 1])
    elif os.environ.get("RECORDING_AGENT_HISTORY"):
        d = Path(os.environ["RECORDING_AGENT_HISTORY"])
    else:
        sys.exit("recording_agent.py: give --history DIR or RECORDING_AGENT_HISTORY")
    d.mkdir(parents=True, exist_ok=True)
    return d


class RecordingAgent:
    def __init__(self, history: Path) -> None:
        self.history = history
        self.conn: Any = None
        self.sessions: dict[str, dict[str, Any]] = {}
        self.received: list[str] = []  # every method received by this process, in order
        self.raw_params: dict[str, Any] = {}  # JSON-RPC id → raw params of session/new|load
        self.prompt_ids: dict[str, Any] = {}  # JSON-RPC id (as JSON) → sessionId of a prompt
        self.cancel_events: dict[str, asyncio.Event] = {}
        self.cancel_requests: list[dict[str, Any]] = []
        self.notes: list[Any] = []

    # --- raw wire observer: sees every incoming message exactly as it arrived -------------
    def observe(self, event: Any) -> None:
        if event.direction.value != "incoming":
            return
        msg = event.message
        method = msg.get("method")
        if method is None:
            return
        self.received.append(method)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method in ("session/new", "session/load") and "id" in msg:
            self.raw_params[json.dumps(msg["id"])] = params
        elif method == "session/prompt" and "id" in msg:
            self.prompt_ids[json.dumps(msg["id"])] = params.get("sessionId")
        elif method == "$/cancel_request":
            sid = self.prompt_ids.get(json.dumps(params.get("requestId")))
            event_ = self.cancel_events.get(sid) if sid else None
            self.cancel_requests.append({"matchedInFlightPrompt": event_ is not None})
            if event_ is not None:
                event_.set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- persistence ------------------------------------------------------------------------
    def _file(self, sid: str) -> Path:
        return self.history / f"{sid}.json"

    def _save(self, sid: str) -> None:
        s = self.sessions[sid]
        data = {k: s[k] for k in ("cwd", "mode", "verbosity", "title", "updates")}
        self._file(sid).write_text(json.dumps(data))

    def _session(self, sid: str) -> dict[str, Any]:
        if sid not in self.sessions:
            raise RequestError(-32002, "Resource not found", {"sessionId": sid})
        return self.sessions[sid]

    def _modes(self, s: dict[str, Any]) -> SessionModeState:
        return SessionModeState(
            current_mode_id=s["mode"],
            available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in MODES],
        )

    def _config(self, s: dict[str, Any]) -> list[SessionConfigOptionSelect]:
        return [
            SessionConfigOptionSelect(
                type="select",
                id="verbosity",
                name="Verbosity",
                current_value=s["verbosity"],
                options=[SessionConfigSelectOption(value=v, name=n) for v, n in VERBOSITY],
            )
        ]

    def _raw_params_for(self, method: str, sid: str | None = None) -> dict[str, Any]:
        # the newest raw params of that method (requests are handled one at a time by clients)
        for params in reversed(list(self.raw_params.values())):
            if method == "session/new" and "sessionId" not in params:
                return params
            if method == "session/load" and params.get("sessionId") == sid:
                return params
        return {}

    async def _send_commands_later(self, sid: str) -> None:
        await asyncio.sleep(0.05)  # after the session/new (or load) response
        await self.conn.session_update(
            session_id=sid,
            update=AvailableCommandsUpdate(
                session_update="available_commands_update",
                available_commands=[AvailableCommand(name=n, description=d) for n, d in COMMANDS],
            ),
        )

    # --- ACP agent methods --------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities=None, client_info=None, **kw):
        self.client_capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=1,
            agent_info=Implementation(name=AGENT_NAME, title="Recording agent", version=AGENT_VERSION),
            auth_methods=[AuthMethodAgent(id="recording-token", name="Recording token", description="no-op")],
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            field_meta={"recording.e2a/agent": {"pid-free": True, "features": ["echo", "fail", "note"]}},
        )

    async def authenticate(self, method_id: str, **kw):
        return {}

    async def new_session(self, cwd: str, additional_directories=None, mcp_servers=None, **kw):
        raw = self._raw_params_for("session/new")
        sid = f"rec-{uuid.uuid4().hex[:12]}"
        self.sessions[sid] = {
            "cwd": cwd,
            "raw": raw,
            "mode": MODES[0][0],
            "verbosity": VERBOSITY[0][0],
            "title": None,
            "updates": [],
        }
        self._save(sid)
        asyncio.get_running_loop().create_task(self._send_commands_later(sid))
        s = self.sessions[sid]
        return NewSessionResponse(session_id=sid, modes=self._modes(s), config_options=self._config(s))

    async def load_session(self, cwd: str, session_id: str, mcp_servers=None, additional_directories=None, **kw):
        f = self._file(session_id)
        if not f.exists():
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        data = json.loads(f.read_text())
        self.sessions[session_id] = {**data, "cwd": cwd, "raw": self._raw_params_for("session/load", session_id)}
        for u in data["updates"]:
            if u["kind"] == "user":
                update = update_user_message_text(u["text"])
            else:
                update = update_agent_message_text(u["text"])
            await self.conn.session_update(session_id=session_id, update=update)
        asyncio.get_running_loop().create_task(self._send_commands_later(session_id))
        s = self.sessions[session_id]
        return LoadSessionResponse(modes=self._modes(s), config_options=self._config(s))

    async def list_sessions(self, cwd=None, cursor=None, **kw):
        sessions = []
        for f in sorted(self.history.glob("*.json")):
            data = json.loads(f.read_text())
            if cwd is None or data["cwd"] == cwd:
                sessions.append(SessionInfo(session_id=f.stem, cwd=data["cwd"], title=data.get("title")))
        return ListSessionsResponse(sessions=sessions)

    async def set_session_mode(self, session_id: str, mode_id: str, **kw):
        s = self._session(session_id)
        if mode_id not in [m[0] for m in MODES]:
            raise RequestError(-32602, "Invalid params", {"modeId": mode_id, "reason": "unknown mode"})
        s["mode"] = mode_id
        self._save(session_id)
        await self.conn.session_update(
            session_id=session_id,
            update=CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id),
        )
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value, **kw):
        s = self._session(session_id)
        if config_id != "verbosity" or value not in [v for v, _ in VERBOSITY]:
            raise RequestError(-32602, "Invalid params", {"configId": config_id, "value": value})
        s["verbosity"] = value
        self._save(session_id)
        await self.conn.session_update(
            session_id=session_id,
            update=ConfigOptionUpdate(session_update="config_option_update", config_options=self._config(s)),
        )
        return SetSessionConfigOptionResponse(config_options=self._config(s))

    async def cancel(self, session_id: str, **kw):
        if session_id in self.cancel_events:
            self.cancel_events[session_id].set()

    async def ext_method(self, method: str, params: dict[str, Any]):
        if method == "recording/echo":
            return params
        if method == "recording/fail":
            raise RequestError(-32042, "recording agent failure", {"asked": params})
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append({"method": f"_{method}", "params": params})

    async def _say(self, sid: str, text: str) -> None:
        await self.conn.session_update(session_id=sid, update=update_agent_message_text(text))

    async def prompt(self, session_id: str, prompt: list[Any], **kw):
        s = self._session(session_id)
        text = "".join(getattr(b, "text", "") for b in prompt).strip()
        s["updates"].append({"kind": "user", "text": text})
        if s["title"] is None:
            s["title"] = text[:40]
        reply: str | None = None
        if text == "whoami":
            raw = s["raw"]
            reply = json.dumps(
                {
                    "cwd": raw.get("cwd"),
                    "mcpServers": raw.get("mcpServers"),
                    "_meta": raw.get("_meta"),
                    "mode": s["mode"],
                    "verbosity": s["verbosity"],
                    "received": self.received,
                    "notes": self.notes,
                    "cancelRequests": self.cancel_requests,
                },
                sort_keys=True,
            )
            await self._say(session_id, reply)
        elif text == "permission":
            resp = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(
                    tool_call_id=f"perm-{uuid.uuid4().hex[:8]}",
                    title="Delete the build directory?",
                    kind="delete",
                    status="pending",
                    raw_input={"path": "build/", "recursive": True},
                ),
                options=[
                    PermissionOption(option_id="yes-once", name="Allow once", kind="allow_once"),
                    PermissionOption(option_id="no-once", name="Reject once", kind="reject_once"),
                ],
            )
            reply = "permission outcome: " + json.dumps(resp.outcome.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True)
            await self._say(session_id, reply)
        elif text.startswith("read "):
            resp = await self.conn.read_text_file(session_id=session_id, path=text[5:].strip(), line=1, limit=100)
            reply = "file content: " + resp.content
            await self._say(session_id, reply)
        elif text == "slow":
            ev = self.cancel_events[session_id] = asyncio.Event()
            try:
                for i in range(25):
                    if ev.is_set():
                        break
                    await self._say(session_id, f"tick {i} ")
                    try:
                        await asyncio.wait_for(ev.wait(), 0.2)
                    except asyncio.TimeoutError:
                        pass
                cancelled = ev.is_set()
            finally:
                self.cancel_events.pop(session_id, None)
            s["updates"].append({"kind": "agent", "text": "(slow turn)"})
            self._save(session_id)
            return PromptResponse(stop_reason="cancelled" if cancelled else "end_turn")
        else:
            reply = f"echo: {text}"
            half = len(reply) // 2
            await self._say(session_id, reply[:half])
            await self._say(session_id, reply[half:])
        s["updates"].append({"kind": "agent", "text": reply})
        self._save(session_id)
        return PromptResponse(stop_reason="end_turn")


class _QuietCancelRequest(logging.Filter):
    # the SDK has no route for $/cancel_request (the observer handles it): don't log it as an error
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.args and "$/cancel_request" in map(str, record.args if isinstance(record.args, tuple) else ()))


async def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger().addFilter(_QuietCancelRequest())
    agent = RecordingAgent(history_dir())
    await acp.run_agent(agent, observers=[agent.observe])


if __name__ == "__main__":
    asyncio.run(main())
