// The e2a inspector page: polls /ui/api/activity every second and streams the frames of the
// run opened (/ui/api/runs/{id}/frames, SSE read with fetch so that a credential can be sent).
"use strict";

const TOKEN_KEY = "e2a-inspector-token";
let token = sessionStorage.getItem(TOKEN_KEY) || "";
let opened = null; // { id, abort, seen: Set of sequences }

function headers() {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return e;
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString();
}

function took(run, now) {
  const end = run.state === "running" ? now : run.updated_ms;
  return `${((end - run.started_ms) / 1000).toFixed(1)} s`;
}

function state(s) {
  return el("span", { class: `state state-${s}` }, s);
}

function needCredential(why) {
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = why;
  document.getElementById("status").textContent = "needs a credential";
}

async function refresh() {
  let resp;
  try {
    resp = await fetch("/ui/api/activity", { headers: headers() });
  } catch (e) {
    document.getElementById("status").textContent = `gateway unreachable: ${e}`;
    return;
  }
  if (resp.status === 401 || resp.status === 403) {
    needCredential(token ? "refused" : "");
    return;
  }
  if (!resp.ok) {
    document.getElementById("status").textContent = `error ${resp.status}`;
    return;
  }
  document.getElementById("login").hidden = true;
  const data = await resp.json();
  render(data);
  document.getElementById("status").textContent = `updated ${clock(data.now_ms)}`;
}

function render(data) {
  const who = data.viewer.caller ? `as ${data.viewer.caller}` : "no authentication";
  document.getElementById("viewer").textContent = `${who}${data.viewer.operator ? " (every caller's runs)" : " (your runs)"}`;
  const agents = document.querySelector("#agents tbody");
  document.getElementById("agents-section").hidden = data.agents === null;
  agents.replaceChildren(
    ...Object.entries(data.agents || {}).map(([name, c]) =>
      el("tr", { "data-agent": name },
        el("td", {}, name), el("td", {}, String(c.runs)), el("td", {}, String(c.running)),
        ...["succeeded", "paused", "cancelled", "failed"].map((s) => el("td", {}, String(c.ended[s] || 0))),
        el("td", {}, String(c.frames))))
  );
  const pauses = document.getElementById("pauses");
  pauses.replaceChildren(
    ...data.pauses.map((r) =>
      el("li", { "data-run-id": String(r.id) },
        el("strong", {}, r.pause.prompt || "(no question given)"),
        ` — ${r.pause.input_kind || "input"} asked by agent ${r.agent} over ${r.binding}, run #${r.id}` +
          ` since ${clock(r.updated_ms)}; may be answered by ${r.caller || "any caller (no authentication)"}` +
          (r.session_id ? ` in session ${r.session_id}` : "")))
  );
  if (!data.pauses.length) pauses.append(el("li", { class: "muted" }, "none"));
  const runs = document.querySelector("#runs tbody");
  runs.replaceChildren(
    ...data.runs.map((r) => {
      const row = el("tr", { "data-run-id": String(r.id), "data-state": r.state },
        el("td", {}, String(r.id)), el("td", {}, r.agent), el("td", {}, r.binding),
        el("td", {}, r.caller || "—"), el("td", {}, state(r.state)), el("td", {}, clock(r.started_ms)),
        el("td", {}, took(r, data.now_ms)), el("td", {}, String(r.frames)),
        el("td", {}, r.request_id || "—"), el("td", {}, r.trace_id || "—"));
      if (opened && opened.id === r.id) row.classList.add("selected");
      row.addEventListener("click", () => open(r));
      return row;
    })
  );
  if (opened) {
    const r = data.runs.find((x) => x.id === opened.id);
    if (r) meta(r, data.now_ms);
  }
}

function meta(r, now) {
  document.getElementById("detail-id").textContent = `#${r.id}`;
  const s = document.getElementById("detail-state");
  s.textContent = r.state;
  s.className = `state state-${r.state}`;
  const rows = [
    ["agent", r.agent], ["binding", r.binding], ["caller", r.caller || "—"],
    ["request id", r.request_id || "—"], ["session", r.session_id || "—"],
    ["trace id", r.trace_id || "—"], ["started", clock(r.started_ms)], ["time", took(r, now)],
    ["frames", String(r.frames)],
  ];
  document.getElementById("detail-meta").replaceChildren(
    ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])
  );
}

function frameLine(f) {
  const body = JSON.stringify(f.body);
  const short = body.length > 400 ? `${body.slice(0, 400)}…` : body;
  return el("li", { class: f.is_final ? "final" : "", "data-sequence": String(f.sequence) },
    `${f.sequence}  ${f.response_kind}  ${f.status}${f.is_final ? "  (final)" : ""}  ${short}`);
}

async function open(r) {
  if (opened) opened.abort.abort();
  const abort = new AbortController();
  opened = { id: r.id, abort, seen: new Set() };
  const mine = opened;
  document.getElementById("detail").hidden = false;
  document.getElementById("frames").replaceChildren();
  for (const row of document.querySelectorAll("#runs tr.selected")) row.classList.remove("selected");
  document.querySelector(`#runs tr[data-run-id="${r.id}"]`)?.classList.add("selected");
  meta(r, Date.now());
  let resp;
  try {
    resp = await fetch(`/ui/api/runs/${r.id}/frames`, { headers: headers(), signal: abort.signal });
  } catch (e) {
    return;
  }
  if (!resp.ok || !resp.body) return;
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      return;
    }
    if (chunk.done) return;
    buffer += chunk.value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const raw = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const kind = /^event: (.*)$/m.exec(raw)?.[1];
      const data = /^data: (.*)$/m.exec(raw)?.[1];
      if (!data || opened !== mine) continue;
      if (kind === "frame") {
        const f = JSON.parse(data);
        if (mine.seen.has(f.sequence)) continue;
        mine.seen.add(f.sequence);
        document.getElementById("frames").append(frameLine(f));
      } else if (kind === "a2a") {
        const e = JSON.parse(data);
        if (mine.seen.has(`a2a-${e.seq}`)) continue;
        mine.seen.add(`a2a-${e.seq}`);
        const text = JSON.stringify(e.event);
        const short = text.length > 400 ? `${text.slice(0, 400)}…` : text;
        document.getElementById("frames").append(
          el("li", { class: "stored", "data-a2a-seq": String(e.seq) }, `A2A event ${e.seq} (stored)  ${short}`));
      } else if (kind === "end") {
        meta(JSON.parse(data), Date.now());
      }
    }
  }
}

document.getElementById("login").addEventListener("submit", (e) => {
  e.preventDefault();
  token = document.getElementById("token").value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  refresh();
});

refresh();
setInterval(refresh, 1000);
