"""The official ACP Python client (`agent-client-protocol`, pinned in acp-agents/requirements.lock)
runs one scenario against an ACP agent command and prints ONE normalized JSON transcript on
stdout (checks go to stderr; exit 1 when one fails). transparent.sh runs it against the agent
directly and through `e2a acp --agent acp:AGENT`: the two transcripts must be identical.

usage: python acp_transparent.py fast-agent|recording -- CMD ARGS...
  ACP_AGENT_STDERR=FILE   append the agent command's stderr to FILE (default: inherited)

The same scenario as acp_transparent.mjs (see there), through the Python SDK: initialize,
session/new, available_commands_update, set_mode, an echoed prompt, agent → client requests
(session/request_permission, fs/read_text_file) answered, a cancel mid-turn, an extension method,
session/list, then the agent command restarted and session/load replaying the history. The
recording variant also compares what the agent received (methods, cwd, mcpServers, `_meta`) with
what this client put on the wire, seen by a stream observer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import (
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SseMcpServer,
    WriteTextFileResponse,
)

if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in ("fast-agent", "recording"):
    sys.exit("usage: python acp_transparent.py fast-agent|recording -- CMD ARGS...")
VARIANT = sys.argv[1]
CMD = sys.argv[3:]
LABEL = f"python/{VARIANT}"
WORKDIR = os.path.realpath(tempfile.mkdtemp(prefix="acp-transparent-"))
FILE = os.path.join(WORKDIR, "notes.txt")
FILE_CONTENT = "line one\nline two: ünïcödé ✓\n"
Path(FILE).write_text(FILE_CONTENT, encoding="utf-8")

failures = 0


def check(ok: bool, what: str) -> None:
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} [{LABEL}] {what}", file=sys.stderr, flush=True)
    if not ok:
        failures += 1


def dump(model: Any) -> Any:
    # what the SDK parsed, in wire names, only the fields that were on the wire
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return model


def error_of(e: Exception) -> dict[str, Any]:
    if isinstance(e, RequestError):
        return {"code": e.code, "message": str(e), "data": e.data}
    return {"code": None, "message": repr(e), "data": None}


class TestClient:
    """The editor side: records session/update and the agent's requests, answers them."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []  # {"sessionId", "update"} in arrival order
        self.agent_requests: list[dict[str, Any]] = []
        self.on_permission = "allow"  # allow | cancel
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.events.append({"sessionId": session_id, "update": dump(update)})

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any):
        self.agent_requests.append(
            {
                "method": "session/request_permission",
                "params": {"sessionId": session_id, "toolCall": dump(tool_call), "options": [dump(o) for o in options]},
            }
        )
        if self.on_permission == "cancel":
            # the editor's cancel: session/cancel, then the pending permission answered "cancelled"
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse.model_validate({"outcome": {"outcome": "cancelled"}})
        option = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse.model_validate({"outcome": {"outcome": "selected", "optionId": option.option_id}})

    async def read_text_file(self, session_id: str, path: str, line=None, limit=None, **kw: Any):
        params = {"sessionId": session_id, "path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        self.agent_requests.append({"method": "fs/read_text_file", "params": params})
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any):
        self.agent_requests.append({"method": "fs/write_text_file", "params": {"sessionId": session_id, "path": path}})
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass


client = TestClient()
transcript: dict[str, Any] = {"client": "agent-client-protocol (Python)", "variant": VARIANT, "steps": []}
outgoing: list[dict[str, Any]] = []  # what this client put on the wire (requests and notifications)


def step(name: str, **data: Any) -> None:
    transcript["steps"].append({"step": name, **data})


def observe(event: Any) -> None:
    if event.direction.value == "outgoing" and "method" in event.message:
        outgoing.append(event.message)


def updates_since(n: int, sid: str) -> list[Any]:
    return [e["update"] for e in client.events[n:] if e["sessionId"] == sid]


def text_of(us: list[Any]) -> str:
    return "".join(
        u["content"]["text"] for u in us if u.get("sessionUpdate") == "agent_message_chunk" and u["content"].get("type") == "text"
    )


async def wait_for(pred, seconds: float = 5.0) -> bool:
    end = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < end:
        if pred():
            return True
        await asyncio.sleep(0.01)
    return pred()


async def prompt(conn: Any, sid: str, text: str, summarize: bool = False, during=None) -> dict[str, Any]:
    n, r0 = len(client.events), len(client.agent_requests)
    running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(text)]))
    if during:
        await during()
    try:
        response = dump(await running)
    except Exception as e:  # noqa: BLE001
        response = {"error": error_of(e)}
    updates = updates_since(n, sid)
    await asyncio.sleep(0.15)
    rec: dict[str, Any] = {
        "text": text,
        "response": response,
        "agentRequests": client.agent_requests[r0:],
        "lateUpdates": updates_since(n, sid)[len(updates) :],
    }
    if summarize:
        kinds: list[str] = []
        for u in updates:
            if u["sessionUpdate"] not in kinds:
                kinds.append(u["sessionUpdate"])
        rec["updateKinds"] = kinds
        rec["streamedBeforeCancel"] = len(text_of(updates)) > 0
    else:
        rec["updates"] = updates
        rec["reply"] = text_of(updates)
    return rec


def has_tick0(n: int, sid: str) -> bool:
    return any(u.get("content", {}).get("text") == "tick 0 " for u in updates_since(n, sid))


class Agent:
    """The agent command, spawned; the editor closes its stdin to stop it."""

    def __init__(self) -> None:
        err = os.environ.get("ACP_AGENT_STDERR")
        self.err = open(err, "a") if err else None  # noqa: SIM115
        self.cm = spawn_agent_process(
            client,
            CMD[0],
            *CMD[1:],
            env=dict(os.environ),
            transport_kwargs={"stderr": self.err},
            observers=[observe],
        )

    async def __aenter__(self):
        self.conn, self.process = await self.cm.__aenter__()
        client.conn = self.conn
        return self

    async def stop(self) -> bool:
        self.process.stdin.write_eof()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
            return True
        except asyncio.TimeoutError:
            return False

    async def __aexit__(self, *exc):
        await self.cm.__aexit__(*exc)
        if self.err:
            self.err.close()


INIT_META = {"e2a.test/init": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
NEW_META = {"e2a.test/session": {"purpose": "transparency", "n": [1, 2.5, None, True]}}


def mcp_servers() -> list[Any]:
    if VARIANT != "recording":
        return []  # fast-agent would try to connect to the MCP servers it is given
    return [
        McpServerStdio(
            name="files",
            command="/usr/bin/env",
            args=["mcp-files", "--root", WORKDIR],
            env=[EnvVariable(name="MCP_TOKEN", value="t0k3n")],
        ),
        HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp", headers=[HttpHeader(name="Authorization", value="Bearer abc")]),
        SseMcpServer(type="sse", name="events", url="http://127.0.0.1:9/sse", headers=[]),
    ]


async def initialize(conn: Any):
    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False),
        client_info=Implementation(name="e2a-transparent-test", title="Transparent relay test", version="1.0.0"),
        **INIT_META,
    )


async def scenario() -> None:
    prompts: list[str] = []
    async with Agent() as agent:
        conn = agent.conn
        init = dump(await initialize(conn))
        step("initialize", result=init)
        check(init.get("protocolVersion") == 1, f"initialize → protocolVersion {init.get('protocolVersion')}")
        check(init.get("agentCapabilities", {}).get("loadSession") is True, "initialize declares loadSession")
        if VARIANT == "recording":
            check(init.get("agentInfo", {}).get("name") == "recording-agent", f"agentInfo {init.get('agentInfo')}")
            check(len(init.get("authMethods", [])) == 1, "one authMethod")
            check(init["agentCapabilities"].get("mcpCapabilities", {}).get("http") is True, "mcpCapabilities.http")
            check("recording.e2a/agent" in (init.get("_meta") or {}), "the agent's _meta arrives")
        else:
            check(init.get("agentInfo", {}).get("name") == "fast-agent-acp", f"agentInfo {init.get('agentInfo')}")

        n0 = len(client.events)
        created = dump(await conn.new_session(cwd=WORKDIR, mcp_servers=mcp_servers(), **NEW_META))
        sid = created["sessionId"]
        modes = created.get("modes") or {}
        step("session/new", result=created)
        check(isinstance(sid, str) and len(sid) > 0, "session/new → a session id")
        available = [m["id"] for m in modes.get("availableModes", [])]
        check(modes.get("currentModeId") in available, "session/new returns modes")
        if VARIANT == "recording":
            check(len(available) == 2 and created.get("configOptions", [{}])[0].get("id") == "verbosity", "two modes and a config option")

        def has_commands() -> bool:
            return any(u["sessionUpdate"] == "available_commands_update" for u in updates_since(n0, sid))

        check(await wait_for(has_commands), "available_commands_update after session/new")
        commands = [u for u in updates_since(n0, sid) if u["sessionUpdate"] == "available_commands_update"]
        step("available_commands", updates=commands)
        names = [c["name"] for c in (commands[0]["availableCommands"] if commands else [])]
        check(len(names) > 0, f"available commands: {', '.join(names)}")

        target = next((m for m in available if m != modes.get("currentModeId")), modes.get("currentModeId"))
        n = len(client.events)
        set_mode = dump(await conn.set_session_mode(session_id=sid, mode_id=target))
        await asyncio.sleep(0.1)
        mode_updates = updates_since(n, sid)
        step("session/set_mode", modeId=target, result=set_mode, updates=mode_updates)
        check(set_mode is not None, f"session/set_mode {target} → {set_mode}")
        if VARIANT == "recording":
            check(
                any(u["sessionUpdate"] == "current_mode_update" and u["currentModeId"] == target for u in mode_updates),
                "current_mode_update",
            )
        try:
            await conn.set_session_mode(session_id=sid, mode_id="no-such-mode")
            check(False, "session/set_mode to an unknown mode is an error")
        except RequestError as e:
            step("session/set_mode unknown", error=error_of(e))
            check(e.code == -32602, f"session/set_mode to an unknown mode → {e.code} {e}")

        if VARIANT == "recording":
            n = len(client.events)
            cfg = dump(await conn.set_config_option(config_id="verbosity", session_id=sid, value="high"))
            await asyncio.sleep(0.1)
            cfg_updates = updates_since(n, sid)
            step("session/set_config_option", result=cfg, updates=cfg_updates)
            check(cfg.get("configOptions", [{}])[0].get("currentValue") == "high", "session/set_config_option → currentValue high")
            check(any(u["sessionUpdate"] == "config_option_update" for u in cfg_updates), "config_option_update")

        hello = 'hello through the relay: ✓ "quoted" \\ back'
        prompts.append(hello)
        r = await prompt(conn, sid, hello)
        step("prompt echo", **r)
        check(r["response"].get("stopReason") == "end_turn", f"echo → {r['response']}")
        check(r["reply"] == (f"echo: {hello}" if VARIANT == "recording" else hello), f"echo reply {r['reply']!r}")
        check(r["lateUpdates"] == [], "no session/update after the prompt's response")

        if VARIANT == "recording":
            ext_params = {"nested": {"list": [1, "two", {"three": None}], "unicode": "é✓"}, "n": -0.5}
            echo = await conn.ext_method("recording/echo", ext_params)
            step("_recording/echo", result=echo)
            check(echo == ext_params, f"_recording/echo returns its params ({echo})")
            try:
                await conn.ext_method("recording/fail", {"why": "test"})
                check(False, "_recording/fail is an error")
            except RequestError as e:
                step("_recording/fail", error=error_of(e))
                check(e.code == -32042 and e.data == {"asked": {"why": "test"}}, f"_recording/fail → {e.code} {e.data}")
            await conn.ext_notification("recording/note", {"note": "a notification the agent records", "k": [1, 2]})

            prompts.append("permission")
            r = await prompt(conn, sid, "permission")
            step("prompt permission", **r)
            perm = next((q for q in r["agentRequests"] if q["method"] == "session/request_permission"), None)
            check(
                perm is not None
                and perm["params"]["toolCall"].get("title") == "Delete the build directory?"
                and len(perm["params"]["options"]) == 2,
                "the permission request reached the client",
            )
            check('"optionId": "yes-once"' in r["reply"], f"the client's answer reached the agent ({r['reply']})")

            prompts.append(f"read {FILE}")
            r = await prompt(conn, sid, f"read {FILE}")
            step("prompt read", **r)
            read = next((q for q in r["agentRequests"] if q["method"] == "fs/read_text_file"), None)
            check(
                read is not None and read["params"]["path"] == FILE and read["params"].get("line") == 1 and read["params"].get("limit") == 100,
                "fs/read_text_file reached the client",
            )
            check(r["reply"] == f"file content: {FILE_CONTENT}", "the file content reached the agent")

            # cancel mid-turn: session/cancel
            prompts.append("slow")
            n = len(client.events)

            async def send_cancel() -> None:
                await wait_for(lambda: has_tick0(n, sid))
                await conn.cancel(session_id=sid)

            r = await prompt(conn, sid, "slow", summarize=True, during=send_cancel)
            step("prompt slow + session/cancel", **r)
            check(r["response"].get("stopReason") == "cancelled" and r["streamedBeforeCancel"], f"session/cancel mid-turn → {r['response']}")

            # cancel mid-turn: $/cancel_request naming the prompt's JSON-RPC id (the Python SDK has
            # no API for it: the id comes from the stream observer, the notification goes out on
            # the SDK's connection)
            prompts.append("slow")
            n = len(client.events)

            async def send_cancel_request() -> None:
                await wait_for(lambda: has_tick0(n, sid))
                prompt_id = [m for m in outgoing if m["method"] == "session/prompt"][-1]["id"]
                await conn._conn.send_notification("$/cancel_request", {"requestId": prompt_id})

            r = await prompt(conn, sid, "slow", summarize=True, during=send_cancel_request)
            step("prompt slow + $/cancel_request", **r)
            check(r["response"].get("stopReason") == "cancelled" and r["streamedBeforeCancel"], f"$/cancel_request mid-turn → {r['response']}")

            prompts.append("whoami")
            r = await prompt(conn, sid, "whoami")
            try:
                who = json.loads(r["reply"])
            except ValueError:
                who = {}
            step("prompt whoami", response=r["response"], agentReceived=who, lateUpdates=r["lateUpdates"])
            sent_new = next(m["params"] for m in outgoing if m["method"] == "session/new")
            check(who.get("cwd") == WORKDIR, f"the agent got cwd {who.get('cwd')}")
            check(who.get("mcpServers") == sent_new["mcpServers"], f"the agent got the mcpServers unchanged ({who.get('mcpServers')})")
            check(who.get("_meta") == sent_new.get("_meta") == NEW_META, "the agent got session/new's _meta unchanged")
            sent_methods = [m["method"] for m in outgoing]
            check(who.get("received") == sent_methods, f"the agent received exactly the methods sent ({who.get('received')} vs {sent_methods})")
            check(
                who.get("notes") == [{"method": "_recording/note", "params": {"note": "a notification the agent records", "k": [1, 2]}}],
                "the extension notification reached the agent",
            )
            check(who.get("cancelRequests") == [{"matchedInFlightPrompt": True}], f"$/cancel_request named the in-flight prompt ({who.get('cancelRequests')})")
            check(who.get("mode") == target and who.get("verbosity") == "high", "set_mode and set_config_option reached the agent")
        else:
            call = "***CALL_TOOL read_text_file " + json.dumps({"path": FILE}, separators=(",", ":"))
            prompts.append(call)
            r = await prompt(conn, sid, call)
            step("prompt tool read_text_file", **r)
            perm = next((q for q in r["agentRequests"] if q["method"] == "session/request_permission"), None)
            read = next((q for q in r["agentRequests"] if q["method"] == "fs/read_text_file"), None)
            check(perm is not None and perm["params"]["toolCall"].get("rawInput", {}).get("path") == FILE, "fast-agent's permission request reached the client")
            check(read is not None and read["params"]["path"] == FILE, "fast-agent's fs/read_text_file reached the client")
            check(r["reply"] == FILE_CONTENT and r["response"].get("stopReason") == "end_turn", f"the file content came back ({r['reply']!r})")
            check(any(u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed" for u in r["updates"]), "tool_call_update completed")

            prompts.append(call)
            client.on_permission = "cancel"
            r = await prompt(conn, sid, call)
            client.on_permission = "allow"
            step("prompt tool + session/cancel", **r)
            check(
                len(r["agentRequests"]) == 1 and r["agentRequests"][0]["method"] == "session/request_permission",
                "the cancelled turn asked permission only",
            )
            check(r["response"].get("stopReason") == "cancelled", f"session/cancel mid-turn → {r['response']}")

            try:
                await conn.ext_method("e2a/unknown", {"x": 1})
                check(False, "an unknown extension method is an error")
            except RequestError as e:
                step("_e2a/unknown", error=error_of(e))
                check(e.code == -32601, f"an unknown extension method → {e.code} {e}")

        listed = dump(await conn.list_sessions())
        step("session/list", result=listed)
        check(any(s["sessionId"] == sid and s["cwd"] == WORKDIR for s in listed.get("sessions", [])), "session/list lists the session")

        exited = await agent.stop()
        step("stdin closed", agentExited=exited)
        check(exited, "the agent command exits when its stdin closes")

    # ---- the agent command restarted, session/load replays the history ---------------------
    async with Agent() as agent:
        conn = agent.conn
        init = dump(await initialize(conn))
        check(init.get("agentCapabilities", {}).get("loadSession") is True, "initialize after restart")
        n = len(client.events)
        loaded = dump(await conn.load_session(cwd=WORKDIR, session_id=sid, mcp_servers=mcp_servers()))
        replay = updates_since(n, sid)
        await wait_for(lambda: any(u["sessionUpdate"] == "available_commands_update" for u in updates_since(n, sid)), 2)
        await asyncio.sleep(0.15)
        step("session/load after restart", result=loaded, replay=replay, updatesAfterResponse=updates_since(n, sid)[len(replay) :])
        users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
        # fast-agent also replays the note it put in the history for the interrupted tool call
        replayed = users if VARIANT == "recording" else [t for t in users if t in prompts]
        check(replayed == prompts, f"session/load replays the prompts ({users})")
        check((loaded or {}).get("modes", {}).get("currentModeId") is not None, f"session/load → modes {(loaded or {}).get('modes')}")
        # fast-agent answers the first prompt after an interrupted tool call with its note about it
        for text in ("after the restart", "once more after the restart"):
            r = await prompt(conn, sid, text)
            step("prompt after load", **r)
            check(r["response"].get("stopReason") == "end_turn", f"a prompt after session/load → {r['response']} ({r['reply']!r})")
            if VARIANT == "recording" or text.startswith("once"):
                check(r["reply"].endswith(text), f"a prompt after session/load is answered ({r['reply']!r})")
        step("stdin closed again", agentExited=await agent.stop())


def normalize(t: Any) -> Any:
    ids: dict[str, str] = {}
    kinds = {"sessionId": "session", "toolCallId": "tool-call"}

    def collect(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                collect(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if k in kinds and isinstance(x, str) and x not in ids:
                    count = sum(1 for p in ids.values() if p.startswith(f"<{kinds[k]}-"))
                    ids[x] = f"<{kinds[k]}-{count + 1}>"
                collect(x)

    collect(t)
    subs = sorted([(WORKDIR, "<workdir>"), *ids.items()], key=lambda s: -len(s[0]))

    def norm(v: Any, key: str | None = None) -> Any:
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x, k) for k, x in v.items()}
        if isinstance(v, str):
            if key == "updatedAt":
                return "<time>"
            for a, b in subs:
                v = v.replace(a, b)
        return v

    return norm(t)


async def main() -> int:
    try:
        await asyncio.wait_for(scenario(), 90)
    except Exception as e:  # noqa: BLE001
        import traceback

        check(False, f"client error: {''.join(traceback.format_exception(e))}")
    print(json.dumps(normalize(transcript), indent=2, sort_keys=True, ensure_ascii=False))
    import shutil

    shutil.rmtree(WORKDIR, ignore_errors=True)
    print(f"[{LABEL}] all checks passed" if failures == 0 else f"[{LABEL}] {failures} check(s) failed", file=sys.stderr)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
