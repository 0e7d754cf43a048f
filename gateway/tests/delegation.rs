//! Delegation with callbacks (`delegate = "callback"`): an `a2a:` agent sends its child one
//! `SendMessage` that returns at once, with a push config naming the gateway's callback route and
//! a token bound to the task, and the run waits holding no connection; the child's terminal event,
//! posted to `POST …/callbacks/tasks/{id}`, ends the run. The child is played by the test (what it
//! was sent is checked, and the test posts its callbacks: the route's refusals), then is a real e2a
//! gateway whose own push sender calls back.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::{Json, Router};
use common::*;
use e2a::E2AResponse;
use e2a_gateway::backends::{A2aRemoteAgent, A2aRemoteConfig, Callbacks, ScriptAgent, DELEGATION_EXTENSION};
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::push::{PushPolicy, TargetPolicy};
use e2a_gateway::store::{MemoryStore, SqliteStore, Stores};
use e2a_gateway::{Gateway, GatewayConfig};
use parking_lot::Mutex;
use serde_json::{json, Value};

/// A child agent played by the test: its card, `SendMessage` answered with a submitted task
/// (what it was sent is kept), `GetTask` answered with the task the test set, `CancelTask` kept.
#[derive(Clone, Default)]
struct Child {
    base: Arc<Mutex<String>>,
    sent: Arc<Mutex<Vec<Value>>>,
    cancelled: Arc<Mutex<Vec<String>>>,
    tasks: Arc<Mutex<HashMap<String, Value>>>,
}

async fn card(State(child): State<Child>) -> Json<Value> {
    let url = format!("{}/a2a", child.base.lock());
    Json(json!({
        "name": "writer", "description": "writes", "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false, "pushNotifications": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
    }))
}

async fn rpc(State(child): State<Child>, Json(call): Json<Value>) -> Json<Value> {
    let id = call["id"].clone();
    let result = match call["method"].as_str() {
        Some("SendMessage") => {
            child.sent.lock().push(call["params"].clone());
            json!({"task": {"id": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_SUBMITTED"}}})
        }
        Some("GetTask") => {
            let task = call["params"]["id"].as_str().unwrap_or_default().to_string();
            match child.tasks.lock().get(&task) {
                Some(t) => t.clone(),
                None => {
                    return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32001, "message": "no task"}}))
                }
            }
        }
        Some("CancelTask") => {
            let task = call["params"]["id"].as_str().unwrap_or_default().to_string();
            child.cancelled.lock().push(task.clone());
            json!({"id": task, "contextId": "ctx-1", "status": {"state": "TASK_STATE_CANCELED"}})
        }
        _ => return Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The child played by the test, served on 127.0.0.1.
async fn child() -> (Child, Spawned) {
    let child = Child::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    *child.base.lock() = base.clone();
    let router = Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(card))
        .route("/a2a", axum::routing::post(rpc))
        .with_state(child.clone());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (child, Spawned::from_parts(base, task))
}

/// A gateway whose agent delegates to the child at `child_url` with callbacks (as agent
/// `planner`), its callback route at `/callbacks/tasks/{id}`, waiting at most `timeout`.
async fn parent(child_url: &str, store: impl Into<Stores>, timeout: Duration) -> Spawned {
    parent_with(child_url, store, timeout, GatewayConfig::default(), |c| c).await
}

/// [`parent`] with `gateway` (its callers) and its callbacks as `configure` makes them (signed
/// only, relaying progress).
async fn parent_with(
    child_url: &str,
    store: impl Into<Stores>,
    timeout: Duration,
    gateway: GatewayConfig,
    configure: impl FnOnce(Callbacks) -> Callbacks,
) -> Spawned {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let callbacks =
        configure(Callbacks::new(&format!("{base}/callbacks/tasks"), "planner", timeout).expect("callbacks"));
    let mut config = A2aRemoteConfig::new(child_url);
    config.callbacks = Some(callbacks.clone());
    let agent = A2aRemoteAgent::new(config).expect("agent");
    let a2a = A2aConfig {
        callbacks: Some(callbacks),
        ..A2aConfig::default()
    };
    let gateway = Gateway::new(agent, gateway).with_a2a(a2a, store);
    let task = tokio::spawn(async move {
        let _ = gateway.serve(listener, std::future::pending()).await;
    });
    Spawned::from_parts(base, task)
}

/// Posts `event` to the callback URL `url` with `token` (`None`: no token header).
async fn call_back(url: &str, token: Option<&str>, event: &Value) -> reqwest::Response {
    let mut req = client().post(url).json(event);
    if let Some(t) = token {
        req = req.header("X-A2A-Notification-Token", t);
    }
    req.send().await.expect("callback")
}

fn completed() -> Value {
    json!({"statusUpdate": {"taskId": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"}}})
}

/// The frames a run's SSE answer still holds, read to its end (within 10 s).
async fn rest_of(resp: reqwest::Response) -> Vec<E2AResponse> {
    let text = tokio::time::timeout(Duration::from_secs(10), resp.text())
        .await
        .expect("the run ends")
        .expect("body");
    sse_frames(&text)
}

/// A run of a parent (delegating to a child played by the test, over `store`) asked to write
/// the report: the child, the parent, the run's answer as it streams, and the callback URL and
/// token the child was sent.
async fn delegating(store: impl Into<Stores>) -> (Child, Spawned, Spawned, reqwest::Response, String, String) {
    let (child, child_server) = child().await;
    let gw = parent(&child_server.base, store, Duration::from_secs(30)).await;
    let resp = post(&gw.base, &envelope("write the report"), "text/event-stream").await;
    assert_eq!(resp.status(), 200);
    let (url, token) = push_config(&sent_one(&child).await);
    (child, child_server, gw, resp, url, token)
}

/// The push config the child was sent: its URL and token.
fn push_config(sent: &Value) -> (String, String) {
    let config = &sent["configuration"]["taskPushNotificationConfig"];
    let url = config["url"].as_str().expect("a callback URL").to_string();
    let token = config["token"].as_str().expect("a token").to_string();
    (url, token)
}

async fn sent_one(child: &Child) -> Value {
    eventually("the child got the task", || !child.sent.lock().is_empty()).await;
    child.sent.lock()[0].clone()
}

#[tokio::test]
async fn a_delegated_run_waits_for_the_callback_and_ends_with_the_childs_answer() {
    let (child, child_server) = child().await;
    let dir = tempfile::tempdir().expect("tmp");
    let store = Arc::new(SqliteStore::open(&dir.path().join("parent.db")).expect("store"));
    let gw = parent(&child_server.base, store, Duration::from_secs(30)).await;
    let mut body = envelope("write the report");
    body["request_id"] = uuid().into();
    let mut resp = post(&gw.base, &body, "text/event-stream").await;
    assert_eq!(resp.status(), 200);
    // the run says it delegated, and waits
    let first = read_frames(&mut resp, 1).await;
    assert_eq!(first[0].body["delta_kind"], "reasoning");
    assert!(first[0].body["delta"].as_str().unwrap_or_default().contains("child-1"));
    // the child was sent one SendMessage that returns at once, with GoAI's delegation metadata
    // and a push config naming the callback route, with a token of its own
    let sent = sent_one(&child).await;
    assert_eq!(sent["configuration"]["returnImmediately"], true);
    assert_eq!(sent["message"]["extensions"], json!([DELEGATION_EXTENSION]));
    let meta = &sent["message"]["metadata"][DELEGATION_EXTENSION];
    assert_eq!(meta["sourceAgentCode"], "planner");
    assert_eq!(meta["parentRunId"], body["request_id"]);
    assert_eq!(sent["message"]["parts"][0]["text"], "write the report");
    let (url, token) = push_config(&sent);
    assert!(url.starts_with(&format!("{}/callbacks/tasks/", gw.base)), "{url}");
    assert!(token.len() >= 32);
    // refused: no token, a wrong one, an unknown task, a body that is no event
    assert_eq!(call_back(&url, None, &completed()).await.status(), 401);
    let wrong = call_back(&url, Some("not-the-token"), &completed()).await;
    assert_eq!(wrong.status(), 401);
    let problem: Value = wrong.json().await.expect("a problem");
    assert!(!problem.to_string().contains(&token));
    let unknown = format!("{}/callbacks/tasks/nope", gw.base);
    assert_eq!(call_back(&unknown, Some(&token), &completed()).await.status(), 404);
    assert_eq!(
        call_back(&url, Some(&token), &json!({"nonsense": 1})).await.status(),
        400
    );
    // a progress event is acknowledged, and the run still waits
    let working =
        json!({"statusUpdate": {"taskId": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_WORKING"}}});
    assert_eq!(call_back(&url, Some(&token), &working).await.status(), 202);
    // the terminal event carries no content: the run reads the child's task for it
    child.tasks.lock().insert(
        "child-1".into(),
        json!({"id": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"},
               "artifacts": [{"artifactId": "a1", "name": "output", "parts": [{"text": "The report, written."}]}]}),
    );
    assert_eq!(call_back(&url, Some(&token), &completed()).await.status(), 202);
    let frames: Vec<E2AResponse> = first.into_iter().chain(rest_of(resp).await).collect();
    assert_valid_stream(&frames);
    let last = frames.last().expect("a final frame");
    assert_eq!(last.response_kind.to_string(), "e2a.complete", "{:?}", last.body);
    assert_eq!(last.body["result"]["content"], "The report, written.");
    // the same terminal event again is accepted; another one conflicts
    assert_eq!(call_back(&url, Some(&token), &completed()).await.status(), 202);
    let failed =
        json!({"statusUpdate": {"taskId": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_FAILED"}}});
    assert_eq!(call_back(&url, Some(&token), &failed).await.status(), 409);
    assert!(child.cancelled.lock().is_empty(), "nothing to cancel");
}

#[tokio::test]
async fn a_delegated_task_that_does_not_call_back_in_time_is_cancelled() {
    let (child, child_server) = child().await;
    let gw = parent(&child_server.base, Arc::new(MemoryStore::new()), Duration::from_secs(1)).await;
    let resp = post(&gw.base, &envelope("write it"), "application/json").await;
    let answer: Value = resp.json().await.expect("an answer");
    assert_eq!(answer["body"]["code"], "E2A.TIMEOUT", "{answer}");
    eventually("the child task is cancelled", || {
        child.cancelled.lock().as_slice() == ["child-1"]
    })
    .await;
}

#[tokio::test]
async fn a_child_gateways_own_push_sender_calls_back() {
    // the child: an e2a gateway with the script agent, posting every event of its tasks
    let script = ScriptAgent::from_file(&script_path()).expect("script");
    let a2a = A2aConfig {
        push: PushPolicy {
            target: TargetPolicy { allow_private: true },
            retry_base: Duration::from_millis(50),
            ..PushPolicy::default()
        },
        ..A2aConfig::default()
    };
    let child =
        serve_crashable(Gateway::new(script, GatewayConfig::default()).with_a2a(a2a, Arc::new(MemoryStore::new())))
            .await;
    let dir = tempfile::tempdir().expect("tmp");
    let store = Arc::new(SqliteStore::open(&dir.path().join("parent.db")).expect("store"));
    let gw = parent(&child.base, store, Duration::from_secs(30)).await;
    let resp = post(&gw.base, &envelope("what is the weather?"), "text/event-stream").await;
    let text = tokio::time::timeout(Duration::from_secs(30), resp.text())
        .await
        .expect("the run ends")
        .expect("body");
    let frames = sse_frames(&text);
    assert_valid_stream(&frames);
    // delegated (the child took the task and answered later, by its push sender)
    assert!(frames[0].body["delta"]
        .as_str()
        .unwrap_or_default()
        .starts_with("delegated as task"));
    let last = frames.last().expect("a final frame");
    assert_eq!(last.response_kind.to_string(), "e2a.complete", "{:?}", last.body);
    assert_eq!(last.body["result"]["content"], "It is 21 °C in Paris today.");
}

#[tokio::test]
async fn a_signed_callback_is_checked_as_its_caller_then_by_its_token() {
    use e2a_gateway::web::hmac;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("writer.key"), "writer-secret-key\n").expect("key");
    std::fs::write(dir.path().join("user.key"), "user-secret\n").expect("key");
    let text = "[callers.writer]\nkind = \"agent\"\nhmac_key_file = \"writer.key\"\n\
                [callers.user]\napi_key_file = \"user.key\"\n";
    let file = e2a_gateway::config_file::ConfigFile::parse(text, "e2a.toml", dir.path(), &[]).expect("config");
    let auth = e2a_gateway::Auth::from_config(&file).expect("callers");
    let config = GatewayConfig {
        auth,
        ..GatewayConfig::default()
    };
    let (child, child_server) = child().await;
    let gw = parent_with(
        &child_server.base,
        Arc::new(MemoryStore::new()),
        Duration::from_secs(30),
        config,
        |c| c.signed_only(true),
    )
    .await;
    let resp = client()
        .post(format!("{}/v1/e2a/requests", gw.base))
        .bearer_auth("user-secret")
        .header("accept", "text/event-stream")
        .json(&envelope("write the report"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let (url, token) = push_config(&sent_one(&child).await);
    let path = url.trim_start_matches(&gw.base).to_string();
    let event = json!({"task": {"id": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"},
                      "artifacts": [{"artifactId": "a1", "name": "output", "parts": [{"text": "Signed and sealed."}]}]}});
    let body = event.to_string();
    let post_signed = |key: &'static str, token: &str| {
        let mut req = client()
            .post(&url)
            .header("content-type", "application/json")
            .header("A2A-Notification-Token", token)
            .body(body.clone());
        for (name, value) in hmac::sign(key.as_bytes(), "writer", "POST", &path, body.as_bytes()) {
            req = req.header(name.as_str(), value);
        }
        req.send()
    };
    // unsigned, with the right token: refused (signed callbacks only)
    assert_eq!(call_back(&url, Some(&token), &event).await.status(), 401);
    // signed with a key that is not the caller's, with the right token: refused
    assert_eq!(post_signed("not-the-key", &token).await.expect("post").status(), 401);
    // signed by the caller, with a wrong token: refused
    assert_eq!(
        post_signed("writer-secret-key", "nope").await.expect("post").status(),
        401
    );
    // signed by the caller, with its task's token: the run ends with the child's answer
    assert_eq!(
        post_signed("writer-secret-key", &token).await.expect("post").status(),
        202
    );
    let frames = rest_of(resp).await;
    assert_eq!(
        frames.last().expect("final").body["result"]["content"],
        "Signed and sealed."
    );
}

/// A child of A2A 0.3 posts its task in 0.3's form (`kind: "task"`, `completed`, `kind`-tagged
/// parts): read back as 1.0, it ends the run with the child's answer.
#[tokio::test]
async fn a_callback_in_a2a_0_3s_form_ends_the_run() {
    let (_child, _child_server, _gw, resp, url, token) = delegating(Stores::memory()).await;
    let event = json!({"kind": "task", "id": "child-1", "contextId": "ctx-1", "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a1", "name": "output", "parts": [{"kind": "text", "text": "Written in 0.3."}]}]});
    assert_eq!(call_back(&url, Some(&token), &event).await.status(), 202);
    let frames = rest_of(resp).await;
    assert_valid_stream(&frames);
    assert_eq!(
        frames.last().expect("final").body["result"]["content"],
        "Written in 0.3."
    );
}

/// A status update with a message, as a child posts its progress.
fn note(text: &str) -> Value {
    json!({"statusUpdate": {"taskId": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_WORKING",
        "message": {"messageId": uuid(), "role": "ROLE_AGENT", "parts": [{"text": text}]}}}})
}

/// With `relay_progress`, the child's notes reach the waiting run as reasoning frames: in order
/// when they land at its own gateway, through the store when they land at another gateway of
/// it; artifact pieces and statuses without a message are acknowledged and not relayed; the
/// answer ends the run as before.
#[tokio::test]
async fn progress_is_relayed_when_asked_here_and_from_another_gateway() {
    let (child, child_server) = child().await;
    let store = Arc::new(MemoryStore::new());
    let relay = |c: Callbacks| c.relay_progress(true);
    let long = Duration::from_secs(30);
    let a = parent_with(&child_server.base, store.clone(), long, GatewayConfig::default(), relay).await;
    let b = parent_with(&child_server.base, store, long, GatewayConfig::default(), relay).await;
    let mut resp = post(&a.base, &envelope("write the report"), "text/event-stream").await;
    assert_eq!(resp.status(), 200);
    let mut frames = read_frames(&mut resp, 1).await;
    let (url, token) = push_config(&sent_one(&child).await);
    let deltas = |frames: &[E2AResponse]| -> Vec<String> {
        frames
            .iter()
            .filter_map(|f| f.body.get("delta").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    for text in ["outline done", "draft done"] {
        assert_eq!(call_back(&url, Some(&token), &note(text)).await.status(), 202);
    }
    let two = read_frames(&mut resp, 2).await;
    assert_eq!(deltas(&two), ["outline done", "draft done"]);
    assert!(two.iter().all(|f| f.body["delta_kind"] == "reasoning"), "{two:?}");
    frames.extend(two);
    // at the other gateway: kept in the store, read by the run's own within a second
    let at_b = url.replace(&a.base, &b.base);
    assert_ne!(at_b, url);
    assert_eq!(call_back(&at_b, Some(&token), &note("review done")).await.status(), 202);
    let one = read_frames(&mut resp, 1).await;
    assert_eq!(deltas(&one), ["review done"]);
    frames.extend(one);
    // not relayed: an artifact piece, a status without a message
    let piece = json!({"artifactUpdate": {"taskId": "child-1", "contextId": "ctx-1",
        "artifact": {"artifactId": "a1", "parts": [{"text": "The rep"}]}}});
    let bare =
        json!({"statusUpdate": {"taskId": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_WORKING"}}});
    for event in [&piece, &bare] {
        assert_eq!(call_back(&url, Some(&token), event).await.status(), 202);
    }
    child.tasks.lock().insert(
        "child-1".into(),
        json!({"id": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"},
               "artifacts": [{"artifactId": "a1", "name": "output", "parts": [{"text": "The report, written."}]}]}),
    );
    assert_eq!(call_back(&url, Some(&token), &completed()).await.status(), 202);
    let rest = rest_of(resp).await;
    assert_eq!(
        deltas(&rest),
        ["The report, written."],
        "nothing else relayed: {rest:?}"
    );
    frames.extend(rest);
    assert_valid_stream(&frames);
    assert_eq!(
        frames.last().expect("final").body["result"]["content"],
        "The report, written."
    );
}

/// Without `relay_progress` (the default), a note is acknowledged and the run shows only the
/// answer.
#[tokio::test]
async fn progress_is_dropped_by_default() {
    let (_child, _child_server, _gw, resp, url, token) = delegating(Stores::memory()).await;
    assert_eq!(call_back(&url, Some(&token), &note("outline done")).await.status(), 202);
    let done = json!({"task": {"id": "child-1", "contextId": "ctx-1", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "name": "output", "parts": [{"text": "Done."}]}]}});
    assert_eq!(call_back(&url, Some(&token), &done).await.status(), 202);
    let frames = rest_of(resp).await;
    assert!(
        frames
            .iter()
            .all(|f| !Value::Object(f.body.clone()).to_string().contains("outline done")),
        "{frames:?}"
    );
    assert_eq!(frames.last().expect("final").body["result"]["content"], "Done.");
}
