// The inspector page of a live `e2a serve` in Debian's Chromium (headless), driven by
// playwright-core: the page asks for a credential, then shows runs of every binding as they
// happen, a run's frames streaming in, a pending pause and who may answer it, and per-agent
// counts. Saves a screenshot. Usage: node inspector.mjs BASE OPS_KEY ALICE_KEY SCREENSHOT
import { chromium } from "playwright-core";

const [base, opsKey, aliceKey, shot] = process.argv.slice(2);
const deadline = setTimeout(() => {
  console.error("inspector: no result within 90 s");
  process.exit(1);
}, 90_000);

function check(ok, what) {
  if (!ok) throw new Error(`inspector: ${what}`);
  console.log(`ok: ${what}`);
}

async function e2a(query, extra = {}, key = aliceKey) {
  const resp = await fetch(`${base}/v1/e2a/requests`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
    body: JSON.stringify({ method: "chat.send", params: { query }, ...extra }),
  });
  if (!resp.ok) throw new Error(`e2a ${query}: ${resp.status}`);
  return resp.text();
}

async function a2a(text) {
  const resp = await fetch(`${base}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${aliceKey}`, "A2A-Version": "1.0" },
    body: JSON.stringify({
      jsonrpc: "2.0", id: 1, method: "SendMessage",
      params: { message: { messageId: `m-${Date.now()}`, role: "ROLE_USER", parts: [{ text }] } },
    }),
  });
  if (!resp.ok) throw new Error(`a2a: ${resp.status}`);
  return resp.json();
}

async function agui(text) {
  const resp = await fetch(`${base}/agui`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${aliceKey}` },
    body: JSON.stringify({
      threadId: `t-${Date.now()}`, runId: `r-${Date.now()}`, state: {}, tools: [], context: [],
      forwardedProps: {}, messages: [{ id: "u1", role: "user", content: text }],
    }),
  });
  if (!resp.ok) throw new Error(`agui: ${resp.status}`);
  return resp.text();
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${base}/ui`);
  // no credential yet: the page asks for one
  await page.waitForSelector("#login:not([hidden])", { timeout: 10_000 });
  check(true, "the page asks for a credential");
  await page.fill("#token", opsKey);
  await page.click("#login button");
  await page.waitForSelector("#login[hidden]", { state: "attached", timeout: 10_000 });
  await page.waitForFunction(() => document.getElementById("viewer").textContent.includes("ops"), null, { timeout: 10_000 });
  check(true, "signed in as the operator");
  // (the refused look before signing in is the only error expected)
  errors.length = 0;

  // a slow run: its row appears while it runs, and its frames stream in once opened
  const slow = e2a("stream slowly", { request_id: `slow-${Date.now()}` });
  const row = await page.waitForSelector('#runs tr[data-state="running"]', { timeout: 10_000 });
  check(true, "a running run appears");
  await row.click();
  await page.waitForSelector("#detail:not([hidden])");
  const counts = [];
  for (let i = 0; i < 40; i++) {
    counts.push(await page.locator("#frames li").count());
    if (await page.locator("#frames li.final").count()) break;
    await page.waitForTimeout(50);
  }
  await page.waitForSelector("#frames li.final", { timeout: 10_000 });
  const total = await page.locator("#frames li").count();
  check(total >= 5, `the opened run's frames are shown (${total})`);
  check(counts.some((c) => c > 0 && c < total), `they arrived one by one (seen ${[...new Set(counts)].join(", ")} of ${total})`);
  await slow;
  await page.waitForSelector('#detail-state.state-succeeded', { timeout: 10_000 });
  check(true, "the run reads succeeded when it ends");

  // a pause: listed with its question and who may answer it
  await e2a("book a table", { session_id: `booking-${Date.now()}` });
  const pause = await page.waitForSelector("#pauses li[data-run-id]", { timeout: 10_000 });
  const pauseText = await pause.textContent();
  check(pauseText.includes("For how many people?") && pauseText.includes("alice"), `a pause shows: ${pauseText}`);

  // runs of the other bindings
  await a2a("hello over A2A");
  await agui("what is the weather in Oslo?");
  for (const binding of ["a2a", "agui"]) {
    await page.waitForFunction(
      (b) => [...document.querySelectorAll("#runs tbody tr td:nth-child(3)")].some((td) => td.textContent === b),
      binding, { timeout: 10_000 });
    check(true, `a run over ${binding} is listed`);
  }
  const traced = await page.locator("#runs tbody tr td:nth-child(10)").allTextContents();
  check(traced.some((t) => /^[0-9a-f]{32}$/.test(t)), "runs show their trace id");
  await page.waitForFunction(() => {
    const row = document.querySelector('#agents tr[data-agent="default"]');
    return row && Number(row.children[1].textContent) >= 4;
  }, null, { timeout: 10_000 });
  check(true, "per-agent counts are shown");

  // an A2A turn opened after it ended: its task's stored events
  const a2aRow = page.locator("#runs tbody tr", { has: page.locator("td:nth-child(3)", { hasText: /^a2a$/ }) });
  await a2aRow.first().click();
  await page.waitForSelector("#frames li.stored", { timeout: 10_000 });
  const stored = await page.locator("#frames li.stored").first().textContent();
  check(stored.includes("A2A event 1"), `an A2A turn shows its task's stored events: ${stored.slice(0, 80)}`);

  await page.click('#runs tr[data-state="paused"]');
  await page.waitForSelector("#frames li.final", { timeout: 10_000 });
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);
  check(errors.length === 0, `no error in the page's console (${errors.join("; ")})`);
} finally {
  await browser.close();
  clearTimeout(deadline);
}
