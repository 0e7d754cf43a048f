"""The cross-protocol matrix: every client protocol against every kind of agent, through one
`e2a serve --config` gateway (and `e2a acp --config` for ACP).

Clients (official where the protocol has one): E2A JSON and SSE (httpx), A2A JSON-RPC, HTTP+JSON
and gRPC streaming and JSON-RPC unary (a2a-sdk), AG-UI (@ag-ui/client) and ACP
(@agentclientprotocol/sdk), the last two through ../clients/matrix_client.mjs.
Agents: echo; the script agent's scenarios (script.json: text, a tool call, artifacts of every
kind, a direct reply, a report, a question, two questions at once, an approval, a refusal, a
failure); `a2a:` to
fast-agent's A2A server (passthrough) and to an a2a-sdk server answering with a Message and with
a named artifact (sdk_agent.py), and delegating to one with callbacks (`delegate = "callback"`:
the a2a-sdk server's own push sender posts the answer to the gateway's callback route; over ACP,
`e2a acp` serves no callback route and streams), and to a2a-sdk servers of A2A 0.3 only (the SDK's
0.3 layer: JSON-RPC behind 0.3's own card, HTTP+JSON behind a `0.3.0` interface, and delegated
with callbacks); `acp:` to fast-agent; a group of the script
agent and echo (`group = {members}`: each member's text in an artifact of its own).

Each cell reads what its client was shown into a normalized transcript (transcript.py) and
compares it with the same case's E2A SSE transcript, which must itself hold the case's expected
words; a cell that lost anything fails. The table goes to stdout; exit 1 when a cell failed.

usage: matrix.py E2A_BIN WORK_DIR --fast-agent PATH --agent-python PATH [--only AGENT]
"""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest

from transcript import compare, from_a2a, from_e2a, squash

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_CLIENT = os.path.join(HERE, "..", "clients", "matrix_client.mjs")
SCRIPT = os.path.join(HERE, "script.json")

# (agent, prompt, words the reference answer must hold)
CASES = [
    ("echo", "hello matrix", ["hello matrix"]),
    ("script", "matrix text", ["Plain words, streamed in pieces."]),
    ("script", "matrix tool", ["It is 4 °C in Oslo.", "get_weather"]),
    ("script", "matrix artifacts", ["notes.txt", "alpha beta gamma delta", "hello.bin", "report.pdf",
                                    "https://example.com/report.pdf", "rows"]),
    ("script", "matrix reply", ["A direct reply to: matrix reply"]),
    ("script", "matrix report", ["summary.md", "all green", "figures", "The report is ready."]),
    ("script", "matrix question", ["Let me book that.", "For how many people?"]),
    ("script", "matrix two questions", ["Planning.", "How many travellers?", "Which city?"]),
    ("script", "matrix approval", ["Ready to deploy.", "Deploy to production?"]),
    ("script", "matrix refusal", ["I will not do that"]),
    ("script", "matrix failure", ["Starting.", "the tool broke"]),
    ("fast-a2a", "hello fast agent", ["hello fast agent"]),
    ("sdk-message", "hello sdk", ["sdk says: hello sdk"]),
    ("sdk-artifact", "hello sdk", ["sdk artifact: hello sdk"]),
    ("sdk-delegated", "hello delegate", ["sdk artifact: hello delegate"]),
    ("sdk-v03", "hello old sdk", ["sdk artifact: hello old sdk"]),
    ("sdk-v03-rest", "hello old rest", ["sdk artifact: hello old rest"]),
    ("sdk-v03-delegated", "hello old delegate", ["sdk artifact: hello old delegate"]),
    ("team", "matrix text", ["Plain words, streamed in pieces.", "member:script", "member:echo"]),
    ("fast-acp", "hello fast agent", ["hello fast agent"]),
]

CLIENTS = ["e2a-json", "e2a-sse", "a2a-jsonrpc", "a2a-rest", "a2a-grpc", "a2a-unary", "agui", "acp"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, proc, what, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before it was ready")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{what} was not ready at {url} within {seconds} s")


class Servers:
    """The agents and the gateway, on loopback ports, stopped at exit."""

    def __init__(self, args):
        self.args, self.procs = args, []
        self.cwd = os.path.join(args.work, "cwd")
        os.makedirs(self.cwd, exist_ok=True)

    def start(self, name, cmd, ready):
        log = open(os.path.join(self.args.work, f"{name}.log"), "w")
        # from an empty directory: fast-agent reads a fastagent.config.yaml from its working directory
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.cwd)
        self.procs.append(proc)
        wait_for(ready, proc, name)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    def fast_agent(self, *rest):
        home = os.path.join(self.args.work, "fast-agent-home")
        os.makedirs(home, exist_ok=True)
        return [self.args.fast_agent, "--no-update-check", "--home", home, *rest]

    def up(self):
        """Starts the third-party agents and the gateway; returns the gateway's config file."""
        agents = {"echo": "echo", "script": f"script:{SCRIPT}"}
        port = free_port()
        self.start("fast-agent-a2a", [*self.fast_agent("serve", "--transport", "a2a", "--port", str(port),
                                                        "--model", "passthrough")],
                   f"http://127.0.0.1:{port}/.well-known/agent-card.json")
        agents["fast-a2a"] = f"a2a:http://127.0.0.1:{port}"
        for mode in ("message", "artifact"):
            port = free_port()
            self.start(f"sdk-{mode}", [self.args.agent_python, os.path.join(HERE, "sdk_agent.py"),
                                       "--port", str(port), "--mode", mode],
                       f"http://127.0.0.1:{port}/.well-known/agent-card.json")
            agents[f"sdk-{mode}"] = f"a2a:http://127.0.0.1:{port}"
        # delegated with callbacks: the answer, a second later, comes by the SDK's push sender
        port = free_port()
        self.start("sdk-delegated", [self.args.agent_python, os.path.join(HERE, "sdk_agent.py"),
                                     "--port", str(port), "--mode", "artifact", "--push", "--delay", "1"],
                   f"http://127.0.0.1:{port}/.well-known/agent-card.json")
        agents["sdk-delegated"] = f"a2a:http://127.0.0.1:{port}"
        # agents of A2A 0.3 (the SDK's 0.3 layer alone): the gateway speaks 0.3 to them, as the card says
        for name, rest in (("sdk-v03", ["--legacy", "jsonrpc"]), ("sdk-v03-rest", ["--legacy", "rest"]),
                           ("sdk-v03-delegated", ["--legacy", "jsonrpc", "--push", "--delay", "1"])):
            port = free_port()
            self.start(name, [self.args.agent_python, os.path.join(HERE, "sdk_agent.py"), "--port", str(port),
                              "--mode", "artifact", *rest],
                       f"http://127.0.0.1:{port}/.well-known/agent-card.json")
            agents[name] = f"a2a:http://127.0.0.1:{port}"
        acp = " ".join(self.fast_agent("acp", "--model", "passthrough"))
        agents["fast-acp"] = f"acp:{acp}"
        self.port = free_port()
        config = os.path.join(self.args.work, "matrix.toml")
        with open(config, "w") as f:
            f.write(f'[server]\nbind = "127.0.0.1:{self.port}"\n[a2a]\nenabled = true\n[agui]\nenabled = true\n'
                    f'[store]\nurl = "memory"\n[delegation]\ncallback_base_url = "http://127.0.0.1:{self.port}"\n')
            for name, spec in agents.items():
                f.write(f"[agents.{name}]\nagent = {json.dumps(spec)}\n")
                if name in ("sdk-delegated", "sdk-v03-delegated"):
                    f.write('delegate = "callback"\n')
            # a group: the script agent and echo answer together, each in its own artifact
            f.write('[agents.team]\ngroup = {members = ["script", "echo"]}\n')
        self.start("gateway", [self.args.e2a, "serve", "--config", config],
                   f"http://127.0.0.1:{self.port}/healthz")
        self.config = config
        return f"http://127.0.0.1:{self.port}"


def grpc_channel(target):
    import grpc

    return grpc.aio.insecure_channel(target)


async def a2a_client(base, agent, prompt, binding, streaming):
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding],
                          grpc_channel_factory=grpc_channel if binding == "GRPC" else None)
    client = await create_client(f"{base}/a2a/agents/{agent}", client_config=config)
    message = Message(message_id=f"matrix-{uuid.uuid4()}", role=Role.ROLE_USER, parts=[Part(text=prompt)])
    events = []
    async for ev in client.send_message(SendMessageRequest(message=message)):
        events.append(MessageToDict(ev))
    return events


def e2a_request(prompt):
    return {"method": "chat.send", "params": {"content": prompt}}


async def run_cell(servers, base, client, agent, prompt):
    """One client's transcript of one case."""
    if client in ("e2a-json", "e2a-sse"):
        url = f"{base}/agents/{agent}/v1/e2a/requests"
        accept = "application/json" if client == "e2a-json" else "text/event-stream"
        async with httpx.AsyncClient(timeout=120) as http:
            r = await http.post(url, json=e2a_request(prompt), headers={"Accept": accept})
        r.raise_for_status()
        if client == "e2a-json":
            return from_e2a([r.json()], client)
        frames = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
        return from_e2a(frames, client)
    if client.startswith("a2a-"):
        binding = {"a2a-jsonrpc": "JSONRPC", "a2a-rest": "HTTP+JSON", "a2a-grpc": "GRPC",
                   "a2a-unary": "JSONRPC"}[client]
        events = await asyncio.wait_for(a2a_client(base, agent, prompt, binding, client != "a2a-unary"), 120)
        return from_a2a(events, client)
    if client == "agui":
        cmd = ["node", NODE_CLIENT, "agui", prompt, f"{base}/api/agents/{agent}/agui"]
    else:
        cmd = ["node", NODE_CLIENT, "acp", prompt, "--", servers.args.e2a, "acp", "--config", servers.config,
               "--agent", agent]
    # `e2a acp` keeps its sessions in the user's state directory: a throwaway one
    env = {**os.environ, "XDG_STATE_HOME": os.path.join(servers.args.work, "state")}
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, cwd=servers.cwd, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 150)
    if proc.returncode != 0:
        raise RuntimeError(f"{client} client exited {proc.returncode}: {err.decode()[-600:]}")
    t = json.loads(out.decode().strip().splitlines()[-1])
    t.setdefault("segments", [])
    return t


def brief(t):
    return {k: t.get(k) for k in ("text", "tools", "artifacts", "asked", "question", "final", "error")}


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("e2a")
    ap.add_argument("work")
    ap.add_argument("--fast-agent", required=True)
    ap.add_argument("--agent-python", required=True)
    ap.add_argument("--only", action="append", help="run only the cases of these agents")
    args = ap.parse_args()
    servers = Servers(args)
    started = time.monotonic()
    try:
        base = servers.up()
        print(f"servers up in {time.monotonic() - started:.1f} s; gateway at {base}", flush=True)
        rows, failures = [], []
        for agent, prompt, expected in CASES:
            if args.only and agent not in args.only:
                continue
            row = {}
            try:
                ref = await run_cell(servers, base, "e2a-sse", agent, prompt)
            except Exception as e:  # noqa: BLE001 - a reference that cannot be read fails its row
                ref, row["e2a-sse"] = None, f"ERROR {e}"
            if ref is not None:
                corpus = squash(" ".join([ref["text"], ref["question"] or "", ref["error"] or ""]
                                         + [f"{a['name']} {a['text']}" for a in ref["artifacts"]]
                                         + [x["name"] or "" for x in ref["tools"]]))
                missing = [w for w in expected if squash(w) not in corpus]
                if missing or not ref["final"]:
                    failures.append((agent, prompt, "e2a-sse (reference)", [f"missing {missing}"], brief(ref)))
                    row["e2a-sse"] = "LOST"
            for client in CLIENTS:
                if client in row:
                    continue
                if ref is None:
                    row[client] = "-"
                    continue
                try:
                    got = ref if client == "e2a-sse" else await run_cell(servers, base, client, agent, prompt)
                    lost = compare(ref, got)
                except Exception as e:  # noqa: BLE001 - a client that fails is a failed cell
                    got, lost = {}, [f"client error: {type(e).__name__}: {e}"]
                row[client] = "ok" if not lost else "LOST"
                if lost:
                    failures.append((agent, prompt, client, lost, brief(got)))
            rows.append((agent, prompt, row))
            print(f"  {agent:>12} | {prompt:<18} | " + " ".join(f"{c}={row[c]}" for c in CLIENTS), flush=True)
    finally:
        servers.stop()

    width = max(len(c) for c in CLIENTS)
    print()
    print(f"{'agent':>12}  {'prompt':<18}  " + "  ".join(c.ljust(width) for c in CLIENTS))
    for agent, prompt, row in rows:
        print(f"{agent:>12}  {prompt:<18}  " + "  ".join(row[c].ljust(width) for c in CLIENTS))
    cells = sum(len(r) for _, _, r in rows)
    bad = sum(1 for _, _, r in rows for v in r.values() if v != "ok")
    for agent, prompt, client, lost, got in failures:
        print(f"\nFAIL {client} × {agent} {prompt!r}: lost {lost}\n     shown: {json.dumps(got, ensure_ascii=False)[:1500]}")
    print(f"\nmatrix: {cells - bad} of {cells} cells ok ({time.monotonic() - started:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
