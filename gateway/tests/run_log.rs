//! The durable run log: an E2A (or AG-UI) run's frames are kept by the task store, so a
//! `Last-Event-ID` resume works after a restart on SQLite and on another gateway sharing a
//! PostgreSQL store — and a run whose gateway is gone ends with an error frame, the same for
//! every reader.

mod common;

use std::sync::Arc;

use common::{essence, read_frames, script, sse_events, sse_frames};
use e2a::E2AResponse;
use e2a_gateway::store::{FrameWrite, RunLog, RunPage, RunQuery, RunSummary, StoreError};
use e2a_gateway::store::{MemoryStore, RunStore, Sends, SqliteStore, Stores, TaskLog};
use e2a_gateway::{Gateway, GatewayConfig};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// A gateway on 127.0.0.1 keeping runs in `store`; dropping it aborts the server like a crash.
async fn serve(config: GatewayConfig, store: impl Into<Stores>) -> common::Crashable {
    common::serve_crashable(Gateway::new(script(), config).with_store(store).with_agui()).await
}

/// A script agent of one scenario, `name`, answering a query with that text by `steps`.
fn scenario(name: &str, steps: Value) -> e2a_gateway::backends::script::ScriptAgent {
    let script = json!({"scenarios": [{"name": name, "match": {"text": name}, "steps": steps}]});
    e2a_gateway::backends::script::ScriptAgent::from_json(&script.to_string()).expect("script")
}

fn request(id: &str, text: &str) -> Value {
    json!({"method": "chat.send", "request_id": id, "params": {"query": text}})
}

async fn send(base: &str, body: &Value, last_event_id: Option<u64>) -> reqwest::Response {
    send_as(base, body, "text/event-stream", last_event_id).await
}

async fn send_as(base: &str, body: &Value, accept: &str, last_event_id: Option<u64>) -> reqwest::Response {
    let mut req = common::client()
        .post(format!("{base}/v1/e2a/requests"))
        .header("accept", accept)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id.to_string());
    }
    req.send().await.expect("send")
}

async fn all_frames(base: &str, body: &Value, last_event_id: Option<u64>) -> Vec<E2AResponse> {
    let resp = send(base, body, last_event_id).await;
    assert_eq!(resp.status(), 200);
    sse_frames(&resp.text().await.expect("body"))
}

fn essences(frames: &[E2AResponse]) -> Vec<Value> {
    frames.iter().map(essence).collect()
}

#[tokio::test]
async fn an_e2a_run_is_resumed_after_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gateway.db");
    let body = request("count-1", "count slowly");
    let whole = {
        let s = serve(common::fast_config(), Arc::new(SqliteStore::open(&path).expect("open"))).await;
        all_frames(&s.base, &body, None).await
    };
    assert!(whole.len() > 4 && whole.last().is_some_and(|f| f.is_final), "{whole:?}");
    let s = serve(
        common::fast_config(),
        Arc::new(SqliteStore::open(&path).expect("reopen")),
    )
    .await;
    let after = whole[2].sequence;
    let resumed = all_frames(&s.base, &body, Some(after)).await;
    assert_eq!(essences(&resumed), essences(&whole[3..]));
    // the very same frames, ids and times included
    assert_eq!(resumed[0].to_json(), whole[3].to_json());
    // JSON: the final frame
    let resp = send_as(&s.base, &body, "application/json", Some(0)).await;
    let last = E2AResponse::from_json(&resp.text().await.expect("body")).expect("frame");
    assert_eq!(last.to_json(), whole[whole.len() - 1].to_json());
    // a request id nobody sent is not found
    let resp = send(&s.base, &request("count-2", "count slowly"), Some(0)).await;
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn a_run_whose_gateway_died_ends_with_an_error_frame_for_every_reader() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gateway.db");
    let body = request("forever-1", "never finish");
    let seen = {
        let s = serve(common::fast_config(), Arc::new(SqliteStore::open(&path).expect("open"))).await;
        let mut resp = send(&s.base, &body, None).await;
        read_frames(&mut resp, 1).await
        // the gateway is aborted here, its run unfinished
    };
    assert_eq!(seen.len(), 1);
    let s = serve(
        common::fast_config(),
        Arc::new(SqliteStore::open(&path).expect("reopen")),
    )
    .await;
    let resumed = all_frames(&s.base, &body, Some(seen[0].sequence)).await;
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    let end = &resumed[0];
    assert!(end.is_final);
    assert_eq!(end.sequence, seen[0].sequence + 1);
    assert_eq!(end.body["code"], "E2A.INTERNAL", "{end:?}");
    assert_eq!(end.body["details"]["reason"], "gateway_gone");
    assert_eq!(end.request_id.as_deref(), Some("forever-1"));
    // the end is stored: a second reader gets the same frame
    let again = all_frames(&s.base, &body, Some(seen[0].sequence)).await;
    assert_eq!(again[0].to_json(), end.to_json());
}

#[tokio::test]
async fn an_agui_run_is_resumed_by_last_event_id_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gateway.db");
    let input = json!({"threadId": "t-1", "runId": "r-1", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "weather please"}]});
    let post = |base: &str, last: Option<&str>| {
        let mut req = common::client()
            .post(format!("{base}/agui"))
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(input.to_string());
        if let Some(l) = last {
            req = req.header("last-event-id", l);
        }
        req.send()
    };
    let whole = {
        let s = serve(common::fast_config(), Arc::new(SqliteStore::open(&path).expect("open"))).await;
        let text = post(&s.base, None).await.expect("send").text().await.expect("body");
        sse_events(&text)
    };
    let ids: Vec<Option<u64>> = whole.iter().map(|(id, _)| *id).collect();
    let numbered: Vec<Option<u64>> = (1..=whole.len() as u64).map(Some).collect();
    assert_eq!(ids, numbered, "AG-UI events are numbered 1, 2, 3 …");
    assert_eq!(
        whole.last().map(|(_, e)| e["type"].clone()),
        Some(json!("RUN_FINISHED"))
    );
    let s = serve(
        common::fast_config(),
        Arc::new(SqliteStore::open(&path).expect("reopen")),
    )
    .await;
    let resp = post(&s.base, Some("3")).await.expect("send");
    assert_eq!(resp.status(), 200);
    let resumed = sse_events(&resp.text().await.expect("body"));
    assert_eq!(resumed, whole[3..].to_vec());
    // a run nobody started
    let resp = common::client()
        .post(format!("{}/agui", s.base))
        .header("content-type", "application/json")
        .header("last-event-id", "1")
        .body(json!({"threadId": "t-1", "runId": "r-unknown", "messages": []}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn an_ended_run_kept_in_memory_is_resumed_with_the_frames_it_streamed() {
    let s = serve(common::fast_config(), Arc::new(MemoryStore::new())).await;
    let body = request("ended-1", "weather please");
    let frames = all_frames(&s.base, &body, None).await;
    assert!(frames.len() > 2, "{frames:?}");
    // the ended run is kept in its compact form: read back, frame for frame (ids and times too)
    assert_eq!(all_frames(&s.base, &body, Some(0)).await, frames[1..]);
    assert_eq!(all_frames(&s.base, &body, Some(1)).await, frames[2..]);
    // the final frame alone, as JSON, holding what the frames after 0 carried (the tool call)
    let resp = send_as(&s.base, &body, "application/json", Some(0)).await;
    assert_eq!(resp.status(), 200);
    let last = resp.text().await.expect("body");
    let (final_frame, before) = frames.split_last().expect("frames");
    let mut whole = e2a::shown::WholeAnswer::default();
    before[1..]
        .iter()
        .for_each(|f| whole.push(&e2a::frame::Frame::from(f.clone())));
    let expected = whole
        .finish(&e2a::frame::Frame::from(final_frame.clone()))
        .expect("the tool call is added");
    assert!(
        expected.body["result"]["tool_calls"].is_array(),
        "{}",
        expected.to_json()
    );
    assert_eq!(last, expected.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_ended_run_is_compacted_aside_and_resumed_whole() {
    // more frames than are compacted on the runtime's own threads
    let script = json!({"scenarios": [{"name": "long", "match": {"text": "long"}, "steps": [
        {"type": "text", "text": "x".repeat(6000), "chunk_size": 1},
        {"type": "complete", "result": {"content": "done"}}
    ]}]});
    let agent = e2a_gateway::backends::ScriptAgent::from_json(&script.to_string()).expect("script");
    let config = GatewayConfig {
        max_retained: 1,
        ..common::fast_config()
    };
    let s = common::serve_crashable(Gateway::new(agent, config).with_store(Arc::new(MemoryStore::new()))).await;
    let body = request("long-1", "long");
    let frames = all_frames(&s.base, &body, None).await;
    assert_eq!(frames.len(), 6001);
    for _ in 0..2 {
        assert_eq!(all_frames(&s.base, &body, Some(5990)).await, frames[5991..]);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // it was kept as ended: the next run to end, one past `max_retained`, pushes it out
    all_frames(&s.base, &request("long-2", "long"), None).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(send(&s.base, &body, Some(0)).await.status(), 404);
    assert_eq!(
        send(&s.base, &request("long-2", "long"), Some(6000)).await.status(),
        200
    );
}

#[tokio::test]
async fn retention_in_memory_is_bounded_by_bytes() {
    let config = GatewayConfig {
        max_retained_bytes: 1,
        ..common::fast_config()
    };
    let s = serve(config, Arc::new(MemoryStore::new())).await;
    let first = request("kept-1", "weather please");
    all_frames(&s.base, &first, None).await;
    // the newest run past the bound goes as soon as it ends: nothing to resume
    let resp = send(&s.base, &first, Some(0)).await;
    assert_eq!(resp.status(), 404);
    let s = serve(common::fast_config(), Arc::new(MemoryStore::new())).await;
    all_frames(&s.base, &first, None).await;
    assert_eq!(send(&s.base, &first, Some(0)).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_e2a_run_started_on_one_gateway_is_resumed_on_another() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let first: Stores = Arc::new(common::pg(&url).await).into();
    let a = serve(common::fast_config(), first.clone()).await;
    let body = request("count-pg", "count slowly");
    let mut on_a = send(&a.base, &body, None).await;
    let early = read_frames(&mut on_a, 2).await;
    assert_eq!(early.len(), 2);
    // gateway B shares the database (a store of its own, as in another process)
    let b = serve(common::fast_config(), Arc::new(common::pg(&url).await)).await;
    // B follows the run while A still runs it
    let on_b = all_frames(&b.base, &body, Some(early[1].sequence)).await;
    let rest_a = sse_frames(&on_a.text().await.expect("body"));
    let whole: Vec<E2AResponse> = early.into_iter().chain(rest_a).collect();
    assert!(whole.last().is_some_and(|f| f.is_final));
    let tail: Vec<String> = whole[2..].iter().map(E2AResponse::to_json).collect();
    let on_b: Vec<String> = on_b.iter().map(E2AResponse::to_json).collect();
    assert_eq!(on_b, tail, "B serves exactly A's frames after the id");
    // and after the run ended, from the log alone
    let again = all_frames(&b.base, &body, Some(0)).await;
    assert_eq!(again.len(), whole.len() - 1);
}

/// A run is in the store from its start, not from its first frames: the `202` of a run
/// resource on gateway A names a run gateway B (one PostgreSQL store) finds at once, while A's
/// agent has not answered yet — and B refuses the same `request_id` as a run that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_is_known_to_every_gateway_before_its_first_frame() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let agent = || {
        scenario(
            "slow start",
            json!([{"type": "text", "text": "at last", "delay_ms": 1500}, {"type": "complete"}]),
        )
    };
    let on = |store: Stores| common::serve_crashable(Gateway::new(agent(), common::fast_config()).with_store(store));
    let a = on(Arc::new(common::pg(&url).await).into()).await;
    let b = on(Arc::new(common::pg(&url).await).into()).await;
    let id = format!("slow-{}", uuid::Uuid::new_v4());
    let body = request(&id, "slow start");
    let submitted = common::client()
        .post(format!("{}/v1/e2a/runs", a.base))
        .json(&body)
        .send()
        .await
        .expect("submit");
    assert_eq!(submitted.status(), 202);
    let on_b = common::client()
        .get(format!("{}/v1/e2a/runs/{id}", b.base))
        .send()
        .await
        .expect("get");
    assert_eq!(on_b.status(), 200, "B knows the run before its first frame");
    let run: Value = on_b.json().await.expect("json");
    assert_eq!(
        (run["state"].as_str(), run["frames"].as_u64()),
        (Some("running"), Some(0)),
        "{run}"
    );
    let again = common::client()
        .post(format!("{}/v1/e2a/runs", b.base))
        .json(&body)
        .send()
        .await
        .expect("submit");
    assert_eq!(again.status(), 409, "the same request_id on B: a run that exists");
    // and it ends as A runs it
    let done = all_frames(&b.base, &body, Some(0)).await;
    assert!(done.last().is_some_and(|f| f.is_final), "{done:?}");
}

/// A reader on gateway B of a run going on at gateway A (one PostgreSQL store) is woken by the
/// store's notices when A stores frames: it reads the log once per batch A wrote, not on a
/// timer (a run of four frames 700 ms apart was read about twenty times at the old 100 ms
/// poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_reader_of_a_run_on_another_gateway_is_woken_by_notices() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let agent = || {
        scenario(
            "spaced",
            json!([
                {"type": "text", "text": "a "},
                {"type": "text", "text": "b ", "delay_ms": 700},
                {"type": "text", "text": "c ", "delay_ms": 700},
                {"type": "complete", "delay_ms": 700}
            ]),
        )
    };
    let a_store: Stores = Arc::new(common::pg(&url).await).into();
    let a = common::serve_crashable(Gateway::new(agent(), common::fast_config()).with_store(a_store)).await;
    let (counting, b_store) = Watched::around(Arc::new(common::pg(&url).await).into(), i64::MAX);
    let b = common::serve_crashable(Gateway::new(agent(), common::fast_config()).with_store(b_store)).await;
    let body = request(&format!("spaced-{}", uuid::Uuid::new_v4()), "spaced");
    let mut on_a = send(&a.base, &body, None).await;
    let early = read_frames(&mut on_a, 1).await;
    let on_b = all_frames(&b.base, &body, Some(early[0].sequence)).await;
    let rest_a = sse_frames(&on_a.text().await.expect("body"));
    let tail: Vec<String> = rest_a.iter().map(E2AResponse::to_json).collect();
    let on_b: Vec<String> = on_b.iter().map(E2AResponse::to_json).collect();
    assert_eq!(on_b, tail, "B serves exactly A's frames after the id");
    let reads = counting.reads.load(std::sync::atomic::Ordering::SeqCst);
    // the first read, one per batch A stored (3), and a few a slow notice may add
    assert!(reads <= 8, "B read the run's log {reads} times");
}

/// A store's run log, watched: its appends fail once `budget` of them were taken (a full
/// disk), and the reads of a run's log are counted.
struct Watched {
    inner: Arc<dyn RunStore>,
    budget: std::sync::atomic::AtomicI64,
    reads: std::sync::atomic::AtomicUsize,
}

impl Watched {
    /// `stores` with their run log watched, appends failing after `budget`.
    fn around(stores: Stores, budget: i64) -> (Arc<Watched>, Stores) {
        let watched = Arc::new(Watched {
            inner: stores.runs.clone().expect("a store that keeps runs"),
            budget: budget.into(),
            reads: Default::default(),
        });
        let stores = Stores {
            runs: Some(watched.clone()),
            ..stores
        };
        (watched, stores)
    }
}

impl RunStore for Watched {
    fn append_frames(&self, write: FrameWrite) -> BoxFuture<'_, Result<(), StoreError>> {
        use std::sync::atomic::Ordering;
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Box::pin(async { Err(StoreError::Backend("database or disk is full".into())) });
        }
        self.inner.append_frames(write)
    }
    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> BoxFuture<'a, Result<Option<RunLog>, StoreError>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.run_after(key, after)
    }
    fn run_summary<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<RunSummary>, StoreError>> {
        self.inner.run_summary(key)
    }
    fn list_runs(&self, query: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
        self.inner.list_runs(query)
    }
    fn renew_runs<'a>(
        &'a self,
        holder: &'a str,
        keys: Vec<String>,
        lease: std::time::Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.renew_runs(holder, keys, lease)
    }
    fn prune_runs(&self, older_than: std::time::Duration, keep: usize) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.prune_runs(older_than, keep)
    }
}

#[tokio::test]
async fn a_run_whose_frames_cannot_be_stored_fails_and_shows_nothing_unstored() {
    let (store, stores) = Watched::around(Arc::new(SqliteStore::in_memory().expect("store")).into(), 3);
    let s = serve(common::fast_config(), stores).await;
    let body = request("count-full", "count slowly");
    let frames = all_frames(&s.base, &body, None).await;
    let end = frames.last().expect("a final frame");
    assert!(end.is_final);
    assert_eq!(end.body["code"], "E2A.INTERNAL", "{end:?}");
    assert_eq!(end.body["details"]["reason"], "store_failed");
    common::assert_valid_stream(&frames);
    // every frame before the end is in the store, at its place
    let key = "e2a:count-full";
    let log = store.inner.run_after(key, None).await.expect("read").expect("the run");
    let stored: Vec<String> = log.frames.iter().map(|f| f.frame.clone()).collect();
    let shown: Vec<String> = frames[..frames.len() - 1].iter().map(E2AResponse::to_json).collect();
    assert_eq!(stored, shown);
    assert!(!log.ended);
}

/// `POST /v1/e2a/requests` with `key` as its `Idempotency-Key`: status and body.
async fn keyed(base: &str, key: &str, body: &str, accept: &str) -> (u16, String) {
    let resp = common::client()
        .post(format!("{base}/v1/e2a/requests"))
        .header("Idempotency-Key", key)
        .header("Content-Type", "application/json")
        .header("Accept", accept)
        .body(body.to_string())
        .send()
        .await
        .expect("send");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

#[tokio::test]
async fn a_request_sent_again_under_its_idempotency_key_gets_the_first_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let first_body = r#"{"method":"chat.send","params":{"query":"hi there"}}"#;
    let (first, frames) = {
        let s = serve(common::fast_config(), Arc::new(SqliteStore::open(&path).expect("open"))).await;
        let (status, first) = keyed(&s.base, "k-1", first_body, "application/json").await;
        assert_eq!(status, 200, "{first}");
        // the same request (keys in another order): the same final frame, byte for byte — the
        // agent did not run again (a new run has new frame ids and times)
        let reordered = r#"{"params":{"query":"hi there"},"method":"chat.send"}"#;
        assert_eq!(
            keyed(&s.base, "k-1", reordered, "application/json").await,
            (200, first.clone())
        );
        // streamed: every frame of that run, the last one the same
        let (status, sse) = keyed(&s.base, "k-1", first_body, "text/event-stream").await;
        assert_eq!(status, 200);
        let frames = common::sse_frames(&sse);
        assert!(frames.len() > 1, "{sse}");
        assert_eq!(frames.last().map(|f| f.to_json()), Some(first.clone()));
        // another request under the key: 409, naming the key
        let (status, problem) = keyed(
            &s.base,
            "k-1",
            r#"{"method":"chat.send","params":{"query":"else"}}"#,
            "application/json",
        )
        .await;
        assert_eq!(status, 409, "{problem}");
        assert!(
            problem.contains("k-1") && problem.contains("Idempotency-Key"),
            "{problem}"
        );
        // another key: a run of its own
        let (status, other) = keyed(&s.base, "k-2", first_body, "application/json").await;
        assert_eq!(status, 200);
        assert_ne!(other, first);
        (first, frames)
    };
    // after a restart on the same file: still the first answer
    let s = serve(
        common::fast_config(),
        Arc::new(SqliteStore::open(&path).expect("reopen")),
    )
    .await;
    assert_eq!(
        keyed(&s.base, "k-1", first_body, "application/json").await,
        (200, first)
    );
    let (_, sse) = keyed(&s.base, "k-1", first_body, "text/event-stream").await;
    assert_eq!(common::sse_frames(&sse), frames);
}

#[tokio::test]
async fn idempotency_keys_in_memory_are_kept_no_longer_than_their_runs() {
    let config = GatewayConfig {
        max_retained: 2,
        ..common::fast_config()
    };
    let s = serve(config, Arc::new(MemoryStore::new())).await;
    let body = |q: &str| format!(r#"{{"method":"chat.send","params":{{"query":"{q}"}}}}"#);
    for k in 1..=4 {
        let (status, answer) = keyed(&s.base, &format!("k-{k}"), &body("hi"), "application/json").await;
        assert_eq!(status, 200, "{answer}");
    }
    // the newest keys are kept: another request under one is a conflict
    let (status, problem) = keyed(&s.base, "k-4", &body("else"), "application/json").await;
    assert_eq!(status, 409, "{problem}");
    // the oldest key went with its run (two runs kept): the key is free again
    let (status, answer) = keyed(&s.base, "k-1", &body("else"), "application/json").await;
    assert_eq!(status, 200, "{answer}");
}

/// An ended run stays in the store for the store's retention (`store.run_retention_hours`),
/// however soon memory lets it go: a resume reads it back from the store until then, and not
/// after.
#[tokio::test]
async fn ended_runs_stay_in_the_store_for_its_retention_not_memorys() {
    use std::time::{Duration, Instant};
    let config = GatewayConfig {
        // memory forgets an ended run at once
        retention: Duration::from_millis(1),
        max_retained: 0,
        stored_retention: Duration::from_secs(2),
        ..common::fast_config()
    };
    let s = serve(config, Arc::new(SqliteStore::in_memory().expect("sqlite"))).await;
    let body = request("kept-1", "hello");
    let whole = all_frames(&s.base, &body, None).await;
    let ended = Instant::now();
    assert!(whole.last().is_some_and(|f| f.is_final), "{whole:?}");
    // the store is pruned every quarter of its retention: twice by now, the run younger than it
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let resumed = all_frames(&s.base, &body, Some(0)).await;
    assert_eq!(essences(&resumed), essences(&whole[1..]), "read back from the store");
    // past the store's retention the run is gone
    loop {
        if send(&s.base, &body, Some(0)).await.status() == 404 {
            break;
        }
        assert!(
            ended.elapsed() < Duration::from_secs(20),
            "the run outlived the store's retention"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended.elapsed() >= Duration::from_secs(2), "forgotten before its time");
}

/// Run `key` started and ended in one write: a head and a final frame.
fn ended_run(key: &str) -> FrameWrite {
    FrameWrite {
        key: key.into(),
        run: format!("run-{key}"),
        head: Some(e2a_gateway::store::RunHead {
            request: request(key, "hi").to_string(),
            holder: "gateway-1".into(),
            lease: std::time::Duration::from_secs(30),
        }),
        frames: vec![e2a_gateway::store::StoredFrame {
            seq: 0,
            frame: json!({"sequence": 0, "is_final": true}).to_string(),
            is_final: true,
        }],
    }
}

/// What a store that keeps runs forgets of them, and of the E2A requests' `Idempotency-Key`
/// records: by age and by count, and nothing of what A2A callers sent.
async fn run_retention_contract(store: &(impl RunStore + Sends + TaskLog)) {
    for key in ["k1", "k2", "k3"] {
        store.append_frames(ended_run(key)).await.expect("append");
        // each run written at a later millisecond than the one before
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let sent = |key: &str, age_ms: i64, fingerprint: &str| e2a_gateway::store::SentRecord {
        owner: "ann".into(),
        key: key.into(),
        fingerprint: fingerprint.into(),
        task_id: "r".into(),
        at_ms: now - age_ms,
    };
    for (key, age) in [
        ("e2a:a", 30_000),
        ("e2a:b", 20_000),
        ("e2a:c", 1_000),
        ("message:m", 9_000_000),
    ] {
        assert_eq!(
            store.remember_send(sent(key, age, "first")).await.expect("remember"),
            None
        );
    }
    // a record still kept answers with the first one; one forgotten is taken anew
    let kept = |key: &'static str| async move {
        store
            .remember_send(sent(key, 0, "again"))
            .await
            .expect("remember")
            .is_some_and(|first| first.fingerprint == "first")
    };

    // by count: the two most recent runs, and the two most recent E2A records, stay
    let gone = store
        .prune_runs(std::time::Duration::from_secs(3_600), 2)
        .await
        .expect("prune");
    assert_eq!(gone, 1, "{}", store.name());
    assert_eq!(
        store.run_after("k1", None).await.expect("read"),
        None,
        "{}",
        store.name()
    );
    for key in ["k2", "k3"] {
        assert!(
            store.run_after(key, None).await.expect("read").is_some(),
            "{}: {key}",
            store.name()
        );
    }
    assert!(!kept("e2a:a").await, "{}", store.name());
    assert!(kept("e2a:b").await && kept("e2a:c").await, "{}", store.name());
    // an A2A caller's record goes with the tasks, not with the runs
    assert!(kept("message:m").await, "{}", store.name());

    // by age: older than 10 s ("e2a:a" was taken anew just now and stays)
    store
        .prune_runs(std::time::Duration::from_secs(10), 100)
        .await
        .expect("prune");
    assert!(!kept("e2a:b").await, "{}", store.name());
    assert!(kept("e2a:c").await && kept("message:m").await, "{}", store.name());
}

#[tokio::test]
async fn sqlite_forgets_old_runs_and_their_idempotency_keys() {
    run_retention_contract(&SqliteStore::in_memory().expect("sqlite")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_forgets_old_runs_and_their_idempotency_keys() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    run_retention_contract(&common::pg(&url).await).await;
}

/// The answer as one frame holds what the stream carried whichever way it is made: for the
/// reader that waited for the run (from the frames as made, when the run is compacted) and for
/// one that came after the run ended (read back from the compacted text).
#[tokio::test]
async fn a_json_answer_is_the_same_made_at_the_end_or_read_back_later() {
    let s = serve(common::fast_config(), Arc::new(MemoryStore::new())).await;
    let body = r#"{"method":"chat.send","params":{"query":"weather please"}}"#;
    // streamed first: nobody waits for the whole answer; then the same request as JSON
    let (status, _) = keyed(&s.base, "late", body, "text/event-stream").await;
    assert_eq!(status, 200);
    let (status, later) = keyed(&s.base, "late", body, "application/json").await;
    assert_eq!(status, 200, "{later}");
    // a new run asked for as JSON from the start
    let (status, waited) = keyed(&s.base, "waited", body, "application/json").await;
    assert_eq!(status, 200, "{waited}");
    let result = |json: &str| E2AResponse::from_json(json).expect("a frame").body["result"].clone();
    let (later, waited) = (result(&later), result(&waited));
    assert_eq!(later["tool_calls"][0]["name"], "get_weather", "{later}");
    assert_eq!(
        later["tool_calls"][0]["tool_call_id"],
        waited["tool_calls"][0]["tool_call_id"]
    );
    assert_eq!(later["tool_calls"][0]["result"], waited["tool_calls"][0]["result"]);
    assert_eq!(later["content"], waited["content"]);
}

/// A live run keeps at most `max_run_bytes` of its frames in memory: past it the oldest its
/// readers have read are forgotten (it waits for a reader that has not read them), a
/// `Last-Event-ID` before them is answered `404` naming the oldest still held, and the JSON
/// answer gathered as the frames came still holds every piece.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_memory_budget_forgets_its_oldest_frames_and_says_so() {
    let piece = "y".repeat(1000);
    let script = json!({"scenarios": [{"name": "long", "match": {"text": "long"}, "steps": [
        {"type": "text", "text": piece.repeat(400), "chunk_size": 1000},
        {"type": "complete", "result": {}}
    ]}]});
    let agent = e2a_gateway::backends::ScriptAgent::from_json(&script.to_string()).expect("script");
    let config = GatewayConfig {
        max_run_bytes: 64 << 10,
        ..common::fast_config()
    };
    let s = common::serve_crashable(Gateway::new(agent, config)).await;
    // a reader streaming the run gets every frame: the run waits for it rather than forget
    // what it has not read
    let streamed = all_frames(&s.base, &request("budget-0", "long"), None).await;
    assert_eq!(streamed.len(), 401);
    assert!(streamed.iter().enumerate().all(|(i, f)| f.sequence == i as u64));
    let body = request("budget-1", "long");
    let answer = send_as(&s.base, &body, "application/json", None).await;
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    assert_eq!(answer["sequence"], 400);
    let content = answer["body"]["result"]["content"].as_str().unwrap_or_default();
    assert_eq!(content.len(), 400 * 1000, "every piece is in the whole answer");
    // the run ended past its budget: only its newest frames are held
    let resp = send(&s.base, &body, Some(0)).await;
    assert_eq!(resp.status(), 404);
    let problem: Value = resp.json().await.expect("problem");
    let detail = problem["detail"].as_str().unwrap_or_default().to_string();
    assert!(detail.contains("no longer held"), "{problem}");
    let oldest: u64 = detail
        .split("before sequence ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the oldest sequence held is named");
    assert!(oldest > 300 && oldest <= 400, "{oldest}");
    // from there on, the frames are all there
    let rest = all_frames(&s.base, &body, Some(oldest - 1)).await;
    assert_eq!(rest.first().map(|f| f.sequence), Some(oldest));
    assert!(rest.last().is_some_and(|f| f.is_final && f.sequence == 400));
}

/// What a store that keeps runs tells of them in short: a run's first and last frames (not
/// those between), whether it ended and is leased; one caller's runs by key prefix (compared
/// as text: `%` and `_` in a caller's name match only themselves), newest first, paged.
async fn run_summary_contract(store: &(impl RunStore + TaskLog)) {
    use e2a_gateway::store::{RunHead, StoredFrame};
    let frame = |seq: u64, is_final: bool| StoredFrame {
        seq,
        frame: json!({"sequence": seq, "is_final": is_final}).to_string(),
        is_final,
    };
    let write = |key: &str, head: bool, frames: Vec<StoredFrame>| FrameWrite {
        key: key.into(),
        // time-ordered, as the gateway's run ids are
        run: format!("run-{}", key.rsplit(':').next().unwrap_or(key)),
        head: head.then(|| RunHead {
            request: request(key, "hi").to_string(),
            holder: "gateway-1".into(),
            lease: std::time::Duration::from_secs(30),
        }),
        frames,
    };
    let keys = [
        "3:a%b:e2a:r1",
        "3:a%b:e2a:r2",
        "3:a%b:e2a:r3",
        "3:aXb:e2a:r4",
        "3:a%b:agui:r5",
    ];
    for key in keys {
        store
            .append_frames(write(key, true, vec![frame(0, false)]))
            .await
            .expect("append");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // r2 goes on to its end; r1 is the oldest written
    store
        .append_frames(write(keys[1], false, vec![frame(1, false), frame(2, true)]))
        .await
        .expect("append");

    let r2 = store.run_summary(keys[1]).await.expect("read").expect("kept");
    assert_eq!(
        (r2.first.map(|f| f.seq), r2.last.as_ref().map(|f| (f.seq, f.is_final))),
        (Some(0), Some((2, true))),
        "{}",
        store.name()
    );
    assert!(r2.ended && r2.leased, "{}", store.name());
    assert_eq!(r2.request, request(keys[1], "hi").to_string());
    let r3 = store.run_summary(keys[2]).await.expect("read").expect("kept");
    assert!(!r3.ended, "{}", store.name());
    assert_eq!(r3.last.map(|f| (f.seq, f.is_final)), Some((0, false)));
    assert_eq!(store.run_summary("3:a%b:e2a:nope").await.expect("read"), None);

    let page = |before: Option<&str>, limit| {
        store.list_runs(RunQuery {
            prefix: "3:a%b:e2a:".into(),
            before: before.map(str::to_string),
            limit,
        })
    };
    // newest first by run id (the gateway's are time-ordered), whatever was written since
    let first = page(None, 2).await.expect("list");
    let keys_of = |p: &RunPage| p.runs.iter().map(|r| r.key.clone()).collect::<Vec<_>>();
    assert_eq!(first.total, 3, "{}", store.name());
    assert_eq!(keys_of(&first), [keys[2], keys[1]], "{}", store.name());
    let cursor = first.runs.last().map(|r| r.run.clone());
    let second = page(cursor.as_deref(), 2).await.expect("list");
    assert_eq!(keys_of(&second), [keys[0]], "{}", store.name());
    let cursor = second.runs.last().map(|r| r.run.clone());
    assert!(page(cursor.as_deref(), 2).await.expect("list").runs.is_empty());
}

#[tokio::test]
async fn sqlite_tells_runs_in_short_and_lists_a_callers_runs() {
    run_summary_contract(&SqliteStore::in_memory().expect("sqlite")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tells_runs_in_short_and_lists_a_callers_runs() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    run_summary_contract(&common::pg(&url).await).await;
}

/// A run going on at gateway A is cancelled through gateway B of the same PostgreSQL store:
/// B asks A by the store's notices and answers once the run ended, cancelled — a client behind
/// a load balancer need not find the gateway that runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_on_one_gateway_is_cancelled_through_another() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let a = serve(common::fast_config(), Arc::new(common::pg(&url).await)).await;
    let b = serve(common::fast_config(), Arc::new(common::pg(&url).await)).await;
    let id = format!("forever-{}", uuid::Uuid::new_v4());
    let submitted = common::client()
        .post(format!("{}/v1/e2a/runs", a.base))
        .header("content-type", "application/json")
        .body(request(&id, "never finish").to_string())
        .send()
        .await
        .expect("submit");
    assert_eq!(submitted.status(), 202);
    // B sees it going on once its first frame is stored (bounded)
    let mut running = false;
    for _ in 0..100 {
        let r = common::client()
            .get(format!("{}/v1/e2a/runs/{id}", b.base))
            .send()
            .await
            .expect("get");
        if r.status() == 200 {
            let run: Value = r.json().await.expect("json");
            if run["state"] == "running" && run["frames"].as_u64() > Some(0) {
                running = true;
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(running, "the run shows on B");
    let cancelled = common::client()
        .post(format!("{}/v1/e2a/runs/{id}:cancel", b.base))
        .send()
        .await
        .expect("cancel");
    assert_eq!(cancelled.status(), 200);
    let run: Value = cancelled.json().await.expect("json");
    assert_eq!(run["state"], "cancelled", "{run}");
    assert_eq!(run["final_frame"]["body"]["code"], "E2A.CANCELLED", "{run}");
    // A says the same
    let on_a: Value = common::client()
        .get(format!("{}/v1/e2a/runs/{id}", a.base))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(on_a["state"], "cancelled", "{on_a}");
}
