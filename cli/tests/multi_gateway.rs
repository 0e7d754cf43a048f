//! Several `e2a serve --a2a --store postgres://…` processes sharing one PostgreSQL database:
//! a stream started on one gateway resumed mid-stream on another, a task whose gateway was
//! killed read `FAILED` on the other once its lease expired, a cancel sent to the gateway that
//! does not run the task, a pause asked on one gateway answered on the other, and a
//! bounded load test (1,000 streams over two gateways, every event once and in order; the same
//! load on one SQLite gateway for comparison), and a run delegated with callbacks whose gateway
//! is killed while the child works, finished by the other gateway the callback reaches.
//!
//! They need a PostgreSQL server: `E2A_TEST_POSTGRES_URL=postgres://USER@127.0.0.1:PORT/DB`
//! (`gateway/tests/postgres/start.sh` starts one; each test makes its own database). Without
//! it they print that they were skipped, unless `E2A_REQUIRE_POSTGRES=1`, which CI sets, makes
//! that a failure.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

const SCRIPT: &str = r#"{"scenarios": [
 {"name": "long", "match": {"text": "long"},
  "steps": [{"type": "text", "text": "started "}, {"type": "sleep", "ms": 600000}, {"type": "complete"}]},
 {"name": "pause", "match": {"text": "book"},
  "steps": [{"type": "text", "text": "booking "}, {"type": "input_required", "prompt": "how many?"},
            {"type": "text", "text": "booked for {answer}"}, {"type": "complete"}]},
 {"name": "trip", "match": {"text": "plan a trip"},
  "steps": [{"type": "text", "text": "planning "},
            {"type": "input_required", "prompt": "how many?", "also_ask": ["which city?"]},
            {"type": "text", "text": "trip for {answer}"}, {"type": "complete"}]},
 {"name": "count", "match": {"text": "count"},
  "steps": [{"type": "text", "text": "01 "}, {"type": "text", "text": "02 ", "delay_ms": 100},
            {"type": "text", "text": "03 ", "delay_ms": 100}, {"type": "text", "text": "04 ", "delay_ms": 100},
            {"type": "text", "text": "05 ", "delay_ms": 100}, {"type": "text", "text": "06 ", "delay_ms": 100},
            {"type": "text", "text": "07 ", "delay_ms": 100}, {"type": "text", "text": "08 ", "delay_ms": 100},
            {"type": "text", "text": "09 ", "delay_ms": 100}, {"type": "text", "text": "10 ", "delay_ms": 100},
            {"type": "text", "text": "11 ", "delay_ms": 100}, {"type": "text", "text": "12 ", "delay_ms": 100},
            {"type": "complete"}]},
 {"name": "load", "match": {"text": "load"},
  "steps": [{"type": "text", "text": "{now_us} ", "delay_ms": 500},
            {"type": "text", "text": "{now_us} ", "delay_ms": 30}, {"type": "text", "text": "{now_us} ", "delay_ms": 30},
            {"type": "text", "text": "{now_us} ", "delay_ms": 30}, {"type": "text", "text": "{now_us} ", "delay_ms": 30},
            {"type": "text", "text": "{now_us} ", "delay_ms": 30}, {"type": "text", "text": "{now_us} ", "delay_ms": 30},
            {"type": "text", "text": "{now_us} ", "delay_ms": 30}, {"type": "text", "text": "{now_us} ", "delay_ms": 30},
            {"type": "text", "text": "{now_us} ", "delay_ms": 30}, {"type": "text", "text": "{now_us} ", "delay_ms": 30},
            {"type": "complete"}]}
]}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

mod common;
use common::{fresh_database, postgres, Serve};

/// `e2a serve --a2a` with tasks in `store`, running `script` (over TLS, verified, when the test
/// server speaks it: `E2A_TEST_POSTGRES_CA`).
fn serve(store: &str, script: &Path, extra: &[&str]) -> Serve {
    let agent = format!("script:{}", script.display());
    let ca = std::env::var("E2A_TEST_POSTGRES_CA").unwrap_or_default();
    let mut args = vec!["--a2a", "--store", store, "--agent", &agent];
    if !ca.is_empty() && store.starts_with("postgres") {
        args.extend(["--store-ca", ca.as_str()]);
    }
    args.extend_from_slice(extra);
    common::serve(&args)
}

fn script_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, SCRIPT).expect("script");
    path
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(2_000)
        .build()
        .expect("client")
}

fn message(text: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(t) = task_id {
        m["taskId"] = t.into();
    }
    m
}

async fn rpc_request(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    params: Value,
    last_event_id: Option<u64>,
) -> reqwest::Response {
    let mut req = http
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let resp = req.send().await.expect("request");
    assert!(resp.status().is_success(), "{method}: HTTP {}", resp.status());
    resp
}

async fn rpc(http: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    let body = rpc_answer(http, base, method, params).await;
    body.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method} failed: {body}"))
}

/// The whole JSON-RPC answer (result or error) of `method`.
async fn rpc_answer(http: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    rpc_request(http, base, method, params, None)
        .await
        .json()
        .await
        .expect("JSON-RPC body")
}

/// The JSON-RPC answer to a `SendMessage` of `text` to task `id`.
async fn send_to(http: &reqwest::Client, base: &str, text: &str, id: &str) -> Value {
    rpc_answer(http, base, "SendMessage", json!({"message": message(text, Some(id))})).await
}

/// One event of an A2A SSE stream: its id (the task log's sequence number), the
/// `StreamResponse`, and when it arrived.
#[derive(Debug, Clone)]
struct Got {
    seq: u64,
    event: Value,
    /// Arrival, µs since the Unix epoch.
    at_us: u128,
}

/// The events of an SSE response as they arrive.
fn events(resp: reqwest::Response) -> impl futures_util::Stream<Item = Got> {
    resp.bytes_stream().eventsource().filter_map(|e| async move {
        let e = e.ok()?;
        let body: Value = serde_json::from_str(&e.data).ok()?;
        Some(Got {
            seq: e.id.parse().ok()?,
            event: body.get("result")?.clone(),
            at_us: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_micros())
                .unwrap_or(0),
        })
    })
}

fn state_of(event: &Value) -> Option<&str> {
    event
        .pointer("/statusUpdate/status/state")
        .or_else(|| event.pointer("/task/status/state"))
        .and_then(Value::as_str)
}

fn task_id_of(event: &Value) -> String {
    event
        .pointer("/task/id")
        .or_else(|| event.pointer("/statusUpdate/taskId"))
        .or_else(|| event.pointer("/artifactUpdate/taskId"))
        .and_then(Value::as_str)
        .expect("a task id")
        .to_string()
}

/// Sequence numbers `from, from + 1, …` with no gap and no repeat.
fn assert_consecutive(got: &[Got], from: u64) {
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            g.seq,
            from + i as u64,
            "event {i} of {:?}",
            got.iter().map(|g| g.seq).collect::<Vec<_>>()
        );
    }
}

/// `SendStreamingMessage` of `text` (to task `task_id`, if any): its events.
async fn send_streaming(
    http: &reqwest::Client,
    base: &str,
    text: &str,
    task_id: Option<&str>,
) -> impl futures_util::Stream<Item = Got> {
    let params = json!({"message": message(text, task_id)});
    events(rpc_request(http, base, "SendStreamingMessage", params, None).await)
}

/// Two gateways on a new database of the test server, running the test script.
struct Pair {
    rt: tokio::runtime::Runtime,
    a: Serve,
    b: Serve,
    _dir: tempfile::TempDir,
}

/// [`Pair`], each gateway with the `extra` options; `None` without a server.
fn two_gateways(extra: &[&str]) -> Option<Pair> {
    let url = postgres()?;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = script_file(dir.path());
    let rt = runtime();
    let db = rt.block_on(fresh_database(&url));
    let a = serve(&db, &script, extra);
    let b = serve(&db, &script, extra);
    Some(Pair { rt, a, b, _dir: dir })
}

/// The whole log of a task that has ended (a replay from the start).
async fn log_of(http: &reqwest::Client, base: &str, id: &str) -> Vec<Got> {
    let resp = rpc_request(http, base, "SubscribeToTask", json!({"id": id}), Some(0)).await;
    events(resp).collect().await
}

#[test]
fn a_stream_started_on_one_gateway_resumes_on_another_with_exactly_the_remaining_events() {
    let Some(Pair { rt, a, b, .. }) = two_gateways(&[]) else {
        return;
    };
    rt.block_on(async {
        let http = client();
        // on A: the first five events, then the connection drops
        let stream = send_streaming(&http, &a.base, "count", None).await;
        let first: Vec<Got> = stream.take(5).collect().await;
        assert_consecutive(&first, 1);
        let id = task_id_of(&first[0].event);
        // the task is still running (on A), and B sees it so
        let task = rpc(&http, &b.base, "GetTask", json!({"id": id})).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
        // on B, from the last event seen
        let resp = rpc_request(&http, &b.base, "SubscribeToTask", json!({"id": id}), Some(5)).await;
        let rest: Vec<Got> = events(resp).collect().await;
        assert!(
            rest.len() > 5,
            "B delivered the rest of the run, live: {} events",
            rest.len()
        );
        assert_consecutive(&rest, 6);
        assert_eq!(state_of(&rest[rest.len() - 1].event), Some("TASK_STATE_COMPLETED"));
        // exactly what the log holds after 5, event for event
        let log = log_of(&http, &a.base, &id).await;
        assert_consecutive(&log, 1);
        let after: Vec<&Value> = log.iter().skip(5).map(|g| &g.event).collect();
        let delivered: Vec<&Value> = rest.iter().map(|g| &g.event).collect();
        assert_eq!(delivered, after);
        // and the task reads the same on both
        let on_a = rpc(&http, &a.base, "GetTask", json!({"id": id})).await;
        let on_b = rpc(&http, &b.base, "GetTask", json!({"id": id})).await;
        assert_eq!(on_a, on_b);
        let text: String = on_a["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or("")
            .into();
        assert!(text.starts_with("01 02 03") && text.contains("12"), "{text}");
    });
}

#[test]
fn the_task_of_a_killed_gateway_reads_failed_on_another_once_its_lease_expires() {
    let Some(Pair { rt, mut a, b, .. }) = two_gateways(&["--lease-secs", "3"]) else {
        return;
    };
    rt.block_on(async {
        let http = client();
        let stream = send_streaming(&http, &a.base, "long", None).await;
        let first: Vec<Got> = stream.take(3).collect().await;
        let id = task_id_of(&first[0].event);
        // a subscriber on B follows the task A runs
        let resp = rpc_request(&http, &b.base, "SubscribeToTask", json!({"id": id}), Some(3)).await;
        let follower = tokio::spawn(events(resp).collect::<Vec<Got>>());
        tokio::time::sleep(Duration::from_millis(200)).await;

        a.kill();
        let killed = Instant::now();
        // the lease is still valid: another gateway may be running it, so it is not failed yet
        let task = rpc(&http, &b.base, "GetTask", json!({"id": id})).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
        let failed = loop {
            let task = rpc(&http, &b.base, "GetTask", json!({"id": id})).await;
            if task["status"]["state"] == "TASK_STATE_FAILED" {
                break task;
            }
            assert!(killed.elapsed() < Duration::from_secs(20), "still {task}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let waited = killed.elapsed();
        assert!(
            waited >= Duration::from_secs(1),
            "failed after {waited:?}, before the lease could expire"
        );
        let why = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap_or("");
        assert!(why.contains("lease expired"), "{why}");
        // the follower on B got the end, and nothing twice
        let got = tokio::time::timeout(Duration::from_secs(10), follower)
            .await
            .expect("the follower's stream ended")
            .expect("join");
        assert_consecutive(&got, 4);
        assert_eq!(got.last().and_then(|g| state_of(&g.event)), Some("TASK_STATE_FAILED"));
    });
}

#[test]
fn a_cancel_on_the_other_gateway_reaches_the_task_and_a_pause_is_answered_on_either() {
    let Some(Pair { rt, a, b, .. }) = two_gateways(&[]) else {
        return;
    };
    rt.block_on(async {
        let http = client();
        // cancel on B of a run on A: A's run stops, A's stream ends canceled
        let stream = send_streaming(&http, &a.base, "long", None).await;
        let mut stream = Box::pin(stream);
        let head = stream.next().await.expect("first event");
        let id = task_id_of(&head.event);
        let canceled = rpc(&http, &b.base, "CancelTask", json!({"id": id})).await;
        assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
        let rest: Vec<Got> = tokio::time::timeout(Duration::from_secs(10), stream.collect())
            .await
            .expect("A's stream ended");
        assert_eq!(
            rest.last().and_then(|g| state_of(&g.event)),
            Some("TASK_STATE_CANCELED")
        );

        // a pause on A answered on B: the script agent keeps its place in the store, so B's
        // agent goes on where A's stopped, in the same task
        let stream = send_streaming(&http, &a.base, "book a table", None).await;
        let turn1: Vec<Got> = stream.collect().await;
        assert_eq!(
            turn1.last().and_then(|g| state_of(&g.event)),
            Some("TASK_STATE_INPUT_REQUIRED")
        );
        let id = task_id_of(&turn1[0].event);
        let stream = send_streaming(&http, &b.base, "4", Some(&id)).await;
        let turn2: Vec<Got> = stream.collect().await;
        let said = Value::Array(turn2.iter().map(|g| g.event.clone()).collect()).to_string();
        assert!(said.contains("booked for 4"), "{said}");
        assert_consecutive(&turn2, turn1.len() as u64 + 1);
        assert_eq!(
            turn2.last().and_then(|g| state_of(&g.event)),
            Some("TASK_STATE_COMPLETED")
        );
        let task = rpc(&http, &b.base, "GetTask", json!({"id": id})).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        let user_turns = task["history"]
            .as_array()
            .map(|h| h.iter().filter(|m| m["role"] == "ROLE_USER").count());
        assert_eq!(user_turns, Some(2), "{task}");
        // while a turn runs on one gateway, the other refuses a message to its task
        let stream = send_streaming(&http, &a.base, "long", None).await;
        let mut running = Box::pin(stream);
        let head = running.next().await.expect("the turn started on A");
        let id = task_id_of(&head.event);
        let refused = send_to(&http, &b.base, "count", &id).await;
        assert_eq!(refused["error"]["code"], -32004, "{refused}");
        rpc(&http, &a.base, "CancelTask", json!({"id": id})).await;
    });
}

/// Text chunks of the `load` scenario.
const CHUNKS: usize = 11;

/// What one load run measured.
struct LoadReport {
    streams: usize,
    events: usize,
    seconds: f64,
    /// Delivery latencies (µs) on the senders' streams (from the gateway running the task).
    local: Vec<u128>,
    /// Delivery latencies (µs) on the followers' streams.
    followed: Vec<u128>,
}

fn percentile_ms(v: &[u128], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied().unwrap_or_default() as f64 / 1e3
}

impl LoadReport {
    fn line(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} | {:.1} | {:.0} | {:.1} / {:.1} | {:.1} / {:.1} |",
            self.streams,
            self.events,
            self.seconds,
            self.events as f64 / self.seconds,
            percentile_ms(&self.local, 0.5),
            percentile_ms(&self.local, 0.99),
            percentile_ms(&self.followed, 0.5),
            percentile_ms(&self.followed, 0.99),
        )
    }
}

/// Delivery latencies (µs) of the text chunks in `got`: each carries the time the agent made it.
fn latencies(got: &[Got]) -> Vec<u128> {
    got.iter()
        .filter_map(|g| {
            let text = g.event.pointer("/artifactUpdate/artifact/parts/0/text")?.as_str()?;
            let made: u128 = text.trim().parse().ok()?;
            Some(g.at_us.saturating_sub(made))
        })
        .collect()
}

/// `n` tasks, each sent (streaming) to one gateway of `bases` in turn and followed from the
/// start (`Last-Event-ID: 0`) on the next one; checks every event arrives once and in order on
/// both streams, identical. The agent writes the time into each text chunk, so the latency of
/// a chunk is its arrival time minus the time the agent made it (one clock: same machine).
async fn load(bases: &[String], n: usize) -> LoadReport {
    let http = client();
    let started = Instant::now();
    let mut runs = Vec::with_capacity(n);
    for i in 0..n {
        let http = http.clone();
        let here = bases[i % bases.len()].clone();
        let there = bases[(i + 1) % bases.len()].clone();
        runs.push(tokio::spawn(async move {
            let stream = send_streaming(&http, &here, "load", None).await;
            let mut sent = Box::pin(stream);
            let head = sent.next().await.expect("first event");
            let id = task_id_of(&head.event);
            let resp = rpc_request(&http, &there, "SubscribeToTask", json!({"id": id}), Some(0)).await;
            let followed = tokio::spawn(events(resp).collect::<Vec<Got>>());
            let mut sent_all = vec![head];
            sent_all.extend(sent.collect::<Vec<Got>>().await);
            let followed = followed.await.expect("join");
            (sent_all, followed)
        }));
    }
    let mut report = LoadReport {
        streams: n,
        events: 0,
        seconds: 0.0,
        local: Vec::new(),
        followed: Vec::new(),
    };
    for run in runs {
        let (sent, followed) = run.await.expect("a stream failed");
        assert_consecutive(&sent, 1);
        assert_consecutive(&followed, 1);
        assert_eq!(state_of(&sent[sent.len() - 1].event), Some("TASK_STATE_COMPLETED"));
        let a: Vec<&Value> = sent.iter().map(|g| &g.event).collect();
        let b: Vec<&Value> = followed.iter().map(|g| &g.event).collect();
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            panic!(
                "the follower's event {} differs from the sender's:\n  sent:     {:?}\n  followed: {:?}",
                i + 1,
                a.get(i),
                b.get(i)
            );
        }
        report.events += sent.len() + followed.len();
        let chunks = latencies(&sent);
        assert_eq!(chunks.len(), CHUNKS, "every text chunk arrived with its time");
        report.local.extend(chunks);
        report.followed.extend(latencies(&followed));
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

#[test]
fn load_1000_streams_over_two_gateways_every_event_once_and_in_order() {
    let Some(url) = postgres() else { return };
    // the stream counts to run (comma-separated): a moderate load, then the 1,000
    let counts: Vec<usize> = std::env::var("E2A_LOAD_STREAMS")
        .unwrap_or_else(|_| "200,1000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let script = script_file(dir.path());
    let rt = runtime();
    let limit = Duration::from_secs(240);
    let extra = ["--max-streams", "4096", "--store-pool", "24"];
    let mut table = vec![
        "| store | streams | events delivered | seconds | events/s | latency ms, p50 / p99: running gateway | latency ms, p50 / p99: follower's gateway |".to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    for (run, &n) in counts.iter().enumerate() {
        let db = rt.block_on(fresh_database(&url));
        let pg = {
            let a = serve(&db, &script, &extra);
            let b = serve(&db, &script, &extra);
            let bases = vec![a.base.clone(), b.base.clone()];
            rt.block_on(async { tokio::time::timeout(limit, load(&bases, n)).await })
                .expect("the PostgreSQL run finished in time")
        };
        let sqlite = {
            let file = format!("sqlite:{}", dir.path().join(format!("tasks-{run}.db")).display());
            let one = serve(&file, &script, &extra);
            let bases = vec![one.base.clone()];
            rt.block_on(async { tokio::time::timeout(limit, load(&bases, n)).await })
                .expect("the SQLite run finished in time")
        };
        assert_eq!(
            pg.followed.len(),
            CHUNKS * n,
            "every chunk reached the follower with its time"
        );
        assert_eq!(
            sqlite.followed.len(),
            CHUNKS * n,
            "every chunk reached the follower with its time"
        );
        table.push(pg.line("PostgreSQL, two gateways (follower on the other)"));
        table.push(sqlite.line("SQLite, one gateway"));
    }
    let table = table.join("\n");
    println!("{table}");
    if let Ok(out) = std::env::var("E2A_LOAD_REPORT") {
        std::fs::write(out, format!("{table}\n")).expect("write the report");
    }
}

/// The `data:` payloads of an SSE body, as JSON.
fn sse_data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// `POST` of `body` (JSON) to `url`: the status and the body's text.
async fn post_json(http: &reqwest::Client, url: String, body: &Value) -> (u16, String) {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

/// `GET url`: the body as JSON.
async fn get_json<T: serde::de::DeserializeOwned>(http: &reqwest::Client, url: String) -> T {
    let resp = http.get(url).send().await.expect("get");
    resp.json().await.expect("json")
}

/// The E2A run `id` at `base`, once it is not `running` (bounded).
async fn run_settled(http: &reqwest::Client, base: &str, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let run: Value = get_json(http, format!("{base}/v1/e2a/runs/{id}")).await;
        if run["state"] != "running" {
            return run;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "still {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the AG-UI events or E2A frames said as text.
fn text_said(items: &[Value]) -> String {
    items
        .iter()
        .filter_map(|e| match e["type"].as_str() {
            Some("TEXT_MESSAGE_CONTENT") => e["delta"].as_str(),
            _ if e["body"]["delta_kind"] == "text" => e["body"]["delta"].as_str(),
            _ => None,
        })
        .collect()
}

#[test]
fn an_agui_interrupt_and_a_paused_e2a_run_asked_on_one_gateway_are_answered_on_the_other() {
    let Some(Pair { rt, a, b, .. }) = two_gateways(&["--agui"]) else {
        return;
    };
    rt.block_on(async {
        let http = client();
        // AG-UI: the run on A ends with two interrupts; GoAI's resume body (the run's id, no
        // thread) on B answers both, and B's agent goes on where A's stopped
        let run = json!({"threadId": "t-pg", "runId": "r-pg",
            "messages": [{"id": "m1", "role": "user", "content": "plan a trip"}]});
        let (status, text) = post_json(&http, format!("{}/agui", a.base), &run).await;
        assert_eq!(status, 200, "{text}");
        let asked = sse_data(&text);
        assert_eq!(text_said(&asked), "planning ");
        let last = asked.last().expect("events");
        assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
        let interrupts = last["outcome"]["interrupts"].as_array().expect("interrupts");
        assert_eq!(interrupts.len(), 2, "{last}");
        let answer = json!({"runId": "r-pg", "resume": [
            {"interruptId": interrupts[0]["id"], "status": "resolved", "payload": "4"},
            {"interruptId": interrupts[1]["id"], "status": "resolved", "payload": "Oslo"}]});
        let (status, text) = post_json(&http, format!("{}/agui", b.base), &answer).await;
        assert_eq!(status, 200, "{text}");
        let done = sse_data(&text);
        assert_eq!(done[0]["threadId"], "t-pg", "{text}");
        assert_eq!(text_said(&done), "trip for 4\nOslo");
        assert_eq!(done.last().expect("events")["type"], "RUN_FINISHED");
        // the interrupt is taken: answering it again, on either gateway, is refused, naming
        // the thread the run was on
        for base in [&a.base, &b.base] {
            let (status, text) = post_json(&http, format!("{base}/agui"), &answer).await;
            assert_eq!(status, 422, "{text}");
            let problem: Value = serde_json::from_str(&text).expect("problem");
            assert_eq!(
                problem["detail"], "resume names no pending interrupt of thread \"t-pg\"",
                "{text}"
            );
        }

        // the E2A run resource: paused on A, answered on B, both listed on either
        let ask = json!({"method": "chat.send", "request_id": "ask-pg", "session_id": "s-pg",
            "params": {"query": "book a table"}});
        let (status, text) = post_json(&http, format!("{}/v1/e2a/runs", a.base), &ask).await;
        assert_eq!(status, 202, "{text}");
        assert_eq!(run_settled(&http, &a.base, "ask-pg").await["state"], "paused");
        let reply = json!({"method": "chat.send", "request_id": "answer-pg", "session_id": "s-pg",
            "params": {"query": "4"}});
        let (status, text) = post_json(&http, format!("{}/v1/e2a/runs", b.base), &reply).await;
        assert_eq!(status, 202, "{text}");
        assert_eq!(run_settled(&http, &b.base, "answer-pg").await["state"], "succeeded");
        let frames: Vec<Value> = get_json(&http, format!("{}/v1/e2a/runs/answer-pg/frames", a.base)).await;
        assert_eq!(text_said(&frames), "booked for 4", "read on A, run on B");
        for base in [&a.base, &b.base] {
            let page: Value = get_json(&http, format!("{base}/v1/e2a/runs")).await;
            let ids: Vec<&str> = page["runs"]
                .as_array()
                .expect("runs")
                .iter()
                .filter_map(|r| r["run_id"].as_str())
                .collect();
            assert_eq!(ids, ["answer-pg", "ask-pg"], "{page}");
        }
    });
}

/// Two gateways on one PostgreSQL whose agent delegates with callbacks, and a third gateway as the
/// child: a run started on the first is left waiting for the child's callback, the first is
/// killed (SIGKILL) while the child works, and the callback — addressed to the second — is
/// answered `503` while the first's lease holds (the run may still be going there: the child's
/// push sender retries), then finishes the run there once the lease has run out: a client reads
/// the child's answer from the second.
#[test]
fn a_delegated_run_of_a_killed_gateway_is_finished_by_the_gateway_its_callback_reaches() {
    let Some(url) = postgres() else { return };
    let rt = runtime();
    let db = rt.block_on(fresh_database(&url));
    let dir = tempfile::tempdir().expect("tmp");
    let child = common::child_gateway(dir.path(), 2500, "");
    let b_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let b_bind = format!("127.0.0.1:{b_port}");
    let ca = std::env::var("E2A_TEST_POSTGRES_CA").unwrap_or_default();
    // a lease long enough that the child's first callback finds it holding
    let mut store_extra = "lease_secs = 15\n".to_string();
    if !ca.is_empty() {
        store_extra.push_str(&format!("ca_file = \"{ca}\"\n"));
    }
    let config = common::delegating_config(
        dir.path(),
        "parent.toml",
        &db,
        (&store_extra, ""),
        &format!("http://{b_bind}"),
        &child.base,
    );
    let args = ["--config", config.to_str().expect("path")];
    let (a_log, b_log) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let _logs = common::LogsOnFailure(vec![a_log.clone(), b_log.clone()]);
    let mut a = common::serve_logged("127.0.0.1:0", &args, &a_log);
    let b = common::serve_logged(&b_bind, &args, &b_log);
    rt.block_on(async {
        common::submit_to_planner(&a.base, "deleg-pg", "write the report").await;
        let r = common::planner_run_until(&a.base, "deleg-pg", Duration::from_secs(10), |r| {
            r["frames"].as_u64().unwrap_or(0) >= 1
        })
        .await;
        assert_eq!(r["state"], "running", "{r}");
    });
    a.kill();
    rt.block_on(async {
        // seen from the other gateway, the run waits (its gateway's lease, then its mark)
        let r = common::planner_run(&b.base, "deleg-pg").await;
        assert_eq!(r["state"], "running", "{r}");
        common::planner_reported(&b.base, "deleg-pg", Duration::from_secs(60)).await;
    });
    let log = std::fs::read_to_string(&b_log).unwrap_or_default();
    assert!(
        log.contains("callback refused") && log.contains("not reachable now; retry later"),
        "the first callback is answered 503 while the lease holds:\n{log}"
    );
}
