// The official AG-UI client (@ag-ui/client HttpAgent, pinned in package-lock.json; it verifies
// the event order and rejects out-of-order events) against `e2a serve --agui`: a run with
// reasoning, a tool call and streamed text; a RUN_ERROR run; an approval interrupt resumed by
// a follow-up run (approve and deny); the named-agent route.
//
// usage: node agui_client.mjs BASE_URL [NAMED_ROUTE]   (exit 0 when every check passes)
// PHASE=ask STATE=FILE: only start a run that ends with an approval interrupt and write the
// thread, its messages and the interrupt to FILE; PHASE=resume STATE=FILE: answer that interrupt
// (a new HttpAgent on the same thread: the gateway may have restarted in between).
// NAMED_ROUTE defaults to /agents/script/agui. INTERRUPTS=policy-deny: the agent is an ACP agent
// behind the gateway, whose deny-by-default policy answers its permission request (no interrupt).
import { HttpAgent } from "@ag-ui/client";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const named = process.argv[3] ?? "/agents/script/agui";
const interrupts = process.env.INTERRUPTS ?? "client";
let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} [agui] ${what}`);
  if (!ok) failures++;
};
const timer = setTimeout(() => {
  console.log("FAIL [agui] timed out");
  process.exit(1);
}, 60000);

function newAgent(path, threadId) {
  return new HttpAgent({ url: `${base}${path}`, threadId });
}

async function run(agent, text, params = {}) {
  if (text !== undefined) agent.messages.push({ id: `u-${agent.messages.length}`, role: "user", content: text });
  const events = [];
  let failed = null;
  let finished = null;
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: ({ event }) => {
        finished = event;
      },
      onRunFailed: ({ error }) => {
        failed = error;
      },
    });
  } catch (e) {
    failed = failed ?? e;
  }
  return { events, failed, finished, types: events.map((e) => e.type) };
}

const text = (events) => events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");

const phase = process.env.PHASE;
if (phase === "ask" || phase === "resume") {
  const { readFileSync, writeFileSync } = await import("node:fs");
  try {
    if (phase === "ask") {
      const agent = newAgent("/agui", `thread-restart-${Date.now()}`);
      const r = await run(agent, "please deploy");
      const interrupt = r.finished?.outcome?.type === "interrupt" ? r.finished.outcome.interrupts?.[0] : undefined;
      check(!r.failed && interrupt, `the run ends with an interrupt outcome (${JSON.stringify(r.finished?.outcome)})`);
      writeFileSync(process.env.STATE, JSON.stringify({ threadId: agent.threadId, messages: agent.messages, interrupt }));
    } else {
      const saved = JSON.parse(readFileSync(process.env.STATE, "utf8"));
      const agent = new HttpAgent({ url: `${base}/agui`, threadId: saved.threadId, initialMessages: saved.messages });
      const r = await run(agent, undefined, { resume: [{ interruptId: saved.interrupt?.id ?? "x", status: "resolved", payload: { approved: true } }] });
      check(!r.failed && text(r.events) === "Deployed.", `the interrupt asked before the restart, resumed → ${JSON.stringify(text(r.events))} ${r.failed ?? ""}`);
    }
  } catch (e) {
    check(false, `client error: ${e?.stack ?? e}`);
  }
  clearTimeout(timer);
  console.log(failures === 0 ? `[agui] ${phase}: all checks passed` : `[agui] ${phase}: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

try {
  // 1. text, reasoning and a tool call
  let agent = newAgent("/agui", "thread-weather");
  let r = await run(agent, "what is the weather in Paris?");
  check(!r.failed, `run 1 completes (${r.failed ?? "ok"})`);
  check(r.types[0] === "RUN_STARTED" && r.types.at(-1) === "RUN_FINISHED", `run 1 lifecycle ${r.types[0]} … ${r.types.at(-1)}`);
  check(r.types.includes("REASONING_MESSAGE_CONTENT"), "run 1 streams reasoning");
  check(["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"].every((t) => r.types.includes(t)), "run 1 streams a tool call and its result");
  check(text(r.events) === "It is 21 °C in Paris today.", `run 1 text ${JSON.stringify(text(r.events))}`);
  check(r.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length > 1, "run 1 text arrives in several events");
  const assistant = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
  check(assistant.includes("It is 21 °C in Paris today."), "the client assembled the assistant message");

  // 2. RUN_ERROR
  agent = newAgent("/agui", "thread-crash");
  r = await run(agent, "crash please");
  const err = r.events.find((e) => e.type === "RUN_ERROR");
  check(err && /provider is down/.test(err.message), `run 2 ends with RUN_ERROR (${err?.message})`);
  check(r.types.at(-1) === "RUN_ERROR", "nothing follows RUN_ERROR");

  if (interrupts === "client") {
  // 3. an approval interrupt, resumed by a follow-up run (approve)
  agent = newAgent("/agui", "thread-deploy-1");
  r = await run(agent, "please deploy");
  const interrupt = r.finished?.outcome?.type === "interrupt" ? r.finished.outcome.interrupts?.[0] : undefined;
  check(!r.failed && interrupt, `run 3 ends with an interrupt outcome (${JSON.stringify(r.finished?.outcome)})`);
  r = await run(agent, undefined, { resume: [{ interruptId: interrupt?.id ?? "x", status: "resolved", payload: { approved: true } }] });
  check(!r.failed && text(r.events) === "Deployed.", `resumed (approved) → ${JSON.stringify(text(r.events))} ${r.failed ?? ""}`);

  // 4. deny
  agent = newAgent("/agui", "thread-deploy-2");
  r = await run(agent, "please deploy");
  const interrupt2 = r.finished?.outcome?.interrupts?.[0];
  r = await run(agent, undefined, { resume: [{ interruptId: interrupt2?.id ?? "x", status: "resolved", payload: { approved: false } }] });
  // the on_deny branch's words, then its final content ("denied": not streamed, so shown last)
  check(!r.failed && text(r.events) === "Not deployed.\ndenied", `resumed (denied) → ${JSON.stringify(text(r.events))} ${r.failed ?? ""}`);
  } else {
    // 3'. the gateway's policy answers the ACP agent's permission request: denied, no interrupt
    agent = newAgent("/agui", "thread-deploy-policy");
    r = await run(agent, "please deploy");
    check(!r.failed && r.finished?.outcome?.type !== "interrupt", "the run completes without an interrupt");
    check(text(r.events).endsWith("Not deployed.\ndenied"), `denied by the gateway's policy → ${JSON.stringify(text(r.events))}`);
  }

  // 5. the named-agent route
  agent = newAgent(named, "thread-named");
  r = await run(agent, "hi there");
  check(!r.failed && text(r.events) === "You said: hi there", `${named} → ${JSON.stringify(text(r.events))}`);
} catch (e) {
  check(false, `client error: ${e?.stack ?? e}`);
}
clearTimeout(timer);
console.log(failures === 0 ? "[agui] all checks passed" : `[agui] ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
