// Cross-protocol matrix client: runs ONE prompt against ONE agent with an official SDK
// (@agentclientprotocol/sdk for ACP, @ag-ui/client for AG-UI) and prints ONE normalized
// transcript as a single JSON line on stdout (diagnostics go to stderr):
//   {client, text, reasoning, tools:[{id,name,result}], artifacts:[{name,text}], asked,
//    question, final: completed|paused|refused|failed|canceled, stop, error, raw:[…]}
//
// usage: node matrix_client.mjs acp PROMPT -- CMD ARGS…   (spawns the ACP agent CMD on stdio)
//        node matrix_client.mjs agui PROMPT URL            (POSTs one run to an AG-UI endpoint)
// Exit 0 when the session ran (an agent failure or refusal is a transcript too), 1 on a
// client/protocol error or timeout (MATRIX_TIMEOUT_MS, default 60000).
// ACP: a permission request is rejected (reject_once, else reject_always, else cancelled); an
// elicitation/create form is accepted with every string field "4" (number fields 4). asked/question record the
// first request of the turn (a later one is logged on stderr).
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";

// stdout carries the transcript only: whatever an SDK logs goes to stderr
const out = (s) => process.stdout.write(s + "\n");
for (const k of ["log", "info", "debug"]) console[k] = (...a) => console.error(...a);

const [mode, prompt] = process.argv.slice(2);
const timeoutMs = Number(process.env.MATRIX_TIMEOUT_MS ?? 60000);
const t = { client: mode, text: "", reasoning: "", tools: [], artifacts: [], asked: null, question: null,
  final: null, stop: null, error: null, raw: [] };
let cleanup = () => {};
const die = (why) => {
  console.error(`matrix_client: ${why}`);
  cleanup();
  process.exit(1);
};
const timer = setTimeout(() => die(`timed out after ${timeoutMs} ms`), timeoutMs);
const finish = () => {
  clearTimeout(timer);
  cleanup();
  out(JSON.stringify(t));
  process.exit(0);
};
const ask = (kind, question) => {
  if (t.asked === null) [t.asked, t.question] = [kind, question];
  else console.error(`matrix_client: also asked ${kind}: ${question}`);
};
const tool = (id, name) => {
  let x = t.tools.find((x) => x.id === id);
  if (!x) t.tools.push((x = { id, name: name ?? null, result: false }));
  if (name && !x.name) x.name = name;
  return x;
};

// ---------------------------------------------------------------- ACP
// a content block as the words a user reads: text, else its uri / embedded text
const blockText = (b) => {
  if (!b) return "";
  if (b.type === "text") return b.text ?? "";
  if (b.type === "resource_link") return b.uri ?? "";
  if (b.type === "resource") return b.resource?.text ?? b.resource?.uri ?? "";
  return b.uri ?? `[${b.type}${b.mimeType ? ` ${b.mimeType}` : ""}]`; // image, audio
};
const toolContentText = (content) =>
  (content ?? []).map((c) => (c.type === "content" ? blockText(c.content) : c.path ?? c.terminalId ?? "")).join("\n");

async function runAcp() {
  const acp = await import("@agentclientprotocol/sdk");
  const sep = process.argv.indexOf("--");
  const [cmd, ...args] = sep < 0 ? [] : process.argv.slice(sep + 1);
  if (!prompt || !cmd) die("usage: node matrix_client.mjs acp PROMPT -- CMD ARGS…");
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
  let done = false;
  cleanup = () => child.exitCode === null && child.kill();
  child.on("error", (e) => die(`cannot start ${cmd}: ${e.message}`));
  child.on("exit", (code, sig) => done || die(`the agent exited early (code ${code}, signal ${sig})`));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

  const app = acp
    .client({ name: "e2a-matrix-client" })
    .onNotification(acp.methods.client.session.update, (cx) => {
      const u = cx.params.update;
      t.raw.push(u);
      switch (u.sessionUpdate) {
        case "agent_message_chunk": t.text += blockText(u.content); break;
        case "agent_thought_chunk": t.reasoning += blockText(u.content); break;
        case "tool_call":
        case "tool_call_update": {
          const x = tool(u.toolCallId, u.title);
          if (["completed", "failed"].includes(u.status) || (u.sessionUpdate === "tool_call_update" && u.content?.length)) x.result = true;
          break;
        }
      }
    })
    .onRequest(acp.methods.client.session.requestPermission, (cx) => {
      const { toolCall, options } = cx.params;
      ask("approval", toolCall?.title || toolContentText(toolCall?.content) || null);
      const o = options.find((o) => o.kind === "reject_once") ?? options.find((o) => o.kind === "reject_always");
      return { outcome: o ? { outcome: "selected", optionId: o.optionId } : { outcome: "cancelled" } };
    })
    .onRequest(acp.methods.client.elicitation.create, (cx) => {
      const p = cx.params;
      ask("input", p.message ?? null);
      const content = {};
      for (const [k, s] of Object.entries(p.requestedSchema?.properties ?? {})) {
        if (s?.type === "string") content[k] = "4";
        else if (s?.type === "number" || s?.type === "integer") content[k] = 4;
      }
      return { action: "accept", content };
    });

  await app.connectWith(stream, async (cx) => {
    await cx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, elicitation: { form: {} } },
      clientInfo: { name: "e2a-matrix-client", version: "1.0.0" },
    });
    const { sessionId } = await cx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    try {
      const r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: prompt }] });
      t.stop = r.stopReason ?? null;
      t.final = { end_turn: "completed", refusal: "refused", cancelled: "canceled" }[r.stopReason] ?? "failed";
      if (t.final === "failed") t.error = `stopReason ${r.stopReason}`;
    } catch (e) {
      // a JSON-RPC error answering session/prompt: the agent failed (not a client error)
      if (typeof e?.code !== "number") throw e;
      t.final = "failed";
      t.stop = `error ${e.code}`;
      t.error = e.message ?? String(e);
    }
    // let updates sent just before the prompt's answer be handled
    await new Promise((r) => setTimeout(r, 50));
    done = true;
  });
}

// ---------------------------------------------------------------- AG-UI
// an artifact's text: text parts joined, data parts as JSON, file parts as their url (or
// their inline base64 bytes, which chunks of one artifact append to)
const partText = (p) => {
  if (p == null) return "";
  if (typeof p === "string") return p;
  if (typeof p.text === "string") return p.text;
  if (p.data !== undefined) return JSON.stringify(p.data);
  const f = p.file ?? p;
  return f.url ?? f.uri ?? f.raw ?? f.bytes ?? "";
};
function artifact(v) {
  const a = v?.artifact ?? v ?? {};
  const id = a.artifactId ?? a.artifact_id ?? a.id ?? a.name ?? `artifact-${t.artifacts.length}`;
  const name = a.name ?? v?.name ?? id;
  const parts = a.parts ?? v?.parts ?? (v?.text !== undefined || v?.data !== undefined ? [v] : []);
  const text = parts.map(partText).join("");
  let x = t.artifacts.find((x) => x._id === id);
  const append = a.append ?? v?.append;
  if (x && append !== false) x.text += text;
  else if (x) x.text = text;
  else t.artifacts.push({ _id: id, name, text });
}

async function runAgui() {
  const { HttpAgent } = await import("@ag-ui/client");
  const url = process.argv[4];
  if (!prompt || !url) die("usage: node matrix_client.mjs agui PROMPT URL");
  const agent = new HttpAgent({ url, threadId: `matrix-${randomUUID()}` });
  agent.messages.push({ id: `u-${randomUUID()}`, role: "user", content: prompt });
  let failure = null;
  const onEvent = ({ event: e }) => {
    t.raw.push(e);
    switch (e.type) {
      case "TEXT_MESSAGE_CONTENT": case "TEXT_MESSAGE_CHUNK": t.text += e.delta ?? ""; break;
      case "REASONING_MESSAGE_CONTENT": case "REASONING_MESSAGE_CHUNK": case "THINKING_TEXT_MESSAGE_CONTENT":
        t.reasoning += e.delta ?? ""; break;
      case "TOOL_CALL_START": tool(e.toolCallId, e.toolCallName); break;
      case "TOOL_CALL_RESULT": tool(e.toolCallId).result = true; break;
      case "CUSTOM": if (e.name === "artifact") artifact(e.value); break;
      case "RUN_FINISHED": {
        const asked = e.outcome?.type === "interrupt" ? e.outcome.interrupts ?? [] : [];
        if (asked.length > 0) {
          // every interrupt of the run: an approval among them asks for approval
          t.final = "paused";
          t.asked = asked.every((i) => i.reason === "input") ? "input" : "approval";
          t.question = asked.map((i) => i.message ?? i.prompt ?? "").join("\n");
        } else t.final = e.outcome?.type === "cancelled" ? "canceled" : "completed";
        t.stop = `RUN_FINISHED${e.outcome?.type ? ` ${e.outcome.type}` : ""}`;
        break;
      }
      case "RUN_ERROR": {
        const code = String(e.code ?? "");
        t.final = /INVALID_REQUEST|REFUS|REJECT/i.test(code) ? "refused" : /CANCEL/i.test(code) ? "canceled" : "failed";
        t.stop = `RUN_ERROR${code ? ` ${code}` : ""}`;
        t.error = e.message ?? null;
        break;
      }
    }
  };
  try {
    await agent.runAgent({}, { onEvent, onRunFailed: ({ error }) => { failure = error; } });
  } catch (e) {
    failure = failure ?? e;
  }
  // a run that ended (RUN_FINISHED / RUN_ERROR) is a transcript; anything else a client error
  if (t.final === null) die(`the run did not end: ${failure?.stack ?? failure ?? "no terminal event"}`);
  if (failure && !t.stop?.startsWith("RUN_ERROR")) console.error(`matrix_client: after the run: ${failure}`);
}

try {
  if (mode === "acp") await runAcp();
  else if (mode === "agui") await runAgui();
  else die("usage: node matrix_client.mjs acp PROMPT -- CMD ARGS… | agui PROMPT URL");
} catch (e) {
  die(`client error: ${e?.stack ?? e}`);
}
if (t.final === null) die("the session ended without a result");
t.artifacts = t.artifacts.map(({ name, text }) => ({ name, text }));
finish();
