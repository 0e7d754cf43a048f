//! A task store that stops taking events (a full disk) fails the turn: the client gets a
//! terminal error, no follower ever sees an event the store did not take, and the task reads
//! `FAILED` with the reason — never a made-up "the gateway restarted".

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::sse_events;
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::{MemoryStore, Stores, TaskLog};
use e2a_gateway::store::{StoreError, StoredEvent, TaskAppend, TaskPage, TaskQuery, TaskRecord};
use e2a_gateway::{Gateway, GatewayConfig};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

const SCRIPT: &str = include_str!("a2a_clients/script.json");

/// A memory store whose appends fail once `budget` of them were taken ("disk full"); reads
/// go on working. `budget < 0`: no limit.
struct FullDisk {
    inner: MemoryStore,
    budget: AtomicI64,
    /// Appends that wrote the snapshot.
    snapshots: std::sync::atomic::AtomicUsize,
    /// How long each append takes (ms): a slow disk.
    slow_ms: std::sync::atomic::AtomicU64,
}

impl FullDisk {
    fn new(budget: i64) -> Arc<Self> {
        Arc::new(FullDisk {
            inner: MemoryStore::new(),
            budget: AtomicI64::new(budget),
            snapshots: 0.into(),
            slow_ms: 0.into(),
        })
    }

    /// Its task log, with the leases and sends of a memory store beside it.
    fn stores(self: &Arc<Self>) -> Stores {
        let memory: Stores = Arc::new(MemoryStore::new()).into();
        Stores {
            tasks: self.clone(),
            pushes: None,
            sessions: None,
            ..memory
        }
    }
}

impl TaskLog for FullDisk {
    fn name(&self) -> String {
        "full-disk".into()
    }
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        self.inner.get(id)
    }
    fn append(&self, write: TaskAppend) -> BoxFuture<'_, Result<u64, StoreError>> {
        let left = self.budget.load(Ordering::SeqCst);
        if left == 0 {
            return Box::pin(async { Err(StoreError::Backend("database or disk is full".into())) });
        }
        if left > 0 {
            self.budget.fetch_sub(1, Ordering::SeqCst);
        }
        if write.snapshot.is_some() {
            self.snapshots.fetch_add(1, Ordering::SeqCst);
        }
        let slow = self.slow_ms.load(Ordering::SeqCst);
        Box::pin(async move {
            if slow > 0 {
                tokio::time::sleep(Duration::from_millis(slow)).await;
            }
            self.inner.append(write).await
        })
    }
    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<StoredEvent>, StoreError>> {
        self.inner.events_after(id, after)
    }
    fn list(&self, query: TaskQuery) -> BoxFuture<'_, Result<TaskPage, StoreError>> {
        self.inner.list(query)
    }
}

async fn serve(store: Arc<FullDisk>) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    let gateway = Gateway::new(agent, GatewayConfig::default()).with_a2a(A2aConfig::default(), store.stores());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    (base, tokio::spawn(gateway.serve(listener, std::future::pending())))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

fn send_params(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

async fn call(base: &str, method: &str, params: Value) -> reqwest::Response {
    client()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
        .send()
        .await
        .expect("send")
}

fn task_id_of(events: &[(Option<u64>, Value)]) -> String {
    events
        .iter()
        .find_map(|(_, e)| e.pointer("/result/task/id").and_then(Value::as_str))
        .expect("the task was announced")
        .to_string()
}

#[tokio::test]
async fn a_store_that_fills_up_fails_the_streamed_turn_and_nobody_sees_an_unstored_event() {
    // three appends fit (the task; then what the agent had ready, one append each time);
    // then the disk is full
    let store = FullDisk::new(3);
    let (base, _server) = serve(store.clone()).await;
    let resp = call(&base, "SendStreamingMessage", send_params("count slowly")).await;
    let events = sse_events(&resp.text().await.expect("the stream ends"));
    let task_id = task_id_of(&events);

    // the stream ends with a JSON-RPC error, and nothing after it
    let (last_id, last) = events.last().expect("events");
    assert_eq!(*last_id, None, "the error is not a stored event");
    assert_eq!(last["error"]["code"], -32603, "{last}");
    let message = last["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("task store failed"), "{message}");
    // every event the client saw is in the log, at its number
    let log = store.events_after(&task_id, 0).await.expect("log");
    let seen: Vec<&(Option<u64>, Value)> = events.iter().filter(|(id, _)| id.is_some()).collect();
    assert!(seen.len() >= 3, "{events:?}");
    assert_eq!(seen.len(), log.len(), "every stored event was delivered: {events:?}");
    for (id, e) in seen {
        let stored = log
            .iter()
            .find(|s| Some(s.seq) == *id)
            .expect("a delivered event was stored");
        assert_eq!(&stored.json().expect("JSON"), &e["result"]);
    }

    // the task says what happened, while the store still fails …
    let got: Value = call(&base, "GetTask", json!({"id": task_id}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_FAILED", "{got}");
    let why = got
        .pointer("/result/status/message/parts/0/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(why.contains("task store failed"), "{why}");
    assert!(!why.contains("restarted"), "{why}");
    // … and once it takes events again, the FAILED status is stored with that reason
    store.budget.store(-1, Ordering::SeqCst);
    let got: Value = call(&base, "GetTask", json!({"id": task_id}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_FAILED");
    let log = store.events_after(&task_id, 0).await.expect("log");
    let end = &log.last().expect("log").json().expect("JSON");
    assert_eq!(end["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED", "{end}");
    let why = end
        .pointer("/statusUpdate/status/message/parts/0/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(why.contains("task store failed"), "{why}");
}

#[tokio::test]
async fn a_store_that_takes_nothing_makes_no_task() {
    let store = FullDisk::new(0);
    let (base, _server) = serve(store.clone()).await;
    let got: Value = call(&base, "SendMessage", send_params("hello"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(got["error"]["code"], -32603, "{got}");
    // before any event: the JSON-RPC error response itself, no stream
    let got: Value = call(&base, "SendStreamingMessage", send_params("hello"))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(got["error"]["code"], -32603, "{got}");
    store.budget.store(-1, Ordering::SeqCst);
    let listed: Value = call(&base, "ListTasks", json!({})).await.json().await.expect("json");
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_blocking_send_whose_store_fills_up_answers_the_failed_task() {
    let store = FullDisk::new(3);
    let (base, _server) = serve(store).await;
    let got: Value = call(&base, "SendMessage", send_params("count slowly"))
        .await
        .json()
        .await
        .expect("json");
    let task = &got["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{got}");
    let why = task
        .pointer("/status/message/parts/0/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(why.contains("task store failed"), "{why}");
}

#[tokio::test]
async fn a_long_answer_costs_its_length_in_snapshots_not_its_square() {
    // 3,000 one-character chunks: the snapshot is rewritten after 64, 128, 256 … chunks
    let text = "abcdefghij".repeat(300);
    let script = json!({"scenarios": [{"name": "long", "match": {"text": "long"},
        "steps": [{"type": "text", "text": text, "chunk_size": 1}, {"type": "complete"}]}]});
    let store = FullDisk::new(-1);
    let agent = ScriptAgent::from_json(&script.to_string()).expect("script");
    let gateway = Gateway::new(agent, GatewayConfig::default()).with_a2a(A2aConfig::default(), store.stores());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let _server = tokio::spawn(gateway.serve(listener, std::future::pending()));
    let resp = call(&base, "SendStreamingMessage", send_params("long")).await;
    let events = sse_events(&resp.text().await.expect("the stream ends"));
    let task_id = task_id_of(&events);
    assert!(events.len() > 3000, "{}", events.len());
    let snapshots = store.snapshots.load(Ordering::SeqCst);
    assert!(snapshots <= 20, "{snapshots} snapshots for {} events", events.len());
    // and a reader still gets the whole answer, caught up from the log
    let got: Value = call(&base, "GetTask", json!({"id": task_id}))
        .await
        .json()
        .await
        .expect("json");
    let output: String = got["result"]["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(String::from))
        .collect();
    assert_eq!(output, text);
}

#[tokio::test]
async fn a_client_gone_mid_send_leaves_no_task_without_its_run() {
    let store = FullDisk::new(-1);
    store.slow_ms.store(300, Ordering::SeqCst);
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    let gateway = Gateway::new(agent, GatewayConfig::default()).with_a2a(A2aConfig::default(), store.stores());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let _server = tokio::spawn(gateway.clone().serve(listener, std::future::pending()));
    // the client gives up while the task's first event is being stored
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .expect("client");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("hello")});
    let sent = impatient
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body.to_string())
        .send()
        .await;
    assert!(sent.is_err(), "the client timed out");
    // the turn went on without its client, and ended
    let mut settled = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if gateway.live_streams() == 0 {
            settled = true;
            break;
        }
    }
    assert!(settled, "a run is left live");
    store.slow_ms.store(0, Ordering::SeqCst);
    let listed: Value = call(&base, "ListTasks", json!({})).await.json().await.expect("json");
    let tasks = listed["result"]["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(tasks.len(), 1, "{listed}");
    assert_eq!(tasks[0]["status"]["state"], "TASK_STATE_COMPLETED", "{listed}");
}
