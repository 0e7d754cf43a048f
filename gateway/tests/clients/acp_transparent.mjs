// The official ACP TypeScript client (@agentclientprotocol/sdk, pinned in package-lock.json)
// runs one scenario against an ACP agent command and prints ONE normalized JSON transcript on
// stdout (checks go to stderr; exit 1 when one fails). transparent.sh runs it against the agent
// directly and through `e2a acp --agent acp:AGENT`: the two transcripts must be identical.
//
// usage: node acp_transparent.mjs fast-agent|recording -- CMD ARGS…
//   ACP_AGENT_STDERR=FILE   append the agent command's stderr to FILE (default: inherited)
//
// Both variants: initialize, session/new, available_commands_update, set_mode, a prompt echoed,
// agent → client requests (session/request_permission, fs/read_text_file) answered, a cancel
// mid-turn (stopReason cancelled), an extension method, session/list, then the agent command
// is restarted and session/load replays the history.
//   fast-agent (fast-agent acp --model passthrough): the read_text_file tool through
//     "***CALL_TOOL" (fast-agent asks permission, then reads through the client); the cancel
//     is sent while fast-agent waits for the permission answer.
//   recording (acp-agents/recording_agent.py): also session/set_config_option, `_meta` and
//     mcpServers as the agent received them, extension method / error / notification,
//     session/cancel and $/cancel_request on a streaming turn, and the exact list of methods
//     the agent received.
// Per-run values (session ids, tool call ids, timestamps, the work directory) are normalized.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, openSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const sep = process.argv.indexOf("--");
const variant = process.argv[2];
if (sep < 0 || !["fast-agent", "recording"].includes(variant)) {
  console.error("usage: node acp_transparent.mjs fast-agent|recording -- CMD ARGS…");
  process.exit(2);
}
const [cmd, ...args] = process.argv.slice(sep + 1);
const label = `node/${variant}`;
const workdir = realpathSync(mkdtempSync(join(tmpdir(), "acp-transparent-")));
const file = join(workdir, "notes.txt");
const fileContent = "line one\nline two: ünïcödé ✓\n";
writeFileSync(file, fileContent);

let failures = 0;
const check = (ok, what) => {
  console.error(`${ok ? "ok  " : "FAIL"} [${label}] ${what}`);
  if (!ok) failures++;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const timer = setTimeout(() => {
  console.error(`FAIL [${label}] timed out`);
  process.exit(1);
}, 90000);

// ---- what the client sees ---------------------------------------------------------------
const events = []; // session/update params, in arrival order
const agentRequests = []; // agent → client requests, in arrival order
let onPermission = "allow"; // allow | cancel
let currentSession = null;
let activeCx = null;

const app = acp
  .client({ name: "e2a-transparent-test" })
  .onNotification(acp.methods.client.session.update, (cx) => {
    events.push(cx.params);
  })
  .onRequest(acp.methods.client.session.requestPermission, async (cx) => {
    agentRequests.push({ method: "session/request_permission", params: cx.params });
    if (onPermission === "cancel") {
      // the editor's cancel: session/cancel, then the pending permission answered "cancelled"
      await activeCx.notify(acp.methods.agent.session.cancel, { sessionId: cx.params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    const option = cx.params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, (cx) => {
    agentRequests.push({ method: "fs/read_text_file", params: cx.params });
    return { content: readFileSync(cx.params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, (cx) => {
    agentRequests.push({ method: "fs/write_text_file", params: cx.params });
    return {};
  });

const transcript = { client: "@agentclientprotocol/sdk", variant, steps: [] };
const step = (name, data) => transcript.steps.push({ step: name, ...data });
const textOf = (us) =>
  us.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text").map((u) => u.content.text).join("");
const updatesSince = (n, sid) => events.slice(n).filter((e) => e.sessionId === sid).map((e) => e.update);
const errorOf = (e) => ({ code: e?.code, message: e?.message, data: e?.data });
async function waitFor(pred, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(10);
  }
  return pred();
}

// one prompt turn: the updates that arrived before the response, any that arrived after it
async function prompt(cx, sessionId, text, { summarize = false, options, during } = {}) {
  const n = events.length;
  const r0 = agentRequests.length;
  const running = cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }, options);
  if (during) await during();
  let response;
  try {
    response = await running;
  } catch (e) {
    response = { error: errorOf(e) };
  }
  const updates = updatesSince(n, sessionId);
  await sleep(150);
  const late = updatesSince(n, sessionId).slice(updates.length);
  const rec = {
    text,
    response,
    agentRequests: agentRequests.slice(r0),
    lateUpdates: late,
  };
  if (summarize) {
    // a streaming turn stopped by a cancel: how many chunks arrive depends on timing
    rec.updateKinds = [...new Set(updates.map((u) => u.sessionUpdate))];
    rec.streamedBeforeCancel = textOf(updates).length > 0;
  } else {
    rec.updates = updates;
    rec.reply = textOf(updates);
  }
  return rec;
}

// ---- spawn the agent command --------------------------------------------------------------
function start() {
  const err = process.env.ACP_AGENT_STDERR ? openSync(process.env.ACP_AGENT_STDERR, "a") : "inherit";
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", err] });
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream, exited };
}
// the editor closes the agent's stdin; a well-behaved agent (and a relay) then exits
async function stop({ child, exited }) {
  child.stdin.end();
  const r = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
  if (!r) child.kill("SIGKILL");
  return r;
}

const initParams = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false, _meta: { "e2a.test/caps": { x: 1 } } },
  clientInfo: { name: "e2a-transparent-test", title: "Transparent relay test", version: "1.0.0" },
  _meta: { "e2a.test/init": { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } },
};
const mcpServers =
  variant === "recording"
    ? [
        { name: "files", command: "/usr/bin/env", args: ["mcp-files", "--root", workdir], env: [{ name: "MCP_TOKEN", value: "t0k3n" }] },
        { type: "http", name: "web", url: "http://127.0.0.1:9/mcp", headers: [{ name: "Authorization", value: "Bearer abc" }] },
        { type: "sse", name: "events", url: "http://127.0.0.1:9/sse", headers: [] },
      ]
    : []; // fast-agent would try to connect to the MCP servers it is given
const newMeta = { "e2a.test/session": { purpose: "transparency", n: [1, 2.5, null, true] } };
const sent = []; // the methods this client sent, in order (the recording agent must see exactly these)
const request = async (cx, method, params, options) => {
  sent.push(method);
  return cx.request(method, params, options);
};
const notify = async (cx, method, params) => {
  sent.push(method);
  return cx.notify(method, params);
};

try {
  // ---- phase 1: one agent process -------------------------------------------------------
  let proc = start();
  let sessionId;
  let modes;
  const prompts = []; // texts sent in this session, for the replay check
  await app.connectWith(proc.stream, async (cx) => {
    activeCx = cx;
    const init = await request(cx, acp.methods.agent.initialize, initParams);
    step("initialize", { result: init });
    check(init.protocolVersion === 1, `initialize → protocolVersion ${init.protocolVersion}`);
    check(init.agentCapabilities?.loadSession === true, "initialize declares loadSession");
    if (variant === "recording") {
      check(init.agentInfo?.name === "recording-agent", `agentInfo ${JSON.stringify(init.agentInfo)}`);
      check(init.authMethods?.length === 1, "one authMethod");
      check(init.agentCapabilities?.mcpCapabilities?.http === true, "mcpCapabilities.http");
      check(init._meta?.["recording.e2a/agent"] !== undefined, "the agent's _meta arrives");
    } else {
      check(init.agentInfo?.name === "fast-agent-acp", `agentInfo ${JSON.stringify(init.agentInfo)}`);
    }

    const n0 = events.length;
    const created = await request(cx, acp.methods.agent.session.new, { cwd: workdir, mcpServers, _meta: newMeta });
    sessionId = created.sessionId;
    currentSession = sessionId;
    modes = created.modes;
    step("session/new", { result: created });
    check(typeof sessionId === "string" && sessionId.length > 0, "session/new → a session id");
    check(Array.isArray(modes?.availableModes) && modes.availableModes.some((m) => m.id === modes.currentModeId), "session/new returns modes");
    if (variant === "recording") check(modes.availableModes.length === 2 && created.configOptions?.[0]?.id === "verbosity", "two modes and a config option");
    const hasCommands = () => updatesSince(n0, sessionId).some((u) => u.sessionUpdate === "available_commands_update");
    check(await waitFor(hasCommands), "available_commands_update after session/new");
    const commands = updatesSince(n0, sessionId).filter((u) => u.sessionUpdate === "available_commands_update");
    step("available_commands", { updates: commands });
    check(commands[0]?.availableCommands?.length > 0, `available commands: ${commands[0]?.availableCommands?.map((c) => c.name).join(", ")}`);

    // session/set_mode: another mode when there is one (recording), else the current one (fast-agent)
    const target = modes.availableModes.find((m) => m.id !== modes.currentModeId)?.id ?? modes.currentModeId;
    let n = events.length;
    const setMode = await request(cx, acp.methods.agent.session.setMode, { sessionId, modeId: target });
    await sleep(100);
    const modeUpdates = updatesSince(n, sessionId);
    step("session/set_mode", { modeId: target, result: setMode, updates: modeUpdates });
    check(setMode !== undefined && setMode !== null, `session/set_mode ${target} → ${JSON.stringify(setMode)}`);
    if (variant === "recording")
      check(modeUpdates.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === target), "current_mode_update");
    try {
      await request(cx, acp.methods.agent.session.setMode, { sessionId, modeId: "no-such-mode" });
      check(false, "session/set_mode to an unknown mode is an error");
    } catch (e) {
      step("session/set_mode unknown", { error: errorOf(e) });
      check(e?.code === -32602, `session/set_mode to an unknown mode → ${e?.code} ${e?.message}`);
    }

    if (variant === "recording") {
      n = events.length;
      const cfg = await request(cx, acp.methods.agent.session.setConfigOption, { sessionId, configId: "verbosity", value: "high" });
      await sleep(100);
      const cfgUpdates = updatesSince(n, sessionId);
      step("session/set_config_option", { result: cfg, updates: cfgUpdates });
      check(cfg.configOptions?.[0]?.currentValue === "high", "session/set_config_option → currentValue high");
      check(cfgUpdates.some((u) => u.sessionUpdate === "config_option_update"), "config_option_update");
    }

    // a prompt, echoed
    const hello = "hello through the relay: ✓ \"quoted\" \\ back";
    prompts.push(hello);
    sent.push("session/prompt");
    let r = await prompt(cx, sessionId, hello);
    step("prompt echo", r);
    check(r.response.stopReason === "end_turn", `echo → ${r.response.stopReason}`);
    check(r.reply === (variant === "recording" ? `echo: ${hello}` : hello), `echo reply ${JSON.stringify(r.reply)}`);
    check(r.lateUpdates.length === 0, "no session/update after the prompt's response");

    if (variant === "recording") {
      // extension method, its error, an unknown one, an extension notification
      const extParams = { nested: { list: [1, "two", { three: null }], unicode: "é✓" }, n: -0.5 };
      const echo = await request(cx, "_recording/echo", extParams);
      step("_recording/echo", { result: echo });
      check(isDeepStrictEqual(echo, extParams), `_recording/echo returns its params (${JSON.stringify(echo)})`);
      try {
        await request(cx, "_recording/fail", { why: "test" });
        check(false, "_recording/fail is an error");
      } catch (e) {
        step("_recording/fail", { error: errorOf(e) });
        check(e?.code === -32042 && isDeepStrictEqual(e?.data, { asked: { why: "test" } }), `_recording/fail → ${e?.code} ${JSON.stringify(e?.data)}`);
      }
      await notify(cx, "_recording/note", { note: "a notification the agent records", k: [1, 2] });

      // agent → client: permission
      prompts.push("permission");
      sent.push("session/prompt");
      r = await prompt(cx, sessionId, "permission");
      step("prompt permission", r);
      const perm = r.agentRequests.find((q) => q.method === "session/request_permission");
      check(perm?.params?.toolCall?.title === "Delete the build directory?" && perm.params.options.length === 2, "the permission request reached the client");
      check(r.reply.includes('"optionId": "yes-once"'), `the client's answer reached the agent (${r.reply})`);

      // agent → client: fs/read_text_file
      prompts.push(`read ${file}`);
      sent.push("session/prompt");
      r = await prompt(cx, sessionId, `read ${file}`);
      step("prompt read", r);
      const read = r.agentRequests.find((q) => q.method === "fs/read_text_file");
      check(read?.params?.path === file && read.params.line === 1 && read.params.limit === 100, "fs/read_text_file reached the client");
      check(r.reply === `file content: ${fileContent}`, "the file content reached the agent");

      // cancel mid-turn: session/cancel
      prompts.push("slow");
      sent.push("session/prompt");
      r = await prompt(cx, sessionId, "slow", {
        summarize: true,
        during: async () => {
          await waitFor(() => events.some((e) => e.sessionId === sessionId && e.update.content?.text === "tick 0 "));
          await notify(cx, acp.methods.agent.session.cancel, { sessionId });
        },
      });
      step("prompt slow + session/cancel", r);
      check(r.response.stopReason === "cancelled" && r.streamedBeforeCancel, `session/cancel mid-turn → ${JSON.stringify(r.response)}`);

      // cancel mid-turn: $/cancel_request for the prompt's JSON-RPC request
      prompts.push("slow");
      sent.push("session/prompt");
      const abort = new AbortController();
      const before = events.length;
      r = await prompt(cx, sessionId, "slow", {
        summarize: true,
        options: { cancellationSignal: abort.signal },
        during: async () => {
          await waitFor(() => events.slice(before).some((e) => e.sessionId === sessionId && e.update.content?.text === "tick 0 "));
          sent.push("$/cancel_request");
          abort.abort();
        },
      });
      step("prompt slow + $/cancel_request", r);
      check(r.response.stopReason === "cancelled" && r.streamedBeforeCancel, `$/cancel_request mid-turn → ${JSON.stringify(r.response)}`);

      // what the agent received, as it received it
      prompts.push("whoami");
      sent.push("session/prompt");
      r = await prompt(cx, sessionId, "whoami");
      let who = null;
      try {
        who = JSON.parse(r.reply);
      } catch {}
      step("prompt whoami", { response: r.response, agentReceived: who, lateUpdates: r.lateUpdates });
      check(who?.cwd === workdir, `the agent got cwd ${who?.cwd}`);
      check(isDeepStrictEqual(who?.mcpServers, mcpServers), `the agent got the mcpServers unchanged (${JSON.stringify(who?.mcpServers)})`);
      check(isDeepStrictEqual(who?._meta, newMeta), "the agent got session/new's _meta unchanged");
      check(isDeepStrictEqual(who?.received, sent), `the agent received exactly the methods sent (${JSON.stringify(who?.received)} vs ${JSON.stringify(sent)})`);
      check(isDeepStrictEqual(who?.notes, [{ method: "_recording/note", params: { note: "a notification the agent records", k: [1, 2] } }]), "the extension notification reached the agent");
      check(isDeepStrictEqual(who?.cancelRequests, [{ matchedInFlightPrompt: true }]), `$/cancel_request named the in-flight prompt (${JSON.stringify(who?.cancelRequests)})`);
      check(who?.mode === target && who?.verbosity === "high", "set_mode and set_config_option reached the agent");
    } else {
      // fast-agent passthrough: "***CALL_TOOL read_text_file" → permission → fs/read_text_file
      const call = `***CALL_TOOL read_text_file ${JSON.stringify({ path: file })}`;
      prompts.push(call);
      r = await prompt(cx, sessionId, call);
      step("prompt tool read_text_file", r);
      const perm = r.agentRequests.find((q) => q.method === "session/request_permission");
      const read = r.agentRequests.find((q) => q.method === "fs/read_text_file");
      check(perm?.params?.toolCall?.rawInput?.path === file, "fast-agent's permission request reached the client");
      check(read?.params?.path === file, "fast-agent's fs/read_text_file reached the client");
      check(r.reply === fileContent && r.response.stopReason === "end_turn", `the file content came back (${JSON.stringify(r.reply)})`);
      check(r.updates.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed"), "tool_call_update completed");

      // cancel mid-turn, while fast-agent waits for the permission answer
      prompts.push(call);
      onPermission = "cancel";
      r = await prompt(cx, sessionId, call);
      onPermission = "allow";
      step("prompt tool + session/cancel", r);
      check(r.agentRequests.length === 1 && r.agentRequests[0].method === "session/request_permission", "the cancelled turn asked permission only");
      check(r.response.stopReason === "cancelled", `session/cancel mid-turn → ${JSON.stringify(r.response)}`);

      try {
        await request(cx, "_e2a/unknown", { x: 1 });
        check(false, "an unknown extension method is an error");
      } catch (e) {
        step("_e2a/unknown", { error: errorOf(e) });
        check(e?.code === -32601, `an unknown extension method → ${e?.code} ${e?.message}`);
      }
    }

    const listed = await request(cx, acp.methods.agent.session.list, {});
    step("session/list", { result: listed });
    check(listed.sessions?.some((s) => s.sessionId === sessionId && s.cwd === workdir), "session/list lists the session");
  });
  const exited = await stop(proc);
  step("stdin closed", { agentExited: exited });
  check(exited, "the agent command exits when its stdin closes");

  // ---- phase 2: the agent command restarted, session/load replays the history -------------
  proc = start();
  await app.connectWith(proc.stream, async (cx) => {
    activeCx = cx;
    const init = await cx.request(acp.methods.agent.initialize, initParams);
    check(init.agentCapabilities?.loadSession === true, "initialize after restart");
    const n = events.length;
    const loaded = await cx.request(acp.methods.agent.session.load, { sessionId, cwd: workdir, mcpServers });
    const replay = updatesSince(n, sessionId);
    await waitFor(() => updatesSince(n, sessionId).some((u) => u.sessionUpdate === "available_commands_update"), 2000);
    await sleep(150);
    const after = updatesSince(n, sessionId).slice(replay.length);
    step("session/load after restart", { result: loaded, replay, updatesAfterResponse: after });
    const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
    // fast-agent also replays the note it put in the history for the interrupted tool call
    const replayed = variant === "recording" ? users : users.filter((t) => prompts.includes(t));
    check(isDeepStrictEqual(replayed, prompts), `session/load replays the prompts (${JSON.stringify(users)})`);
    check(loaded?.modes?.currentModeId !== undefined, `session/load → modes ${JSON.stringify(loaded?.modes?.currentModeId)}`);
    // fast-agent answers the first prompt after an interrupted tool call with its note about it
    for (const text of ["after the restart", "once more after the restart"]) {
      const r = await prompt(cx, sessionId, text);
      step("prompt after load", r);
      check(r.response.stopReason === "end_turn", `a prompt after session/load → ${r.response.stopReason} (${JSON.stringify(r.reply)})`);
      if (variant === "recording" || text.startsWith("once"))
        check(r.reply.endsWith(text), `a prompt after session/load is answered (${JSON.stringify(r.reply)})`);
    }
  });
  step("stdin closed again", { agentExited: await stop(proc) });
} catch (e) {
  check(false, `client error: ${e?.stack ?? e}`);
}
clearTimeout(timer);

// ---- normalize per-run values and print ---------------------------------------------------
const ids = new Map();
const idKeys = { sessionId: "session", toolCallId: "tool-call" };
(function collect(v) {
  if (Array.isArray(v)) return v.forEach(collect);
  if (v && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      if (idKeys[k] && typeof x === "string" && !ids.has(x)) ids.set(x, `<${idKeys[k]}-${[...ids.values()].filter((p) => p.startsWith(`<${idKeys[k]}-`)).length + 1}>`);
      collect(x);
    }
})(transcript);
const subs = [[workdir, "<workdir>"], ...[...ids.entries()]].sort((a, b) => b[0].length - a[0].length);
const norm = (v, key) => {
  if (Array.isArray(v)) return v.map((x) => norm(x));
  if (v && typeof v === "object")
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, norm(v[k], k)]));
  if (typeof v === "string") {
    if (key === "updatedAt") return "<time>";
    let s = v;
    for (const [from, to] of subs) s = s.split(from).join(to);
    return s;
  }
  return v;
};
console.log(JSON.stringify(norm(transcript), null, 2));
rmSync(workdir, { recursive: true, force: true });
console.error(failures === 0 ? `[${label}] all checks passed` : `[${label}] ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
