//! A2A push notifications: the stores' outbox contract (configs, claims, progress, failures),
//! and gateways delivering to a real webhook receiver on 127.0.0.1 — every event in order with
//! the config's credentials, retried, given up on and recorded, after a crash and restart, by
//! exactly one of two gateways sharing PostgreSQL; configs on both HTTP bindings; webhooks on
//! private addresses refused unless allowed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use e2a::types::A2aTaskPushNotificationConfig;
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::push::{PushPolicy, TargetPolicy};
use e2a_gateway::store::{
    MemoryStore, PushFailure, PushProgress, PushRecord, PushStore, SqliteStore, Stores, TaskAppend, TaskLog,
    TaskRecord, TaskRetention,
};
use e2a_gateway::{Gateway, GatewayConfig};
use parking_lot::Mutex;
use serde_json::{json, Value};

const SCRIPT: &str = include_str!("a2a_clients/script.json");

// --- the store contract ----------------------------------------------------------------------

fn config(task: &str, id: &str, url: &str) -> PushRecord {
    let config: A2aTaskPushNotificationConfig = serde_json::from_value(json!({
        "id": id, "taskId": task, "url": url, "token": "tok-secret",
        "authentication": {"scheme": "Bearer", "credentials": "cred-secret"}
    }))
    .expect("a config");
    PushRecord {
        task_id: task.into(),
        id: id.into(),
        config,
        created_ms: 1,
        trace_id: Some(format!("trace-{task}-{id}")),
    }
}

async fn task_with_events(store: &dyn TaskLog, id: &str, n: usize) {
    task_in(store, id, "TASK_STATE_WORKING", 1, n).await;
}

/// Task `id` in `state`, last updated at `updated_ms`, with `n` events.
async fn task_in(store: &dyn TaskLog, id: &str, state: &str, updated_ms: i64, n: usize) {
    let rec = TaskRecord {
        id: id.into(),
        context_id: "c".into(),
        owner: None,
        state: state.parse().expect("state"),
        task: e2a::types::A2aTask::new(id, "c", state.parse().expect("state")),
        last_seq: 0,
        snapshot_seq: 0,
        created_ms: 1,
        updated_ms,
    };
    for i in 0..n {
        let ev = json!({"statusUpdate": {"taskId": id, "contextId": "c", "status": {"state": state}, "n": i}});
        store
            .append(TaskAppend::new(rec.clone(), &ev, i == 0))
            .await
            .expect("append");
    }
}

/// Now, in milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// A retention keeping the `n` most recent finished tasks of the last hour.
fn kept(n: usize) -> TaskRetention {
    TaskRetention {
        max_age: Duration::from_secs(3_600),
        max_tasks: n,
        ..TaskRetention::default()
    }
}

fn progress(p: &PushRecord, holder: &str, delivered: u64) -> PushProgress {
    PushProgress {
        task_id: p.task_id.clone(),
        id: p.id.clone(),
        holder: holder.into(),
        delivered_seq: delivered,
        attempts: 0,
        retry_in: None,
        error: None,
        failure: None,
    }
}

async fn push_store_contract(store: &(impl TaskLog + PushStore)) {
    let lease = Duration::from_secs(30);
    task_with_events(store, "t1", 3).await;
    let a = config("t1", "a", "https://hooks.example.com/a");
    // a config starts after the events it was created after
    store.put_push(a.clone(), 1).await.expect("put");
    store
        .put_push(config("t1", "b", "https://hooks.example.com/b"), 3)
        .await
        .expect("put");
    assert_eq!(store.get_push("t1", "a").await.expect("get"), Some(a.clone()));
    assert_eq!(store.get_push("t1", "zz").await.expect("get"), None);
    let ids: Vec<String> = store
        .list_pushes("t1")
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
    // only `a` has events to deliver; one holder claims it, the other finds nothing
    let jobs = store.claim_pushes("g1", lease, 10).await.expect("claim");
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        (jobs[0].record.id.as_str(), jobs[0].delivered_seq, jobs[0].attempts),
        ("a", 1, 0)
    );
    assert!(store.claim_pushes("g2", lease, 10).await.expect("claim").is_empty());
    // progress only from the holder
    assert!(!store.push_progress(progress(&a, "g2", 3)).await.expect("progress"));
    assert!(store.push_progress(progress(&a, "g1", 2)).await.expect("progress"));
    // a retry ends the claim and is not due yet
    let retry = PushProgress {
        attempts: 1,
        retry_in: Some(Duration::from_secs(60)),
        error: Some("the webhook answered 503".into()),
        ..progress(&a, "g1", 2)
    };
    assert!(store.push_progress(retry).await.expect("progress"));
    assert!(store.claim_pushes("g2", lease, 10).await.expect("claim").is_empty());
    // a config replaced keeps its cursor; one due now is claimed with its attempts
    store.put_push(a.clone(), 0).await.expect("replace");
    store
        .put_push(config("t1", "c", "https://hooks.example.com/c"), 0)
        .await
        .expect("put");
    let jobs = store.claim_pushes("g2", lease, 10).await.expect("claim");
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!((jobs[0].record.id.as_str(), jobs[0].delivered_seq), ("c", 0));
    // an event given up on is recorded with the progress past it
    let failure = PushFailure {
        task_id: "t1".into(),
        config_id: "c".into(),
        seq: 1,
        attempts: 8,
        error: "the webhook answered 500".into(),
        at_ms: 1_700_000_000_000,
    };
    let gave_up = PushProgress {
        failure: Some(failure.clone()),
        ..progress(&jobs[0].record, "g2", 1)
    };
    assert!(store.push_progress(gave_up).await.expect("progress"));
    assert_eq!(store.push_failures(10).await.expect("failures"), [failure]);
    store.release_push("t1", "c", "g2").await.expect("release");
    let jobs = store.claim_pushes("g1", lease, 10).await.expect("claim");
    assert_eq!(jobs.len(), 1);
    assert_eq!((jobs[0].record.id.as_str(), jobs[0].delivered_seq), ("c", 1));
    // delete: once true, then false
    assert!(store.delete_push("t1", "c").await.expect("delete"));
    assert!(!store.delete_push("t1", "c").await.expect("delete"));
    assert!(!store
        .push_progress(progress(&jobs[0].record, "g1", 3))
        .await
        .expect("progress"));
    // secrets stay out of Debug
    let debug = format!("{a:?}");
    assert!(
        !debug.contains("tok-secret") && !debug.contains("cred-secret"),
        "{debug}"
    );
    // finished tasks beyond the count kept are forgotten with their configs, and only theirs
    let now = now_ms();
    for (id, age_ms) in [("done-old", 3_000), ("done-mid", 2_000), ("done-new", 1_000)] {
        task_in(store, id, "TASK_STATE_COMPLETED", now - age_ms, 1).await;
        for c in ["p", "q"] {
            store
                .put_push(config(id, c, "https://hooks.example.com/p"), 1)
                .await
                .expect("put");
        }
    }
    let pushes_of = |id: &'static str| async move {
        let list = store.list_pushes(id).await.expect("list");
        list.into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
    let gone = store.prune_tasks(kept(1)).await.expect("prune");
    assert_eq!(gone, 2, "{}", store.name());
    for id in ["done-old", "done-mid"] {
        assert_eq!(store.get(id).await.expect("get"), None, "{}: {id}", store.name());
        assert!(pushes_of(id).await.is_empty(), "{}: {id}", store.name());
    }
    assert!(store.get("done-new").await.expect("get").is_some());
    assert_eq!(pushes_of("done-new").await, ["p", "q"], "{}", store.name());
    // a task still working is not finished: kept, with its configs
    assert!(store.get("t1").await.expect("get").is_some());
    assert_eq!(pushes_of("t1").await, ["a", "b"], "{}", store.name());
}

#[tokio::test]
async fn stores_keep_the_push_outbox_contract() {
    push_store_contract(&MemoryStore::new()).await;
    push_store_contract(&SqliteStore::in_memory().expect("sqlite")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_push_outbox_contract() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    push_store_contract(&common::pg(&url).await).await;
}

// --- a webhook receiver --------------------------------------------------------------------

/// What the receiver saw: every attempt's headers and body, and whether it was taken.
#[derive(Default)]
struct Seen {
    attempts: Vec<(HeaderMap, Value, bool)>,
    /// Attempts to refuse (503) before taking any; `usize::MAX`: refuse all.
    refuse_first: usize,
}

struct Receiver {
    url: String,
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start(refuse_first: usize) -> Receiver {
        let seen = Arc::new(Mutex::new(Seen {
            refuse_first,
            ..Seen::default()
        }));
        async fn hook(State(seen): State<Arc<Mutex<Seen>>>, headers: HeaderMap, body: String) -> StatusCode {
            let mut s = seen.lock();
            let ok = s.attempts.len() >= s.refuse_first;
            let body = serde_json::from_str(&body).unwrap_or(Value::Null);
            s.attempts.push((headers, body, ok));
            if ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(hook))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            seen,
            task,
        }
    }

    /// The bodies taken, in the order they arrived.
    fn taken(&self) -> Vec<Value> {
        self.seen
            .lock()
            .attempts
            .iter()
            .filter(|(_, _, ok)| *ok)
            .map(|(_, b, _)| b.clone())
            .collect()
    }

    fn attempts(&self) -> usize {
        self.seen.lock().attempts.len()
    }

    fn accept_all(&self) {
        self.seen.lock().refuse_first = 0;
    }
}

// --- gateways ----------------------------------------------------------------------------------

fn dev_push(max_attempts: u32) -> PushPolicy {
    PushPolicy {
        target: TargetPolicy { allow_private: true },
        max_attempts,
        retry_base: Duration::from_millis(20),
        ..PushPolicy::default()
    }
}

async fn serve(push: PushPolicy, store: impl Into<Stores>) -> common::Crashable {
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    let a2a = A2aConfig {
        push,
        ..A2aConfig::default()
    };
    let gateway = Gateway::new(agent, GatewayConfig::default())
        .with_a2a(a2a, store)
        .with_metrics(true);
    common::serve_crashable(gateway).await
}

/// The agent card at `base`.
async fn card(base: &str) -> Value {
    client()
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// The trace id every request of [`rpc`] names: the webhook hears it on each notification.
const TRACE_ID: &str = "trace-push-test";

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    client()
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .header("X-Trace-ID", TRACE_ID)
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

fn push_config(url: &str) -> Value {
    json!({"url": url, "token": "tok-123", "authentication": {"scheme": "Bearer", "credentials": "cred-456"}})
}

/// Sends `text` with a webhook config; the task's id.
async fn send_with_push(base: &str, text: &str, url: &str, wait: bool) -> String {
    let answer = rpc(
        base,
        "SendMessage",
        json!({
            "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"taskPushNotificationConfig": push_config(url), "returnImmediately": !wait}
        }),
    )
    .await;
    answer
        .pointer("/result/task/id")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("a task: {answer}"))
        .to_string()
}

async fn until(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    for _ in 0..secs * 20 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// The task's logged events, as JSON.
async fn logged(store: &dyn TaskLog, task: &str) -> Vec<Value> {
    store
        .events_after(task, 0)
        .await
        .expect("events")
        .iter()
        .map(|e| e.json().expect("json"))
        .collect()
}

fn is_terminal(events: &[Value]) -> bool {
    events
        .last()
        .and_then(|e| e.pointer("/statusUpdate/status/state"))
        .and_then(Value::as_str)
        .is_some_and(|s| ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"].contains(&s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_reaches_the_webhook_in_order_with_its_credentials_after_retries() {
    let hook = Receiver::start(3).await;
    let store: Stores = Arc::new(MemoryStore::new()).into();
    let gw = serve(dev_push(8), store.clone()).await;
    let card = card(&gw.base).await;
    assert_eq!(card.pointer("/capabilities/pushNotifications"), Some(&json!(true)));

    let task = send_with_push(&gw.base, "artifacts", &hook.url, true).await;
    let events = logged(&*store.tasks, &task).await;
    assert!(events.len() >= 5 && is_terminal(&events), "{events:?}");
    until("every event delivered", 20, || hook.taken().len() >= events.len()).await;
    // in order, each once here (no claim was lost), after the three refusals
    assert_eq!(hook.taken(), events);
    assert_eq!(hook.attempts(), events.len() + 3);
    for (headers, _, _) in &hook.seen.lock().attempts {
        assert_eq!(
            headers.get("authorization").and_then(|v| v.to_str().ok()),
            Some("Bearer cred-456")
        );
        assert_eq!(
            headers.get("x-a2a-notification-token").and_then(|v| v.to_str().ok()),
            Some("tok-123")
        );
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        // the trace id of the send that registered the config
        assert_eq!(headers.get("x-trace-id").and_then(|v| v.to_str().ok()), Some(TRACE_ID));
    }
    assert!(
        events[0].get("task").is_some(),
        "the first event is the task: {:?}",
        events[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_webhook_never_takes_is_recorded_as_failed_and_delivery_goes_on() {
    let hook = Receiver::start(usize::MAX).await;
    let store: Stores = Arc::new(MemoryStore::new()).into();
    let gw = serve(dev_push(2), store.clone()).await;
    let task = send_with_push(&gw.base, "hello", &hook.url, true).await;
    let events = logged(&*store.tasks, &task).await;
    until("every event given up on", 20, || hook.attempts() >= events.len() * 2).await;
    let mut failures = Vec::new();
    for _ in 0..100 {
        failures = store
            .pushes_kept()
            .expect("pushes")
            .push_failures(1_000)
            .await
            .expect("failures");
        if failures.len() == events.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // each event tried twice, then recorded, in order
    let mut seqs: Vec<u64> = failures.iter().map(|f| f.seq).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(
        failures.iter().all(|f| f.attempts == 2 && f.task_id == task),
        "{failures:?}"
    );
    assert!(failures[0].error.contains("503"), "{failures:?}");
    assert_eq!(hook.attempts(), events.len() * 2);
    // and operators see them counted
    let metrics = client()
        .get(format!("{}/metrics", gw.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let count = |outcome: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with("e2a_push_notifications_total") && l.contains(&format!("outcome=\"{outcome}\"")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
    };
    assert_eq!(count("failed"), Some(events.len()), "{metrics}");
    assert_eq!(count("retry"), Some(events.len()), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_resumes_after_a_crash_from_the_stores_outbox() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("push.db");
    let hook = Receiver::start(usize::MAX).await;
    let first = serve(dev_push(100), Arc::new(SqliteStore::open(&path).expect("open"))).await;
    let task = send_with_push(&first.base, "artifacts", &hook.url, true).await;
    until("some attempts refused", 10, || hook.attempts() >= 2).await;
    // the gateway dies (aborted, no drain) before anything was taken
    drop(first);
    hook.accept_all();
    let store: Stores = Arc::new(SqliteStore::open(&path).expect("reopen")).into();
    let _second = serve(dev_push(100), store.clone()).await;
    let events = logged(&*store.tasks, &task).await;
    assert!(is_terminal(&events), "{events:?}");
    until("every event delivered after the restart", 30, || {
        hook.taken().len() >= events.len()
    })
    .await;
    assert_eq!(hook.taken(), events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_are_created_read_listed_and_deleted_on_both_http_bindings() {
    let hook = Receiver::start(0).await;
    let gw = serve(dev_push(8), Arc::new(MemoryStore::new())).await;
    let task = send_with_push(&gw.base, "hello", &hook.url, true).await;
    // JSON-RPC: the send's config is listed; another one created with an id of its own
    let listed = rpc(&gw.base, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    let configs = listed
        .pointer("/result/configs")
        .and_then(Value::as_array)
        .expect("configs")
        .clone();
    assert_eq!(configs.len(), 1, "{listed}");
    assert_eq!(configs[0]["taskId"], json!(task));
    assert_eq!(configs[0]["url"], json!(hook.url));
    assert!(
        configs[0].get("e2aTraceId").is_none(),
        "the kept trace id is not shown: {listed}"
    );
    let mut second = push_config(&hook.url);
    second["taskId"] = json!(task);
    second["id"] = json!("mine");
    let created = rpc(&gw.base, "CreateTaskPushNotificationConfig", second).await;
    assert_eq!(created.pointer("/result/id"), Some(&json!("mine")), "{created}");
    let got = rpc(
        &gw.base,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "mine"}),
    )
    .await;
    assert_eq!(
        got.pointer("/result/authentication/scheme"),
        Some(&json!("Bearer")),
        "{got}"
    );
    let page = rpc(
        &gw.base,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 1}),
    )
    .await;
    assert_eq!(
        page.pointer("/result/configs").and_then(Value::as_array).map(Vec::len),
        Some(1)
    );
    assert_eq!(page.pointer("/result/nextPageToken"), Some(&json!("1")), "{page}");
    // the size read as ListTasks reads it: `1.0` is 1, `2.5` is no page size
    let next = rpc(
        &gw.base,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 1.0, "pageToken": "1"}),
    )
    .await;
    assert_eq!(
        next.pointer("/result/configs").and_then(Value::as_array).map(Vec::len),
        Some(1),
        "{next}"
    );
    let bad = rpc(
        &gw.base,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 2.5}),
    )
    .await;
    assert_eq!(bad.pointer("/error/code"), Some(&json!(-32602)), "{bad}");
    for _ in 0..2 {
        let deleted = rpc(
            &gw.base,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": "mine"}),
        )
        .await;
        assert!(deleted.get("error").is_none(), "delete is idempotent: {deleted}");
    }
    let gone = rpc(
        &gw.base,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "mine"}),
    )
    .await;
    assert_eq!(gone.pointer("/error/code"), Some(&json!(-32001)), "{gone}");
    let unknown = rpc(
        &gw.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "no-such-task", "url": hook.url}),
    )
    .await;
    assert_eq!(unknown.pointer("/error/code"), Some(&json!(-32001)), "{unknown}");

    // HTTP+JSON
    let url = format!("{}/tasks/{task}/pushNotificationConfigs", gw.base);
    let created: Value = client()
        .post(&url)
        .json(&json!({"id": "rest", "url": hook.url}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    assert_eq!(
        (created["id"].as_str(), created["taskId"].as_str()),
        (Some("rest"), Some(task.as_str()))
    );
    let listed: Value = client()
        .get(&url)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["configs"].as_array().map(Vec::len), Some(2), "{listed}");
    let one = client().get(format!("{url}/rest")).send().await.expect("get");
    assert_eq!(one.status(), 200);
    for _ in 0..2 {
        let deleted = client().delete(format!("{url}/rest")).send().await.expect("delete");
        assert_eq!(deleted.status(), 200);
    }
    let gone = client().get(format!("{url}/rest")).send().await.expect("get");
    assert_eq!(gone.status(), 404);
    let bad = client()
        .post(&url)
        .json(&json!({"token": "x"}))
        .send()
        .await
        .expect("create");
    assert_eq!(bad.status(), 400);
    let text = bad.text().await.expect("body");
    assert!(text.contains("url"), "{text}");
}

#[tokio::test]
async fn webhooks_on_private_addresses_or_plain_http_are_refused_unless_allowed() {
    let gw = serve(PushPolicy::default(), Arc::new(MemoryStore::new())).await;
    let task = {
        let answer = rpc(
            &gw.base,
            "SendMessage",
            json!({"message": {"messageId": "m-ssrf", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}),
        )
        .await;
        answer
            .pointer("/result/task/id")
            .and_then(Value::as_str)
            .expect("a task")
            .to_string()
    };
    for (url, why) in [
        ("http://127.0.0.1:9/hook", "https"),
        ("https://127.0.0.1:9/hook", "loopback"),
        ("https://[::1]/hook", "loopback"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://10.0.0.8/hook", "private"),
        ("https://localhost:9/hook", "loopback"),
    ] {
        let answer = rpc(
            &gw.base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": url, "token": "tok-never-logged"}),
        )
        .await;
        assert_eq!(answer.pointer("/error/code"), Some(&json!(-32602)), "{url}: {answer}");
        let message = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
        assert!(
            message.contains("params.url") && message.contains(why),
            "{url}: {message}"
        );
        assert!(!message.contains("tok-never-logged"), "{message}");
    }
    // a name is not resolved to accept a config (a client offline, a name not yet published):
    // what it resolves to is checked at each delivery
    let answer = rpc(
        &gw.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": "https://webhook.e2a-test.invalid/hook"}),
    )
    .await;
    assert!(answer.pointer("/result/id").is_some(), "{answer}");
    // on a send too, before anything runs
    let answer = rpc(
        &gw.base,
        "SendMessage",
        json!({
            "message": {"messageId": "m-ssrf-2", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
            "configuration": {"taskPushNotificationConfig": {"url": "https://192.168.1.1/hook"}}
        }),
    )
    .await;
    let message = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
    assert!(
        message.contains("params.configuration.taskPushNotificationConfig.url"),
        "{answer}"
    );
    // a config that is not an object is refused too, not ignored
    for bad in [json!("https://example.com/hook"), json!([null]), json!(5)] {
        let answer = rpc(
            &gw.base,
            "SendMessage",
            json!({
                "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": "hello"}]},
                "configuration": {"taskPushNotificationConfig": bad}
            }),
        )
        .await;
        assert_eq!(answer.pointer("/error/code"), Some(&json!(-32602)), "{answer}");
    }
}

#[tokio::test]
async fn a_gateway_with_push_off_says_so_on_the_card_and_refuses_configs() {
    let off = PushPolicy {
        enabled: false,
        ..PushPolicy::default()
    };
    let gw = serve(off, Arc::new(MemoryStore::new())).await;
    let card = card(&gw.base).await;
    assert_eq!(card.pointer("/capabilities/pushNotifications"), Some(&json!(false)));
    let answer = rpc(&gw.base, "ListTaskPushNotificationConfigs", json!({"taskId": "t"})).await;
    assert_eq!(answer.pointer("/error/code"), Some(&json!(-32003)), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_postgres_deliver_each_event_once() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let hook = Receiver::start(0).await;
    let a: Stores = Arc::new(common::pg(&url).await).into();
    let b: Stores = Arc::new(common::pg(&url).await).into();
    let gw_a = serve(dev_push(8), a.clone()).await;
    let _gw_b = serve(dev_push(8), b).await;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let text = if i % 2 == 0 { "artifacts" } else { "hello" };
        tasks.push(send_with_push(&gw_a.base, text, &hook.url, true).await);
    }
    let mut expected = 0;
    for t in &tasks {
        expected += logged(&*a.tasks, t).await.len();
    }
    until("every event delivered", 30, || hook.taken().len() >= expected).await;
    // a moment for a duplicate to show up, then: each event exactly once, in order per task
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let taken = hook.taken();
    assert_eq!(taken.len(), expected, "an event was delivered twice");
    for t in &tasks {
        let of_task: Vec<Value> = taken
            .iter()
            .filter(|e| {
                e.pointer("/task/id")
                    .or_else(|| e.pointer("/statusUpdate/taskId"))
                    .or_else(|| e.pointer("/artifactUpdate/taskId"))
                    == Some(&json!(t))
            })
            .cloned()
            .collect();
        assert_eq!(of_task, logged(&*a.tasks, t).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_has_at_most_the_configured_number_of_configs() {
    let hook = Receiver::start(0).await;
    let push = PushPolicy {
        max_configs_per_task: 3,
        ..dev_push(8)
    };
    let gw = serve(push, Arc::new(MemoryStore::new())).await;
    let task = send_with_push(&gw.base, "hello", &hook.url, true).await;
    let create = |id: &str| {
        let mut c = push_config(&hook.url);
        c["taskId"] = json!(task);
        c["id"] = json!(id);
        rpc(&gw.base, "CreateTaskPushNotificationConfig", c)
    };
    for id in ["two", "three"] {
        assert!(create(id).await.get("result").is_some(), "{id}");
    }
    let refused = create("four").await;
    assert_eq!(refused.pointer("/error/code"), Some(&json!(-32602)), "{refused}");
    let message = refused
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(message.contains("3 push notification configs"), "{message}");
    // one of the three replaced under its id is no new config
    assert!(create("two").await.get("result").is_some(), "a replacement is taken");
    let listed = rpc(&gw.base, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
    assert_eq!(
        listed
            .pointer("/result/configs")
            .and_then(Value::as_array)
            .map(Vec::len),
        Some(3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_webhook_holds_up_only_its_own_deliveries() {
    // a webhook host that takes connections and never answers
    let hanging = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let hanging_url = format!("http://{}/hook", hanging.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = hanging.accept().await {
            open.push(tcp);
        }
    });
    let hook = Receiver::start(0).await;
    let push = PushPolicy {
        timeout: Duration::from_secs(2),
        ..dev_push(1)
    };
    let store: Stores = Arc::new(MemoryStore::new()).into();
    let gw = serve(push, store.clone()).await;
    // more tasks with the hanging webhook than deliveries run at once (32), each with several events
    for i in 0..40 {
        send_with_push(&gw.base, &format!("hello {i}"), &hanging_url, true).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = std::time::Instant::now();
    let task = send_with_push(&gw.base, "hello", &hook.url, true).await;
    let events = logged(&*store.tasks, &task).await;
    until("the other task's events delivered", 30, || {
        hook.taken().len() >= events.len()
    })
    .await;
    let took = sent.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the other task's webhook waited {took:?}, more than the hanging one's timeout"
    );
    held.abort();
}

/// For GoAI's callback route: `events = "terminal"` posts only the event that ends the task
/// (the others skipped, not retried); the token comes as `A2A-Notification-Token` too; with
/// the agent's machine identity each notification is signed (GoAI-HMAC-SHA256) over its body,
/// instead of the config's own `Authorization`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_events_only_signed_with_the_agents_identity() {
    use e2a_gateway::web::hmac::{content_sha256, signature, Signed, Signer};
    let hook = Receiver::start(0).await;
    let store: Stores = Arc::new(MemoryStore::new()).into();
    let push = PushPolicy {
        terminal_only: true,
        signer: Some(Signer {
            agent_code: "writer".into(),
            key: "writer-key".into(),
        }),
        ..dev_push(3)
    };
    let gw = serve(push, store.clone()).await;
    let task = send_with_push(&gw.base, "artifacts", &hook.url, true).await;
    let events = logged(&*store.tasks, &task).await;
    assert!(events.len() >= 5 && is_terminal(&events), "{events:?}");
    until("the terminal event delivered", 20, || !hook.taken().is_empty()).await;
    // (a moment for anything else that would come)
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hook.taken(), [events.last().cloned().expect("an event")]);
    let seen = hook.seen.lock();
    let (headers, body, _) = &seen.attempts[0];
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(get("a2a-notification-token"), "tok-123");
    assert_eq!(get("x-a2a-notification-token"), "tok-123");
    assert_eq!(get("x-goai-agent-code"), "writer");
    // the signature, recomputed from the headers and the body as received
    let raw = serde_json::to_vec(body).expect("body");
    assert_eq!(
        get("x-goai-content-sha256"),
        content_sha256(&raw),
        "the digest of the body"
    );
    let (timestamp, nonce, digest) = (
        get("x-goai-timestamp"),
        get("x-goai-nonce"),
        get("x-goai-content-sha256"),
    );
    let signed = Signed {
        method: "POST",
        path: "/hook",
        agent_code: "writer",
        timestamp: &timestamp,
        nonce: &nonce,
        content_sha256: &digest,
    };
    assert_eq!(
        get("authorization"),
        format!(
            "GoAI-HMAC-SHA256 Signature={}",
            signature(b"writer-key", &signed.canonical())
        )
    );
}

/// Once a prune has set its bound, a memory store keeps to it as tasks finish: the oldest
/// finished tasks go (with their push configs) as new ones finish, tasks still working stay.
#[tokio::test]
async fn a_memory_store_forgets_its_oldest_finished_tasks_as_new_ones_finish() {
    let store = MemoryStore::new();
    let now = now_ms();
    assert_eq!(store.prune_tasks(kept(2)).await.expect("prune"), 0);
    task_in(&store, "working", "TASK_STATE_WORKING", now - 10_000, 1).await;
    store
        .put_push(config("done-0", "p", "https://hooks.example.com/p"), 1)
        .await
        .expect("put");
    for i in 0..5 {
        task_in(&store, &format!("done-{i}"), "TASK_STATE_COMPLETED", now - 5_000 + i, 1).await;
    }
    for i in 0..3 {
        assert_eq!(store.get(&format!("done-{i}")).await.expect("get"), None, "done-{i}");
    }
    assert!(store.list_pushes("done-0").await.expect("list").is_empty());
    for id in ["done-3", "done-4", "working"] {
        assert!(store.get(id).await.expect("get").is_some(), "{id}");
    }
    // the bound is the last one asked for
    assert_eq!(store.prune_tasks(kept(1)).await.expect("prune"), 1);
    assert_eq!(store.get("done-3").await.expect("get"), None);
    assert!(store.get("done-4").await.expect("get").is_some());
}

/// A task of `chunks` artifact chunks of 1 kB each, then completed, last updated at `at_ms`.
async fn long_task(store: &dyn TaskLog, id: &str, at_ms: i64, chunks: usize) {
    let mut rec = TaskRecord {
        id: id.into(),
        context_id: "c".into(),
        owner: None,
        state: "TASK_STATE_WORKING".parse().expect("state"),
        task: e2a::types::A2aTask::new(id, "c", "TASK_STATE_WORKING".parse().expect("state")),
        last_seq: 0,
        snapshot_seq: 0,
        created_ms: 1,
        updated_ms: at_ms,
    };
    let chunk = "x".repeat(1_000);
    for i in 0..chunks {
        let ev = json!({"artifactUpdate": {"taskId": id, "contextId": "c", "append": i > 0,
            "artifact": {"artifactId": "a", "parts": [{"text": chunk}]}}});
        store
            .append(TaskAppend::new(rec.clone(), &ev, i == 0))
            .await
            .expect("append");
    }
    rec.state = "TASK_STATE_COMPLETED".parse().expect("state");
    let ev = json!({"statusUpdate": {"taskId": id, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
    store.append(TaskAppend::new(rec, &ev, true)).await.expect("append");
}

/// A memory store keeps its finished tasks within their byte bound as they finish: the oldest
/// go first, counted by what their events take, and the last to finish stays whatever its size.
#[tokio::test]
async fn a_memory_store_keeps_its_finished_tasks_within_their_bytes() {
    let store = MemoryStore::new();
    let now = now_ms();
    // a task of 100 chunks takes a little over 100 kB: two fit in 250 kB, three do not
    let bound = |bytes| TaskRetention {
        max_memory_bytes: bytes,
        ..kept(100)
    };
    assert_eq!(store.prune_tasks(bound(250_000)).await.expect("prune"), 0);
    task_in(&store, "working", "TASK_STATE_WORKING", now - 10_000, 1).await;
    for i in 0..4 {
        long_task(&store, &format!("long-{i}"), now - 5_000 + i, 100).await;
    }
    for id in ["long-0", "long-1"] {
        assert_eq!(store.get(id).await.expect("get"), None, "{id}");
    }
    for id in ["long-2", "long-3", "working"] {
        assert!(store.get(id).await.expect("get").is_some(), "{id}");
    }
    assert_eq!(store.events_after("long-3", 0).await.expect("events").len(), 101);
    // a bound smaller than one task: the last to finish stays, alone
    assert_eq!(store.prune_tasks(bound(1_000)).await.expect("prune"), 1);
    assert!(store.get("long-3").await.expect("get").is_some());
    long_task(&store, "long-4", now - 4_000, 100).await;
    assert_eq!(store.get("long-3").await.expect("get"), None);
    assert_eq!(store.events_after("long-4", 0).await.expect("events").len(), 101);
    // tasks still working are never counted
    assert!(store.get("working").await.expect("get").is_some());
}

/// A SQLite store forgets many finished tasks in several transactions (a chunk each), and
/// keeps the newest as asked, oldest gone first.
#[tokio::test]
async fn a_sqlite_store_forgets_thousands_of_finished_tasks_in_chunks() {
    let dir = tempfile::tempdir().expect("dir");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("open");
    let now = now_ms();
    let n: i64 = 4_500;
    // (appended together: the writer commits them in a few transactions)
    let ids: Vec<String> = (0..n).map(|i| format!("done-{i:05}")).collect();
    futures_util::future::join_all(
        (0..n)
            .zip(&ids)
            .map(|(i, id)| task_in(&store, id, "TASK_STATE_COMPLETED", now - n + i, 1)),
    )
    .await;
    task_in(&store, "working", "TASK_STATE_WORKING", now - 2 * n, 1).await;
    assert_eq!(store.prune_tasks(kept(100)).await.expect("prune"), 4_400);
    let left = store
        .list(e2a_gateway::store::TaskQuery {
            limit: 10_000,
            ..Default::default()
        })
        .await
        .expect("list");
    let mut ids: Vec<String> = left.tasks.into_iter().map(|t| t.id).collect();
    ids.sort();
    let mut want: Vec<String> = (n - 100..n).map(|i| format!("done-{i:05}")).collect();
    want.push("working".into());
    assert_eq!(ids, want);
    assert!(store.events_after("done-00000", 0).await.expect("events").is_empty());
    assert_eq!(store.events_after("done-04499", 0).await.expect("events").len(), 1);
}
