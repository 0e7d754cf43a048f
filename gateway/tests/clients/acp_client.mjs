// The official ACP TypeScript client (@agentclientprotocol/sdk, pinned in package-lock.json)
// drives an ACP agent command: initialize → session/new → a prompt with streamed updates → a
// second prompt in the same session → cancel mid-turn → permission round trips (allow, deny)
// → session/list, load, close → an agent error.
//
// usage: node acp_client.mjs <label> -- CMD ARGS…   (exit 0 when every check passes)
// Every hop (ACP, E2A, A2A) must deliver the script's tool call and its result as the direct
// session does: same toolCallId, title, kind, status, rawInput and content.
// SCENARIO=example: any agent (gateway/examples/acp_agent.rs): initialize, session/new, two
// prompts with streamed text and a tool call, a cancel mid-turn.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const sep = process.argv.indexOf("--");
const label = process.argv[2] ?? "acp";
const [cmd, ...args] = process.argv.slice(sep + 1);
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} [${label}] ${what}`);
  if (!ok) failures++;
};

const updates = new Map(); // sessionId -> updates
let permissionAnswer = "allow";
const permissionRequests = [];

const app = acp
  .client({ name: "e2a-official-client-test" })
  .onNotification(acp.methods.client.session.update, (cx) => {
    const p = cx.params;
    if (!updates.has(p.sessionId)) updates.set(p.sessionId, []);
    updates.get(p.sessionId).push(p.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, (cx) => {
    permissionRequests.push(cx.params);
    const option = cx.params.options.find((o) => o.kind === (permissionAnswer === "allow" ? "allow_once" : "reject_once"));
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

const text = (us) =>
  us.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text").map((u) => u.content.text).join("");
const take = (sid) => {
  const us = updates.get(sid) ?? [];
  updates.set(sid, []);
  return us;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const timer = setTimeout(() => {
  console.log(`FAIL [${label}] timed out`);
  process.exit(1);
}, 60000);

try {
  await app.connectWith(stream, async (cx) => {
    const init = await cx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "official-client-test", version: "1.0.0" },
    });
    check(init.protocolVersion === 1, `initialize negotiates protocol version 1 (got ${init.protocolVersion})`);
    check(Array.isArray(init.authMethods), "initialize declares authMethods");
    check(init.agentCapabilities?.loadSession === true, "initialize declares loadSession");

    const { sessionId } = await cx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    check(typeof sessionId === "string" && sessionId.length > 0, `session/new → ${sessionId}`);

    if (process.env.SCENARIO === "example") {
      for (const q of ["first question", "second question"]) {
        const r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: q }] });
        await sleep(50);
        const us = take(sessionId);
        check(r.stopReason === "end_turn" && text(us).includes(q), `prompt "${q}" → ${JSON.stringify(text(us))}`);
        check(us.some((u) => u.sessionUpdate === "tool_call"), "a tool call is streamed");
      }
      const running = cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "third" }] });
      while (text(updates.get(sessionId) ?? []).length === 0) await sleep(5);
      await cx.notify(acp.methods.agent.session.cancel, { sessionId });
      const r = await running;
      check(r.stopReason === "cancelled", `cancel mid-turn → ${r.stopReason}`);
      return;
    }

    // 1. a prompt with streamed updates
    let r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "what is the weather in Paris?" }] });
    await sleep(50);
    let us = take(sessionId);
    const kinds = new Set(us.map((u) => u.sessionUpdate));
    check(r.stopReason === "end_turn", `prompt 1 ends with end_turn (got ${r.stopReason})`);
    check(text(us) === "It is 21 °C in Paris today.", `prompt 1 streams the text (${JSON.stringify(text(us))})`);
    check(us.filter((u) => u.sessionUpdate === "agent_message_chunk").length > 1, "prompt 1 text arrives in several chunks");
    check(kinds.has("agent_thought_chunk"), "prompt 1 streams reasoning (agent_thought_chunk)");
    check(kinds.has("tool_call") && kinds.has("tool_call_update"), "prompt 1 streams a tool call and its update");
    // what the script's tool_call step (call-1, get_weather, {"city": "Paris"}, {"temp_c": 21})
    // becomes on ACP, field by field
    const call = us.find((u) => u.sessionUpdate === "tool_call");
    const same = (got, want) => isDeepStrictEqual(got, want);
    const pick = (u, keys) => Object.fromEntries(keys.map((k) => [k, u?.[k]]));
    const callWant = { toolCallId: "call-1", title: "Get Weather", kind: "other", status: "in_progress", rawInput: { city: "Paris" } };
    check(same(pick(call, Object.keys(callWant)), callWant), `the tool call arrives intact (${JSON.stringify(call)})`);
    const done = us.find((u) => u.sessionUpdate === "tool_call_update");
    const doneWant = { ...callWant, status: "completed", content: [{ type: "content", content: { type: "text", text: '{"temp_c":21}' } }] };
    check(same(pick(done, Object.keys(doneWant)), doneWant), `the tool call update arrives intact (${JSON.stringify(done)})`);

    // 2. a second prompt in the same session
    r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hello again" }] });
    await sleep(50);
    us = take(sessionId);
    check(r.stopReason === "end_turn" && text(us) === "You said: hello again", `prompt 2, same session (${JSON.stringify(text(us))})`);

    // 3. cancel mid-turn
    const running = cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "never finish" }] });
    await sleep(300);
    check(text(updates.get(sessionId) ?? []).startsWith("working on it"), "prompt 3 streams before the cancel");
    await cx.notify(acp.methods.agent.session.cancel, { sessionId });
    r = await running;
    check(r.stopReason === "cancelled", `cancel mid-turn ends with cancelled (got ${r.stopReason})`);
    take(sessionId);

    // 4. permission round trip: allow
    permissionAnswer = "allow";
    r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "please deploy" }] });
    await sleep(50);
    us = take(sessionId);
    check(permissionRequests.length === 1 && permissionRequests[0].toolCall.title === "Deploy to production?", "permission requested from the client");
    check(r.stopReason === "end_turn" && text(us).includes("Deployed."), `allowed → the run resumes (${JSON.stringify(text(us))})`);

    // 5. permission round trip: deny
    permissionAnswer = "deny";
    r = await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "deploy again" }] });
    await sleep(50);
    us = take(sessionId);
    check(permissionRequests.length === 2, "second permission requested");
    check(text(us).includes("Not deployed.") && !text(us).includes("Deployed."), `denied → the agent's on_deny branch (${JSON.stringify(text(us))})`);

    // 6. sessions: list, load (replay), close
    const listed = await cx.request(acp.methods.agent.session.list, {});
    check(listed.sessions.some((s) => s.sessionId === sessionId), "session/list lists the session");
    await cx.request(acp.methods.agent.session.load, { sessionId, cwd: process.cwd(), mcpServers: [] });
    await sleep(100);
    us = take(sessionId);
    check(us.some((u) => u.sessionUpdate === "user_message_chunk") && text(us).includes("It is 21 °C"), "session/load replays the conversation");

    // 7. an agent failure is a JSON-RPC error
    try {
      await cx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "crash now" }] });
      check(false, "a failing agent gives a JSON-RPC error");
    } catch (e) {
      check(/provider is down/.test(String(e?.message ?? e)), `a failing agent gives a JSON-RPC error (${e?.message ?? e})`);
    }
    await cx.request(acp.methods.agent.session.close, { sessionId });
    check(true, "session/close");
  });
} catch (e) {
  check(false, `client error: ${e?.stack ?? e}`);
}
clearTimeout(timer);
child.kill();
console.log(failures === 0 ? `[${label}] all checks passed` : `[${label}] ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
