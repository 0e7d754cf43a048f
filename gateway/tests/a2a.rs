//! A2A on the gateway over real HTTP (reqwest, 127.0.0.1): the card, every A2A error code on
//! the JSON-RPC binding and as problem+json on HTTP+JSON, auth, and the task stores (memory and
//! SQLite, reopened) replaying exactly the events after a `Last-Event-ID`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::sse_events;
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::SqliteStore;
use e2a_gateway::store::{Leases, MemoryStore, RunStore, Sends, StoreNotice, Stores, TaskLog};
use e2a_gateway::store::{PgOptions, PgStore};
use e2a_gateway::store::{SentRecord, StoreError, TaskAppend, TaskQuery, TaskRecord, TaskRetention};
use e2a_gateway::{Auth, Gateway, GatewayConfig};
use serde_json::{json, Value};

const SCRIPT: &str = include_str!("a2a_clients/script.json");

/// A gateway on 127.0.0.1; dropping it aborts the server like a crash (no drain).
type Server = common::Crashable;

async fn serve(config: GatewayConfig, a2a: A2aConfig, store: impl Into<Stores>) -> Server {
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    common::serve_crashable(Gateway::new(agent, config).with_a2a(a2a, store)).await
}

async fn sqlite_gateway(path: &std::path::Path) -> Server {
    sqlite_gateway_with(path, A2aConfig::default()).await
}

async fn sqlite_gateway_with(path: &std::path::Path, a2a: A2aConfig) -> Server {
    let store = Arc::new(SqliteStore::open(path).expect("open the store"));
    serve(GatewayConfig::default(), a2a, store).await
}

async fn plain() -> Server {
    serve(
        GatewayConfig::default(),
        A2aConfig::default(),
        Arc::new(MemoryStore::new()),
    )
    .await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

async fn rpc_with(base: &str, body: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = client()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A POST of `body` (JSON text) to `url`, as an A2A 1.0 client sends it.
async fn post_a2a(url: String, body: impl Into<reqwest::Body>) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .expect("send")
}

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    rpc_with(base, &body, &[("A2A-Version", "1.0")]).await.1
}

fn msg(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn code(v: &Value) -> i64 {
    v.pointer("/error/code").and_then(Value::as_i64).unwrap_or(0)
}

fn reason(v: &Value) -> &str {
    v.pointer("/error/data/0/reason").and_then(Value::as_str).unwrap_or("")
}

async fn stream_rpc(base: &str, method: &str, params: Value, last_event_id: Option<u64>) -> Vec<(Option<u64>, Value)> {
    let body = json!({"jsonrpc": "2.0", "id": "s", "method": method, "params": params}).to_string();
    let mut req = client()
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let resp = req.send().await.expect("send");
    assert_eq!(
        resp.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    sse_events(&resp.text().await.expect("body"))
}

/// Ids the gateway makes for tasks and contexts are keys of the store's tables: they are
/// time-ordered (UUID v7), so new rows go to the end of each index, not to a random page.
#[tokio::test]
async fn new_task_and_context_ids_are_time_ordered() {
    let srv = plain().await;
    let mut ids = Vec::new();
    for text in ["one", "two", "three"] {
        let r = rpc(&srv.base, "SendMessage", msg(text)).await;
        let task = r.pointer("/result/task").unwrap_or(&Value::Null);
        let id = |k: &str| task.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        ids.push((id("id"), id("contextId")));
    }
    for (task, context) in &ids {
        for id in [task, context] {
            assert_eq!(uuid::Uuid::parse_str(id).map(|u| u.get_version_num()), Ok(7), "{id}");
        }
    }
    assert!(ids.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{ids:?}");
}

#[tokio::test]
async fn the_bindings_answer_with_and_without_a_trailing_slash() {
    let s = plain().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg("hi")});
    for path in ["/a2a", "/a2a/"] {
        let resp = post_a2a(format!("{}{path}", s.base), body.to_string()).await;
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let v: Value = resp.json().await.expect("json");
        assert!(v.pointer("/result/task/id").is_some(), "{path}: {v}");
    }
    for path in ["/tasks", "/tasks/"] {
        let resp = client()
            .get(format!("{}{path}", s.base))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 200, "{path}");
    }
    // each send route answers its own way: once as JSON, or as an event stream
    for (path, media) in [
        ("/message:send", "application/a2a+json"),
        ("/message:send/", "application/a2a+json"),
        ("/message:stream", "text/event-stream"),
        ("/message:stream/", "text/event-stream"),
    ] {
        let resp = post_a2a(format!("{}{path}", s.base), msg("hi").to_string()).await;
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let got = resp.headers().get("content-type").and_then(|v| v.to_str().ok());
        assert_eq!(got, Some(media), "{path}");
    }
}

#[tokio::test]
async fn http_json_answers_in_the_media_type_the_client_accepts() {
    let s = plain().await;
    let get = |path: &str, accept: Option<&str>| {
        let mut req = client().get(format!("{}{path}", s.base)).header("A2A-Version", "1.0");
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        req.send()
    };
    let kind = |r: &reqwest::Response| {
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    for (accept, list, error) in [
        (Some("application/json"), "application/json", "application/json"),
        (None, "application/a2a+json", "application/problem+json"),
        (
            Some("application/a2a+json, application/json;q=0.5"),
            "application/a2a+json",
            "application/problem+json",
        ),
    ] {
        let ok = get("/tasks", accept).await.expect("send");
        assert_eq!((ok.status().as_u16(), kind(&ok)), (200, list.to_string()), "{accept:?}");
        let missing = get("/tasks/no-such-task", accept).await.expect("send");
        assert_eq!(
            (missing.status().as_u16(), kind(&missing)),
            (404, error.to_string()),
            "{accept:?}"
        );
        let body: Value = missing.json().await.expect("json");
        assert_eq!(
            body.pointer("/error/status").and_then(Value::as_str),
            Some("NOT_FOUND"),
            "{body}"
        );
    }
}

/// What the web layer refuses before an A2A handler runs — no credential, a method the
/// route does not have, an unknown route under an A2A path, a body over the limit — is
/// answered in the binding's own error form, with its status and headers.
#[tokio::test]
async fn web_layer_refusals_under_a2a_paths_are_in_the_bindings_error_form() {
    let config = GatewayConfig {
        auth: Auth::token("t0ken-abc"),
        ..GatewayConfig::default()
    };
    let a2a = A2aConfig {
        rest_path: "/a2a/rest".into(),
        ..A2aConfig::default()
    };
    let s = serve(config, a2a, Arc::new(MemoryStore::new())).await;
    let b = &s.base;
    let send = |method: reqwest::Method, path: &str, token: bool, body: String| {
        let mut req = client()
            .request(method, format!("{b}{path}"))
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json");
        if token {
            req = req.bearer_auth("t0ken-abc");
        }
        req.body(body).send()
    };
    let read = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let h = |n: &str| {
            r.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        let (kind, allow, challenge) = (h("content-type"), h("allow"), h("www-authenticate"));
        let body: Value = r.json().await.expect("a JSON body");
        (status, kind, allow, challenge, body)
    };
    // JSON-RPC: a JSON-RPC error, id null, with the HTTP status
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t"}}).to_string();
    let (status, kind, _, challenge, v) =
        read(send(reqwest::Method::POST, "/a2a", false, call).await.expect("send")).await;
    assert_eq!((status, kind.as_str()), (401, "application/json"), "{v}");
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(
        (v["jsonrpc"].clone(), v["id"].clone()),
        (json!("2.0"), Value::Null),
        "{v}"
    );
    assert_eq!(reason(&v), "UNAUTHENTICATED", "{v}");
    let (status, _, allow, _, v) = read(
        send(reqwest::Method::GET, "/a2a", true, String::new())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, allow.as_str()), (405, "POST"), "{v}");
    assert_eq!(code(&v), -32004, "{v}");
    // HTTP+JSON: AIP-193 problems
    let problem = |v: &Value| {
        (
            v.pointer("/error/code").and_then(Value::as_u64).unwrap_or(0),
            v.pointer("/error/status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            v.pointer("/error/details/0/reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    };
    let (status, kind, _, challenge, v) = read(
        send(reqwest::Method::GET, "/a2a/rest/tasks/t", false, String::new())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, kind.as_str()), (401, "application/problem+json"), "{v}");
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(
        problem(&v),
        (401, "UNAUTHENTICATED".into(), "UNAUTHENTICATED".into()),
        "{v}"
    );
    let (status, _, allow, _, v) = read(
        send(reqwest::Method::DELETE, "/a2a/rest/message:send", true, String::new())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, allow.as_str()), (405, "POST"), "{v}");
    assert_eq!(
        problem(&v),
        (405, "UNIMPLEMENTED".into(), "UNSUPPORTED_OPERATION".into()),
        "{v}"
    );
    // `{id}`, `{id}:cancel` and `{id}:subscribe` share a path segment: each has its own `Allow`
    for (method, path, allowed) in [
        (reqwest::Method::DELETE, "/a2a/rest/tasks/t", "GET,HEAD"),
        (reqwest::Method::PUT, "/a2a/rest/tasks/t", "GET,HEAD"),
        (reqwest::Method::GET, "/a2a/rest/tasks/t:cancel", "POST"),
        (reqwest::Method::DELETE, "/a2a/rest/tasks/t:subscribe", "GET,POST"),
    ] {
        let (status, kind, allow, _, v) =
            read(send(method.clone(), path, true, String::new()).await.expect("send")).await;
        assert_eq!((status, allow.as_str()), (405, allowed), "{method} {path}: {v}");
        assert_eq!(kind, "application/problem+json", "{method} {path}");
        assert_eq!(
            problem(&v),
            (405, "UNIMPLEMENTED".into(), "UNSUPPORTED_OPERATION".into()),
            "{method} {path}: {v}"
        );
    }
    for path in ["/a2a/rest/tasks/t/more", "/a2a/rest/nothing", "/a2a/x"] {
        let (status, kind, _, _, v) = read(
            send(reqwest::Method::GET, path, true, String::new())
                .await
                .expect("send"),
        )
        .await;
        assert_eq!(
            (status, kind.as_str()),
            (404, "application/problem+json"),
            "{path}: {v}"
        );
        assert_eq!(
            problem(&v),
            (404, "NOT_FOUND".into(), "METHOD_NOT_FOUND".into()),
            "{path}: {v}"
        );
    }
    let big = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x".repeat(5 << 20)}]}});
    let (status, _, _, _, v) = read(
        send(reqwest::Method::POST, "/a2a/rest/message:send", true, big.to_string())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 413, "{v}");
    assert_eq!(problem(&v).1, "INVALID_ARGUMENT", "{v}");
    // outside the A2A paths, E2A's own problem
    let (status, _, _, _, v) = read(
        send(reqwest::Method::GET, "/nothing", true, String::new())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, v["code"].clone()), (404, json!("E2A.NOT_FOUND")), "{v}");
}

/// The card declares the extensions of the card file; a request that does not activate a
/// required one is refused with ExtensionSupportRequiredError on both bindings; the ones a
/// request activates that the agent supports are named in the answer's `A2A-Extensions`.
#[tokio::test]
async fn required_extensions_are_declared_enforced_and_echoed() {
    let card: e2a_gateway::bindings::a2a::CardInfo = serde_json::from_value(json!({
        "extensions": [
            {"uri": "https://example.com/ext/trace/v1", "description": "traces", "required": true, "params": {"level": 2}},
            {"uri": "https://example.com/ext/cite/v1"}
        ]
    }))
    .expect("a card file with extensions");
    let a2a = A2aConfig {
        card,
        ..A2aConfig::default()
    };
    let s = serve(GatewayConfig::default(), a2a, Arc::new(MemoryStore::new())).await;
    let b = &s.base;
    let v: Value = client()
        .get(format!("{b}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(
        v["capabilities"]["extensions"],
        json!([
            {"uri": "https://example.com/ext/trace/v1", "description": "traces", "required": true, "params": {"level": 2}},
            {"uri": "https://example.com/ext/cite/v1", "required": false}
        ]),
        "{v}"
    );
    let send = json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": msg("hello")}).to_string();
    let (_, v) = rpc_with(b, &send, &[("A2A-Version", "1.0")]).await;
    assert_eq!((code(&v), v["id"].clone()), (-32008, json!(3)), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("https://example.com/ext/trace/v1"),
        "{v}"
    );
    let resp = client()
        .post(format!("{b}/message:send"))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(msg("hello").to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["error"]["details"][0]["reason"], "EXTENSION_SUPPORT_REQUIRED", "{v}");
    // activated: answered, and the supported ones the request named are echoed
    let resp = client()
        .post(format!("{b}/a2a"))
        .header("A2A-Version", "1.0")
        .header(
            "A2A-Extensions",
            "https://example.com/ext/trace/v1, https://example.com/ext/unknown",
        )
        .header("content-type", "application/json")
        .body(send)
        .send()
        .await
        .expect("send");
    assert_eq!(
        resp.headers().get("a2a-extensions").and_then(|v| v.to_str().ok()),
        Some("https://example.com/ext/trace/v1")
    );
    let v: Value = resp.json().await.expect("json");
    assert!(v["result"]["task"].is_object(), "{v}");
    // GoAI's delegation: the send's message.extensions activate them too, on every binding
    let mut goai = msg("hello");
    goai["message"]["extensions"] = json!(["https://example.com/ext/trace/v1"]);
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "SendMessage", "params": goai}).to_string();
    let (_, v) = rpc_with(b, &body, &[("A2A-Version", "1.0")]).await;
    assert!(v["result"]["task"].is_object(), "{v}");
    goai["message"]["messageId"] = json!(uuid::Uuid::new_v4().to_string());
    let resp = client()
        .post(format!("{b}/message:send"))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(goai.to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200, "HTTP+JSON");
}

/// By default a `messageId` deduplicates only a send naming a task (the answer to a pause): a
/// send naming none starts a new task whatever its `messageId` (as the A2A conformance kit
/// expects); the same answer again gets the task without running the agent, other content
/// under its `messageId` is `InvalidRequest`.
#[tokio::test]
async fn a_message_id_deduplicates_the_sends_that_name_a_task() {
    let s = plain().await;
    let b = &s.base;
    let send = msg("hello");
    let one = rpc(b, "SendMessage", send.clone()).await;
    let two = rpc(b, "SendMessage", send.clone()).await;
    let (one, two) = (&one["result"]["task"]["id"], &two["result"]["task"]["id"]);
    assert!(
        one.is_string() && two.is_string() && one != two,
        "a new task each: {one} {two}"
    );
    let mut other = send.clone();
    other["message"]["parts"][0]["text"] = json!("something else");
    let three = rpc(b, "SendMessage", other).await;
    assert!(three["result"]["task"]["id"].is_string(), "{three}");
    // the answer to a pause names its task
    let paused = rpc(b, "SendMessage", msg("book a table")).await;
    let task = &paused["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{paused}");
    let answer = json!({"message": {
        "messageId": "answer-1", "taskId": task["id"], "contextId": task["contextId"],
        "role": "ROLE_USER", "parts": [{"text": "4"}]
    }});
    let done = rpc(b, "SendMessage", answer.clone()).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let tasks = rpc(b, "ListTasks", json!({})).await["result"]["tasks"]
        .as_array()
        .map(Vec::len);
    let again = rpc(b, "SendMessage", answer.clone()).await;
    assert_eq!(again["result"]["task"]["id"], task["id"], "{again}");
    assert_eq!(
        again["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{again}"
    );
    let after = rpc(b, "ListTasks", json!({})).await["result"]["tasks"]
        .as_array()
        .map(Vec::len);
    assert_eq!(tasks, after, "the agent did not run again");
    let mut changed = answer.clone();
    changed["message"]["parts"][0]["text"] = json!("5");
    let refused = rpc(b, "SendMessage", changed).await;
    assert_eq!(code(&refused), -32600, "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap_or("").contains("messageId"),
        "{refused}"
    );
}

/// A `SendMessage` of `text` whose client gives up after `patience`.
async fn send_and_give_up(base: &str, text: &str, patience: Duration) -> reqwest::Result<reqwest::Response> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg(text)}).to_string();
    reqwest::Client::builder()
        .timeout(patience)
        .build()
        .expect("client")
        .post(format!("{base}/a2a"))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
}

/// With `[a2a] message_ids = "always"`, a message sent twice (a retry) gets the task of the
/// first send, without running the agent again — on both bindings, streaming too, and after a
/// restart on the same SQLite file; the same messageId with other content is refused; an
/// `Idempotency-Key` on HTTP+JSON gets the first answer for the same request and `409` for
/// another (whatever `message_ids` says).
/// A client that goes away while its send is starting (the agent slow to answer first) leaves
/// no claimed task without its run: the turn's start and its run go on, and the task ends.
#[tokio::test]
async fn a_send_whose_client_goes_away_while_it_starts_still_runs_its_task() {
    let slow = r#"{"scenarios": [{"name": "slow", "match": {"text": "slow"}, "steps": [
        {"type": "text", "text": "at last", "delay_ms": 400}, {"type": "complete"}]}]}"#;
    let agent = ScriptAgent::from_json(slow).expect("script");
    let gateway =
        Gateway::new(agent, GatewayConfig::default()).with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    let s = common::serve_crashable(gateway).await;
    let b = s.base.clone();
    let gone = send_and_give_up(&b, "slow", Duration::from_millis(100)).await;
    assert!(
        gone.is_err(),
        "the client gave up before the agent's first frame: {gone:?}"
    );
    for _ in 0..100 {
        let listed = rpc(&b, "ListTasks", json!({})).await;
        let tasks = listed["result"]["tasks"].as_array().cloned().unwrap_or_default();
        if tasks.len() == 1 && tasks[0]["status"]["state"] == "TASK_STATE_COMPLETED" {
            assert_eq!(tasks[0]["status"]["message"]["parts"][0]["text"], "at last", "{listed}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task of the send whose client went away did not run to its end");
}

/// A gateway whose agent answers "slow" with a first frame at once and its last after 400 ms.
async fn slow_run_gateway(config: A2aConfig) -> common::Crashable {
    let slow = r#"{"scenarios": [{"name": "slow", "match": {"text": "slow"}, "steps": [
        {"type": "text", "text": "under way"},
        {"type": "text", "text": " at last", "delay_ms": 400}, {"type": "complete"}]}]}"#;
    let agent = ScriptAgent::from_json(slow).expect("script");
    let gateway = Gateway::new(agent, GatewayConfig::default()).with_a2a(config, Arc::new(MemoryStore::new()));
    common::serve_crashable(gateway).await
}

/// Waits for the one task of `base` to be completed with all of its agent's text.
async fn the_run_ends(base: &str) {
    for _ in 0..100 {
        let listed = rpc(base, "ListTasks", json!({})).await;
        let tasks = listed["result"]["tasks"].as_array().cloned().unwrap_or_default();
        if tasks.len() == 1 && tasks[0]["status"]["state"] == "TASK_STATE_COMPLETED" {
            assert!(tasks[0].to_string().contains("under way at last"), "{listed}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task's run did not go on to its end");
}

/// A blocking send runs its turn in the request's task: a client gone mid-run (after the
/// start) leaves the run to go on by itself.
#[tokio::test]
async fn a_blocking_send_whose_client_goes_away_mid_run_still_ends_its_task() {
    let s = slow_run_gateway(A2aConfig::default()).await;
    let b = s.base.clone();
    let gone = send_and_give_up(&b, "slow", Duration::from_millis(150)).await;
    assert!(
        gone.is_err(),
        "the client gave up before the agent's last frame: {gone:?}"
    );
    the_run_ends(&b).await;
}

/// A blocking send past its blocking timeout is answered with its task as it is then, and
/// its run goes on.
#[tokio::test]
async fn a_blocking_send_past_its_timeout_answers_its_task_as_it_is_and_the_run_goes_on() {
    let config = A2aConfig {
        blocking_timeout: Duration::from_millis(100),
        ..A2aConfig::default()
    };
    let s = slow_run_gateway(config).await;
    let b = s.base.clone();
    let sent = rpc(&b, "SendMessage", msg("slow")).await;
    let state = &sent["result"]["task"]["status"]["state"];
    assert!(
        *state == "TASK_STATE_WORKING" || *state == "TASK_STATE_SUBMITTED",
        "answered before its run ended: {sent}"
    );
    the_run_ends(&b).await;
}

#[tokio::test]
async fn a_message_sent_twice_is_delivered_once() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("tasks.db");
    let always = || A2aConfig {
        message_ids: e2a::types::MessageIdDedup::Always,
        ..A2aConfig::default()
    };
    let s = sqlite_gateway_with(&db, always()).await;
    let b = s.base.clone();
    let send = msg("hello");
    let first = rpc(&b, "SendMessage", send.clone()).await;
    let task = first["result"]["task"]["id"].as_str().expect("a task").to_string();
    let again = rpc(&b, "SendMessage", send.clone()).await;
    assert_eq!(again["result"]["task"]["id"], json!(task), "{again}");
    assert_eq!(
        again["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{again}"
    );
    // the streaming retry replays the first send's turn
    let events = stream_rpc(&b, "SendStreamingMessage", send.clone(), None).await;
    assert_eq!(events[0].1["result"]["task"]["id"], json!(task), "{events:?}");
    let last = &events.last().expect("events").1;
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    // the same id over HTTP+JSON (the same caller)
    let resp = post_a2a(format!("{b}/message:send"), send.to_string()).await;
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["task"]["id"], json!(task), "{v}");
    // one task: the agent ran once
    let listed = rpc(&b, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().map(Vec::len), Some(1), "{listed}");
    // other content under the same messageId
    let mut other = send.clone();
    other["message"]["parts"][0]["text"] = json!("something else");
    let refused = rpc(&b, "SendMessage", other).await;
    assert_eq!(code(&refused), -32600, "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap_or("").contains("messageId"),
        "{refused}"
    );
    // the window is in the store: a restarted gateway remembers
    drop(s);
    let s = sqlite_gateway_with(&db, always()).await;
    let after = rpc(&s.base, "SendMessage", send.clone()).await;
    assert_eq!(after["result"]["task"]["id"], json!(task), "{after}");
    // Idempotency-Key: the same request again is the first answer, another one a conflict
    let keyed = |key: &'static str, body: &Value| {
        client()
            .post(format!("{}/message:send", s.base))
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json")
            .header("Idempotency-Key", key)
            .body(body.to_string())
            .send()
    };
    let answer = |resp: reqwest::Response| async move {
        let status = resp.status().as_u16();
        (status, resp.json::<Value>().await.expect("json"))
    };
    let (status, one) = answer(keyed("order-42", &msg("hello")).await.expect("send")).await;
    assert_eq!(status, 200, "{one}");
    let body = json!({"message": {"messageId": "fixed-id", "role": "ROLE_USER", "parts": [{"text": "hello"}]}});
    let (status, v) = answer(keyed("order-42", &body).await.expect("send")).await;
    assert_eq!(status, 409, "another request under a used key: {v}");
    assert_eq!(v["error"]["status"], "ABORTED", "{v}");
    let (_, two) = answer(keyed("order-43", &body).await.expect("send")).await;
    let (status, repeat) = answer(keyed("order-43", &body).await.expect("send")).await;
    assert_eq!(status, 200, "{repeat}");
    assert_eq!(repeat["task"]["id"], two["task"]["id"], "{repeat}");
    assert_ne!(one["task"]["id"], two["task"]["id"]);
}

#[tokio::test]
async fn input_limits_hold_on_both_a2a_bindings() {
    let s = plain().await;
    let b = &s.base;
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let body = format!(r#"{{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {{"id": "t", "x": {deep}}}}}"#);
    let (_, v) = rpc_with(b, &body, &[("A2A-Version", "1.0")]).await;
    assert_eq!(code(&v), -32600, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap_or("").contains("max_depth"),
        "{v}"
    );
    let long =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x".repeat(3 << 20)}}).to_string();
    let (_, v) = rpc_with(b, &long, &[("A2A-Version", "1.0")]).await;
    assert_eq!(code(&v), -32600, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("max_string_bytes"),
        "{v}"
    );
    let resp = post_a2a(format!("{b}/message:send"), format!(r#"{{"message": {deep}}}"#)).await;
    assert_eq!(resp.status(), 400);
}

/// Every operation's request is read into its typed request the same way on JSON-RPC and
/// HTTP+JSON: what clients send for integers and flags reads, a field that does not is
/// refused naming it (the message and `ErrorInfo.metadata.pointer`).
#[tokio::test]
async fn a_request_field_that_does_not_read_is_named_by_its_pointer() {
    let s = plain().await;
    let b = &s.base;
    let sent = rpc(b, "SendMessage", msg("hello")).await;
    let id = sent["result"]["task"]["id"].as_str().expect("a task").to_string();
    // "2", 2.0 and 2 are the same historyLength; "true" a flag
    for history in [json!("1"), json!(1.0), json!(1)] {
        let v = rpc(b, "GetTask", json!({"id": id, "historyLength": history})).await;
        assert_eq!(
            v["result"]["history"].as_array().map(Vec::len),
            Some(1),
            "{history}: {v}"
        );
    }
    let v = rpc(b, "ListTasks", json!({"pageSize": "5", "includeArtifacts": "true"})).await;
    assert_eq!(v["result"]["pageSize"], 5, "{v}");
    let pointer = |v: &Value| {
        v.pointer("/error/data/0/metadata/pointer")
            .and_then(Value::as_str)
            .map(String::from)
    };
    for (method, params, at) in [
        (
            "GetTask",
            json!({"id": id, "historyLength": "many"}),
            "/params/historyLength",
        ),
        ("GetTask", json!({"historyLength": 1}), "/params/id"),
        ("GetTask", json!({"id": 7}), "/params/id"),
        ("ListTasks", json!({"includeArtifacts": 3}), "/params/includeArtifacts"),
        ("ListTasks", json!({"pageSize": 500}), "/params/pageSize"),
        ("CancelTask", json!({}), "/params/id"),
        ("GetTaskPushNotificationConfig", json!({"taskId": id}), "/params/id"),
    ] {
        let v = rpc(b, method, params.clone()).await;
        assert_eq!(
            (code(&v), pointer(&v).as_deref()),
            (-32602, Some(at)),
            "{method} {params}: {v}"
        );
        let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
        let dotted = at.trim_start_matches('/').replace('/', ".");
        assert!(message.starts_with(&dotted), "{method}: {message}");
    }
    // HTTP+JSON reads its query into the same request
    let resp = client()
        .get(format!("{b}/tasks/{id}?historyLength=many"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), 400);
    let problem: Value = resp.json().await.expect("problem");
    let details = problem.pointer("/error/details/0/metadata/pointer");
    assert_eq!(details, Some(&json!("/params/historyLength")), "{problem}");
}

#[tokio::test]
async fn jsonrpc_errors_carry_the_a2a_codes() {
    let s = plain().await;
    let b = &s.base;
    let (_, v) = rpc_with(b, "{not json", &[]).await;
    assert_eq!((code(&v), v["id"].clone()), (-32700, Value::Null));
    let (_, v) = rpc_with(b, r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#, &[]).await;
    assert_eq!(code(&v), -32600);
    assert_eq!(v["id"], 1);
    let (_, v) = rpc_with(b, r#"[1,2]"#, &[]).await;
    assert_eq!(code(&v), -32600);
    // a member named twice: the last one is the request's (as a JSON value reads it)
    let twice = r#"{"jsonrpc":"2.0","id":1,"id":"two","method":"GetTask","method":"NoSuchMethod","params":{}}"#;
    let (_, v) = rpc_with(b, twice, &[]).await;
    assert_eq!((code(&v), v["id"].clone()), (-32601, json!("two")), "{v}");
    // an object cut short is not JSON
    let (_, v) = rpc_with(b, r#"{"jsonrpc":"2.0","id":1,"method":"GetTask""#, &[]).await;
    assert_eq!((code(&v), v["id"].clone()), (-32700, Value::Null), "{v}");
    assert_eq!(code(&rpc(b, "NoSuchMethod", json!({})).await), -32601);
    let v = rpc(b, "SendMessage", json!({})).await;
    assert_eq!((code(&v), reason(&v)), (-32602, "INVALID_PARAMS"));
    let v = rpc(
        b,
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
    )
    .await;
    assert_eq!(code(&v), -32602);
    let v = rpc(
        b,
        "SendMessage",
        json!({"message": {"messageId": "m", "parts": [{"text": "x"}]}}),
    )
    .await;
    assert_eq!(code(&v), -32602, "a message needs a role");
    // ProtoJSON: the proto field names are accepted too
    let v = rpc(
        b,
        "SendMessage",
        json!({"message": {"message_id": "snake-1", "role": "ROLE_USER", "context_id": "ctx-snake",
                           "parts": [{"text": "hi", "metadata": {"keep_me": 1}}]},
               "configuration": {"history_length": 1}}),
    )
    .await;
    assert_eq!(v["result"]["task"]["contextId"], "ctx-snake", "{v}");
    assert_eq!(v["result"]["task"]["history"].as_array().map(Vec::len), Some(1));
    let v = rpc(b, "GetTask", json!({"id": "nope"})).await;
    assert_eq!((code(&v), reason(&v)), (-32001, "TASK_NOT_FOUND"));
    assert_eq!(v["id"], 7);
    let v = rpc(
        b,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "t", "url": "https://x"}),
    )
    .await;
    assert_eq!((code(&v), reason(&v)), (-32001, "TASK_NOT_FOUND"));
    let v = rpc(b, "tasks/pushNotificationConfig/set", json!({})).await;
    assert_eq!(code(&v), -32602, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("url")), "{v}");
    let mut p = msg("hello");
    p["configuration"] = json!({"acceptedOutputModes": ["image/png"]});
    assert_eq!(code(&rpc(b, "SendMessage", p).await), -32005);
    // no extended card without auth: capabilities.extendedAgentCard is false → unsupported
    assert_eq!(code(&rpc(b, "GetExtendedAgentCard", json!({})).await), -32004);
    let v = rpc(
        b,
        "SendMessage",
        json!({"message": {"messageId": "m", "role": "ROLE_USER",
                           "parts": [{"raw": "dGNr", "mediaType": "application/x-unsupported"}]}}),
    )
    .await;
    assert_eq!((code(&v), reason(&v)), (-32005, "CONTENT_TYPE_NOT_SUPPORTED"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}).to_string();
    let (_, v) = rpc_with(b, &body, &[("A2A-Version", "9.9")]).await;
    assert_eq!((code(&v), reason(&v)), (-32009, "VERSION_NOT_SUPPORTED"));

    // a completed task: not cancelable, not subscribable, not continued
    let done = rpc(b, "SendMessage", msg("hello")).await;
    let id = done["result"]["task"]["id"].as_str().expect("task id").to_string();
    assert_eq!(done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        done["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "Echo: hello"
    );
    assert_eq!(code(&rpc(b, "CancelTask", json!({"id": id})).await), -32002);
    assert_eq!(code(&rpc(b, "SubscribeToTask", json!({"id": id})).await), -32004);
    let mut again = msg("more");
    again["message"]["taskId"] = id.clone().into();
    assert_eq!(code(&rpc(b, "SendMessage", again).await), -32004);
    // 0.3 method names keep working (no A2A-Version header means 0.3)
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": id}}).to_string();
    let (_, v) = rpc_with(b, &body, &[]).await;
    assert_eq!(v["result"]["id"], id.as_str());
}

#[tokio::test]
async fn rest_errors_are_problem_details_with_the_a2a_type() {
    let s = plain().await;
    let resp = client()
        .get(format!("{}/tasks/nope", s.base))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(
        resp.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(v["type"], "https://a2a-protocol.org/errors/task-not-found");
    assert_eq!(v["status"], 404);
    assert_eq!(v["error"]["details"][0]["reason"], "TASK_NOT_FOUND");

    let resp = client()
        .post(format!("{}/message:send", s.base))
        .header("content-type", "application/json")
        .body(msg("hello").to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    let id = v["task"]["id"].as_str().expect("id").to_string();
    let resp = client()
        .post(format!("{}/tasks/{id}:cancel", s.base))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 409);
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(v["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE");
    assert_eq!(v["error"]["status"], "FAILED_PRECONDITION");
    let resp = client()
        .get(format!("{}/tasks?pageSize=1000", s.base))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 400);
    let resp = client()
        .get(format!("{}/tasks?pageSize=1&historyLength=0", s.base))
        .send()
        .await
        .expect("send");
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(v["totalSize"], 1);
    assert!(v["tasks"][0].get("history").is_none());
    let resp = client()
        .post(format!("{}/tasks/{id}/pushNotificationConfigs", s.base))
        .send()
        .await
        .expect("send");
    let resp_status = resp.status().as_u16();
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(resp_status, 400);
    assert_eq!(v["error"]["status"], "INVALID_ARGUMENT", "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("url")), "{v}");
}

#[tokio::test]
async fn card_follows_the_public_url_and_caches() {
    let config = GatewayConfig {
        auth: Auth::token("t0ken-abc"),
        ..GatewayConfig::default()
    };
    let a2a = A2aConfig {
        public_url: Some("https://agents.example.com/team/".into()),
        ..A2aConfig::default()
    };
    let s = serve(config, a2a, Arc::new(MemoryStore::new())).await;
    let resp = client()
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .expect("etag")
        .to_string();
    assert!(resp
        .headers()
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.contains("max-age=")));
    assert!(resp
        .headers()
        .get("last-modified")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.ends_with(" GMT")));
    let card: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://agents.example.com/team/a2a"
    );
    assert_eq!(card["supportedInterfaces"][1]["url"], "https://agents.example.com/team");
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    assert!(!card.to_string().contains("t0ken-abc"));
    let resp = client()
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 304);

    // the bindings need the token; the extended card answers authenticated callers
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}).to_string();
    let (status, _) = rpc_with(&s.base, &body, &[]).await;
    assert_eq!(status, 401);
    let (status, v) = rpc_with(&s.base, &body, &[("authorization", "Bearer t0ken-abc")]).await;
    assert_eq!(status, 200);
    assert_eq!(v["result"]["name"], card["name"]);
    let resp = client().get(format!("{}/tasks", s.base)).send().await.expect("send");
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers().get("www-authenticate").is_some());
}

#[tokio::test]
async fn http_json_routes_under_a_prefix_like_goai() {
    let a2a = A2aConfig {
        rest_path: "/a2a/agents/writer".into(),
        ..A2aConfig::default()
    };
    let s = serve(GatewayConfig::default(), a2a, Arc::new(MemoryStore::new())).await;
    let card: Value = serde_json::from_str(
        &client()
            .get(format!("{}/a2a/agents/writer/.well-known/agent-card.json", s.base))
            .send()
            .await
            .expect("send")
            .text()
            .await
            .expect("body"),
    )
    .expect("card");
    let rest_url = card["supportedInterfaces"][1]["url"].as_str().expect("url").to_string();
    assert_eq!(rest_url, format!("{}/a2a/agents/writer", s.base));
    let resp = client()
        .post(format!("{rest_url}/message:send"))
        .header("content-type", "application/json")
        .body(msg("hello").to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(
        resp.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/a2a+json")
    );
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    let id = v["task"]["id"].as_str().expect("id");
    let resp = client()
        .get(format!("{rest_url}/tasks/{id}?historyLength=1"))
        .send()
        .await
        .expect("send");
    let t: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("json");
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(t["history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn streams_number_events_and_resume_after_any_of_them() {
    let s = plain().await;
    let all = stream_rpc(&s.base, "SendStreamingMessage", msg("artifacts please"), None).await;
    let ids: Vec<u64> = all.iter().filter_map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=all.len() as u64).collect::<Vec<_>>());
    assert!(all.iter().all(|(_, d)| d["id"] == "s" && d["jsonrpc"] == "2.0"));
    let task_id = all[0].1["result"]["task"]["id"].as_str().expect("id").to_string();
    for after in [0, 1, 5, all.len() as u64] {
        let rest = stream_rpc(&s.base, "SubscribeToTask", json!({"id": task_id}), Some(after)).await;
        let want: Vec<Value> = all
            .iter()
            .skip(after as usize)
            .map(|(_, d)| d["result"].clone())
            .collect();
        let got: Vec<Value> = rest.iter().map(|(_, d)| d["result"].clone()).collect();
        assert_eq!(got, want, "after {after}");
    }
}

#[tokio::test]
async fn a_subscriber_of_a_paused_task_follows_it_to_the_end() {
    let s = plain().await;
    let paused = rpc(&s.base, "SendMessage", msg("book a table")).await;
    let task = &paused["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{paused}");
    let id = task["id"].as_str().expect("id").to_string();
    let base = s.base.clone();
    let sub_id = id.clone();
    let subscriber =
        tokio::spawn(async move { stream_rpc(&base, "SubscribeToTask", json!({"id": sub_id}), None).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut answer = msg("5");
    answer["message"]["taskId"] = id.clone().into();
    let done = rpc(&s.base, "SendMessage", answer).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let events = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscription ends at the terminal state")
        .expect("join");
    assert_eq!(
        events[0].1["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let last = &events[events.len() - 1].1["result"];
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        last["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        "Booked for 5."
    );
    let ids: Vec<u64> = events.iter().filter_map(|(i, _)| *i).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
}

/// The script agent keeps its pause in the store: an answer sent after a restart goes on where
/// the agent stopped. A pause the store no longer has is refused, never run as a new turn.
#[tokio::test]
async fn an_answer_to_a_pause_asked_before_a_restart_goes_on_where_the_agent_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.db");
    let (id, lost) = {
        let s = sqlite_gateway(&path).await;
        let mut ids = Vec::new();
        for _ in 0..2 {
            let paused = rpc(&s.base, "SendMessage", msg("book a table")).await;
            assert_eq!(
                paused["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
                "{paused}"
            );
            ids.push(paused["result"]["task"]["id"].as_str().expect("id").to_string());
        }
        (ids[0].clone(), ids[1].clone())
        // the gateway goes away, and its agent's memory of the pauses with it
    };
    // the second pause is no longer in the store (as if forgotten)
    let db = rusqlite::Connection::open(&path).expect("open");
    let gone = db
        .execute("DELETE FROM e2a_pauses WHERE key = ?1", [format!("agent:{lost}")])
        .expect("delete");
    assert_eq!(gone, 1);
    drop(db);
    let s = sqlite_gateway(&path).await;
    let mut answer = msg("5");
    answer["message"]["taskId"] = id.clone().into();
    let done = rpc(&s.base, "SendMessage", answer).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    assert_eq!(
        done["result"]["task"]["status"]["message"]["parts"][0]["text"], "Booked for 5.",
        "{done}"
    );
    // "book a table" would match the scenario afresh: a silent new turn would pause again
    let mut answer = msg("book a table");
    answer["message"]["taskId"] = lost.clone().into();
    let refused = rpc(&s.base, "SendMessage", answer.clone()).await;
    assert_eq!(code(&refused), -32602, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains(&lost) && said.contains("no longer holds"), "{refused}");
    // the same on HTTP+JSON: 400 before any stream
    let resp = post_a2a(format!("{}/message:stream", s.base), answer.to_string()).await;
    assert_eq!(resp.status(), 400);
    let task = rpc(&s.base, "GetTask", json!({"id": lost})).await;
    assert_eq!(task["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
}

#[tokio::test]
async fn a_run_that_outlives_the_gateway_ends_failed_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.db");
    let task_id = {
        let s = sqlite_gateway(&path).await;
        let mut p = msg("never finish");
        p["configuration"] = json!({"returnImmediately": true});
        let v = rpc(&s.base, "SendMessage", p).await;
        let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
        tokio::time::sleep(Duration::from_millis(300)).await;
        id
        // the server is aborted here (its run never finished)
    };
    let s = sqlite_gateway(&path).await;
    // settled when the gateway starts, before anyone reads it (its webhooks hear of it)
    let store = SqliteStore::open(&path).expect("open beside the gateway");
    let mut state = None;
    for _ in 0..100 {
        state = store
            .get(&task_id)
            .await
            .expect("get")
            .map(|r| r.state.as_str().to_string());
        if state.as_deref() == Some("TASK_STATE_FAILED") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state.as_deref(), Some("TASK_STATE_FAILED"));
    let v = rpc(&s.base, "GetTask", json!({"id": task_id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_FAILED", "{v}");
    let events = stream_rpc(&s.base, "SubscribeToTask", json!({"id": task_id}), Some(0)).await;
    let states: Vec<Value> = events
        .iter()
        .map(|(_, d)| {
            d["result"]
                .pointer("/statusUpdate/status/state")
                .or_else(|| d["result"].pointer("/task/status/state"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_eq!(states.first(), Some(&json!("TASK_STATE_SUBMITTED")));
    assert_eq!(states.last(), Some(&json!("TASK_STATE_FAILED")));
}

#[tokio::test]
async fn a_task_ended_by_another_writer_stays_ended_and_its_run_stops() {
    let store = Arc::new(MemoryStore::new());
    let s = serve(GatewayConfig::default(), A2aConfig::default(), store.clone()).await;
    let mut p = msg("count slowly");
    p["configuration"] = json!({"returnImmediately": true});
    let v = rpc(&s.base, "SendMessage", p).await;
    let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
    tokio::time::sleep(Duration::from_millis(400)).await;
    // another gateway of the store settles it as failed (as when its lease ran out) while
    // its run still goes on here
    let mut rec = store.get(&id).await.expect("get").expect("stored");
    assert_eq!(rec.state.as_str(), "TASK_STATE_WORKING");
    rec.state = "TASK_STATE_FAILED".parse().expect("a state");
    rec.task.status.state = rec.state;
    let failed =
        json!({"statusUpdate": {"taskId": id, "contextId": rec.context_id, "status": {"state": "TASK_STATE_FAILED"}}});
    store
        .append(TaskAppend::new(rec, &failed, true))
        .await
        .expect("the first end is stored");
    // the run's later events, its completion among them, are refused: the task stays failed
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let v = rpc(&s.base, "GetTask", json!({"id": id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_FAILED", "{v}");
    let stored = store.get(&id).await.expect("get").expect("stored");
    assert_eq!(stored.state.as_str(), "TASK_STATE_FAILED");
    let log = store.events_after(&id, 0).await.expect("events");
    let last = log.last().and_then(|e| e.json().ok()).unwrap_or_default();
    assert_eq!(last, failed, "nothing after the first end");
    assert!(log.iter().all(|e| !e.event.contains("TASK_STATE_COMPLETED")));
}

#[tokio::test]
async fn long_streams_keep_sparse_snapshots_that_readers_catch_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tasks.db");
    let story = "0123456789".repeat(15);
    let output = |task: &Value| -> String {
        task["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["name"] == "output")
            .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["text"].as_str().map(String::from))
            .collect()
    };
    let id = {
        let s = serve(
            GatewayConfig::default(),
            A2aConfig::default(),
            Arc::new(SqliteStore::open(&path).expect("open")),
        )
        .await;
        let mut p = msg("long story");
        p["configuration"] = json!({"returnImmediately": true});
        let v = rpc(&s.base, "SendMessage", p).await;
        let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
        let mut task = Value::Null;
        for _ in 0..100 {
            task = rpc(&s.base, "GetTask", json!({"id": id})).await["result"].clone();
            if output(&task).len() == story.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(output(&task), story, "GetTask mid-run sees every chunk");
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
        id
    };
    let store = SqliteStore::open(&path).expect("reopen");
    let stored = store.get(&id).await.expect("get").expect("task");
    assert!(
        stored.snapshot_seq < stored.last_seq,
        "snapshots are sparse: {stored:?}"
    );
    let s = serve(GatewayConfig::default(), A2aConfig::default(), Arc::new(store)).await;
    let task = rpc(&s.base, "GetTask", json!({"id": id})).await["result"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        output(&task),
        story,
        "after a crash the snapshot is rebuilt from the log"
    );
}

fn record(id: &str, owner: Option<&str>, context: &str, state: &str, at: i64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        context_id: context.into(),
        owner: owner.map(String::from),
        state: state.parse().expect("a task state"),
        task: serde_json::from_value(json!({"id": id, "contextId": context, "status": {"state": state}}))
            .expect("a task"),
        last_seq: 0,
        snapshot_seq: 0,
        created_ms: at,
        updated_ms: at,
    }
}

async fn store_contract(store: &(impl TaskLog + Sends + Leases)) {
    assert_eq!(store.get("a").await.expect("get"), None);
    for (i, state) in ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_WORKING"]
        .iter()
        .enumerate()
    {
        let seq = store
            .append(TaskAppend::new(
                record("a", Some("u1"), "c1", state, 10 + i as i64),
                &json!({"n": i}),
                true,
            ))
            .await
            .expect("append");
        assert_eq!(seq, i as u64 + 1);
    }
    store
        .append(TaskAppend::new(
            record("b", Some("u1"), "c2", "TASK_STATE_WORKING", 50),
            &json!({"n": 0}),
            true,
        ))
        .await
        .expect("append");
    store
        .append(TaskAppend::new(
            record("c", Some("u2"), "c1", "TASK_STATE_WORKING", 60),
            &json!({"n": 0}),
            true,
        ))
        .await
        .expect("append");
    let a = store.get("a").await.expect("get").expect("a");
    assert_eq!(
        (a.state.as_str(), a.last_seq, a.created_ms),
        ("TASK_STATE_WORKING", 3, 10)
    );
    let after: Vec<u64> = store
        .events_after("a", 1)
        .await
        .expect("events")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(after, vec![2, 3]);
    let page = store
        .list(TaskQuery {
            owner: Some("u1".into()),
            limit: 1,
            ..TaskQuery::default()
        })
        .await
        .expect("list");
    assert_eq!((page.total, page.tasks[0].id.as_str()), (2, "b"));
    let page = store
        .list(TaskQuery {
            owner: Some("u1".into()),
            context_id: Some("c1".into()),
            state: Some(e2a::types::A2aTaskState::TaskStateWorking),
            limit: 10,
            ..TaskQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(page.tasks.len(), 1);
    let none = store
        .list(TaskQuery {
            owner: None,
            limit: 10,
            ..TaskQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(none.total, 0);
    // an event without a snapshot: the log and last_seq move, the stored task may stay behind
    let mut changed = record("a", Some("u1"), "c1", "TASK_STATE_WORKING", 20);
    changed.task.metadata.insert("marker".into(), true.into());
    let seq = store
        .append(TaskAppend::new(changed, &json!({"n": 9}), false))
        .await
        .expect("append");
    assert_eq!(seq, 4);
    let a = store.get("a").await.expect("get").expect("a");
    assert_eq!(a.last_seq, 4);
    assert!(a.snapshot_seq == 3 || a.snapshot_seq == 4, "{a:?}");
    assert_eq!(a.task.metadata.get("marker").is_some(), a.snapshot_seq == 4);
    // several events in one append: numbered on in order, the snapshot after the last
    let mut burst = record("a", Some("u1"), "c1", "TASK_STATE_COMPLETED", 30);
    burst.task.metadata.insert("burst".into(), true.into());
    let mut write = TaskAppend::new(burst, &json!({"n": 10}), true);
    write
        .events
        .extend([json!({"n": 11}).to_string().into(), json!({"n": 12}).to_string().into()]);
    let seq = store.append(write).await.expect("append");
    assert_eq!(seq, 7);
    let a = store.get("a").await.expect("get").expect("a");
    assert_eq!((a.last_seq, a.snapshot_seq, a.updated_ms), (7, 7, 30), "{a:?}");
    assert_eq!(a.task.metadata["burst"], true);
    let log: Vec<(u64, Value)> = store
        .events_after("a", 4)
        .await
        .expect("events")
        .into_iter()
        .map(|e| (e.seq, e.json().expect("JSON")))
        .collect();
    assert_eq!(
        log,
        vec![(5, json!({"n": 10})), (6, json!({"n": 11})), (7, json!({"n": 12}))]
    );
    // that append ended the task: a terminal state is final, a later append is refused whole
    let late = store
        .append(TaskAppend::new(
            record("a", Some("u1"), "c1", "TASK_STATE_FAILED", 40),
            &json!({"n": 13}),
            true,
        ))
        .await;
    assert!(matches!(late, Err(StoreError::Ended(ref id)) if id == "a"), "{late:?}");
    let a = store.get("a").await.expect("get").expect("a");
    assert_eq!(
        (a.state.as_str(), a.last_seq, a.updated_ms),
        ("TASK_STATE_COMPLETED", 7, 30)
    );
    assert_eq!(store.events_after("a", 0).await.expect("events").len(), 7);
    // what callers sent: the first record of an owner's key wins, other owners have their own
    let sent = |owner: &str, fingerprint: &str, task: &str| SentRecord {
        owner: owner.into(),
        key: "message:m-1".into(),
        fingerprint: fingerprint.into(),
        task_id: task.into(),
        at_ms: 1_700_000_000_000,
    };
    assert_eq!(
        store.remember_send(sent("ann", "f1", "a")).await.expect("remember"),
        None
    );
    let first = store.remember_send(sent("ann", "f2", "b")).await.expect("remember");
    assert_eq!(first, Some(sent("ann", "f1", "a")));
    assert_eq!(
        store.remember_send(sent("bob", "f2", "b")).await.expect("remember"),
        None
    );
}

#[tokio::test]
async fn stores_keep_the_same_contract() {
    store_contract(&MemoryStore::new()).await;
    store_contract(&SqliteStore::in_memory().expect("sqlite")).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    store_contract(&SqliteStore::open(&path).expect("open")).await;
    let reopened = SqliteStore::open(&path).expect("reopen");
    assert_eq!(reopened.events_after("a", 0).await.expect("events").len(), 7);
    let a = reopened.get("a").await.expect("get").expect("a");
    assert_eq!((a.last_seq, a.snapshot_seq), (7, 7));
}

async fn next_notice(rx: &mut tokio::sync::broadcast::Receiver<StoreNotice>) -> StoreNotice {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a notice")
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tls_verifies_the_server_certificate() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let Some(ca) = common::test_ca() else {
        eprintln!("skipped: the test server does not speak TLS (no E2A_TEST_POSTGRES_CA)");
        return;
    };
    let options = |ca_file| PgOptions {
        ca_file,
        connect_timeout: Duration::from_secs(5),
        ..PgOptions::default()
    };
    // TLS required and verified against the server's own certificate
    let store = PgStore::connect(&format!("{url}?sslmode=require"), options(Some(ca.clone())))
        .await
        .expect("TLS with the server's certificate as CA");
    store_contract(&store).await;
    // a certificate nobody vouches for is refused, whatever the sslmode
    for mode in ["require", "prefer"] {
        let err = PgStore::connect(&format!("{url}?sslmode={mode}"), options(None))
            .await
            .expect_err("an unknown issuer");
        assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
    }
    // a CA file without certificates is an error of its own
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").expect("write");
    let err = PgStore::connect(&url, options(Some(empty)))
        .await
        .expect_err("no certificate");
    assert!(err.to_string().contains("no certificate"), "{err}");
    // and sslmode=disable is plain TCP
    PgStore::connect(&format!("{url}?sslmode=disable"), options(None))
        .await
        .expect("plain TCP");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_same_contract_and_migrates_once() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    // two gateways starting together: the migrations run once
    let (a, b) = tokio::join!(common::pg(&url), common::pg(&url));
    assert!(a.shared() && b.shared());
    store_contract(&a).await;
    // what one instance wrote, the other reads
    let seen = b.get("a").await.expect("get").expect("a");
    assert_eq!(seen.last_seq, 7);
    assert_eq!(b.events_after("a", 0).await.expect("events").len(), 7);
    drop((a, b));
    let again = common::pg(&url).await;
    assert_eq!(again.events_after("a", 2).await.expect("events").len(), 5);
    assert!(!format!("{again:?}").contains("password"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_appends_from_two_instances_get_one_sequence() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let (a, b) = tokio::join!(common::pg(&url), common::pg(&url));
    let (a, b) = (Arc::new(a), Arc::new(b));
    let mut writers = Vec::new();
    for (store, name) in [(a.clone(), "a"), (b.clone(), "b")] {
        writers.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..50 {
                let rec = record("shared", None, "c", "TASK_STATE_WORKING", 1);
                seqs.push(
                    store
                        .append(TaskAppend::new(rec, &json!({"by": name, "i": i}), i % 10 == 0))
                        .await
                        .expect("append"),
                );
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for w in writers {
        let seqs = w.await.expect("join");
        assert!(seqs.windows(2).all(|p| p[0] < p[1]), "one writer's events in its order");
        all.extend(seqs);
    }
    all.sort_unstable();
    assert_eq!(all, (1..=100).collect::<Vec<u64>>());
    let log = a.events_after("shared", 0).await.expect("events");
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=100).collect::<Vec<u64>>()
    );
    assert_eq!(a.get("shared").await.expect("get").expect("task").last_seq, 100);
    // two instances ending it at once (its run, and a gateway settling it as failed when its
    // lease ran out): one end is stored, the other refused, nothing after it
    let end = |store: Arc<PgStore>, state: &'static str| async move {
        let rec = record("shared", None, "c", state, 2);
        store.append(TaskAppend::new(rec, &json!({"end": state}), true)).await
    };
    let (x, y) = tokio::join!(
        end(a.clone(), "TASK_STATE_COMPLETED"),
        end(b.clone(), "TASK_STATE_FAILED")
    );
    let refused = [&x, &y]
        .iter()
        .filter(|r| matches!(r, Err(StoreError::Ended(_))))
        .count();
    assert_eq!((refused, x.is_ok() || y.is_ok()), (1, true), "{x:?} {y:?}");
    let won = if x.is_ok() {
        "TASK_STATE_COMPLETED"
    } else {
        "TASK_STATE_FAILED"
    };
    let task = b.get("shared").await.expect("get").expect("task");
    assert_eq!((task.state.as_str(), task.last_seq), (won, 101));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_leases_notices_and_orphans() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let (a, b) = tokio::join!(common::pg(&url), common::pg(&url));
    let lease = Duration::from_secs(30);
    // a lease: one holder at a time, renewed by it, free once released
    assert!(a.acquire("t1", "A", lease).await.expect("acquire"));
    assert!(!b.acquire("t1", "B", lease).await.expect("acquire"));
    assert!(a.acquire("t1", "A", lease).await.expect("renew by taking again"));
    assert_eq!(
        a.renew("A", vec!["t1".into(), "t2".into()], lease)
            .await
            .expect("renew"),
        vec!["t2".to_string()]
    );
    b.release("t1", "B").await.expect("release");
    assert!(!b.acquire("t1", "B", lease).await.expect("still A's"));
    a.release("t1", "A").await.expect("release");
    assert!(b.acquire("t1", "B", lease).await.expect("free"));

    // orphans: working without a valid lease
    a.append(TaskAppend::new(
        record("o1", None, "c", "TASK_STATE_WORKING", 1),
        &json!({}),
        true,
    ))
    .await
    .expect("append");
    a.append(TaskAppend::new(
        record("done", None, "c", "TASK_STATE_COMPLETED", 1),
        &json!({}),
        true,
    ))
    .await
    .expect("append");
    assert_eq!(b.orphans().await.expect("orphans"), vec!["o1".to_string()]);
    assert!(a.acquire("o1", "A", Duration::from_millis(300)).await.expect("acquire"));
    assert!(b.orphans().await.expect("orphans").is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(b.orphans().await.expect("orphans"), vec!["o1".to_string()]);
    assert!(b
        .acquire("o1", "B", lease)
        .await
        .expect("an expired lease is taken over"));
    assert_eq!(
        a.renew("A", vec!["o1".into()], lease).await.expect("renew"),
        vec!["o1".to_string()]
    );

    // notices: the other instance hears of events (small ones with the event, large ones
    // without) and of cancel requests; nobody hears their own events
    let mut heard_by_b = b.notices().expect("notices");
    let mut heard_by_a = a.notices().expect("notices");
    let seq = a
        .append(TaskAppend::new(
            record("n1", None, "c", "TASK_STATE_WORKING", 1),
            &json!({"small": true}),
            true,
        ))
        .await
        .expect("append");
    let big = json!({"text": "x".repeat(20_000)});
    a.append(TaskAppend::new(
        record("n1", None, "c", "TASK_STATE_WORKING", 1),
        &big,
        false,
    ))
    .await
    .expect("append");
    b.request_cancel("n1").await.expect("cancel");
    match next_notice(&mut heard_by_b).await {
        StoreNotice::Appended {
            task_id,
            seq: got,
            event: Some(e),
        } => {
            assert_eq!((task_id.as_str(), got), ("n1", seq));
            assert_eq!(serde_json::from_str::<Value>(&e).expect("JSON"), json!({"small": true}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        next_notice(&mut heard_by_b).await,
        StoreNotice::Appended {
            task_id: "n1".into(),
            seq: seq + 1,
            event: None
        }
    );
    assert_eq!(
        next_notice(&mut heard_by_b).await,
        StoreNotice::CancelRequested { task_id: "n1".into() }
    );
    // A heard only the cancel
    assert_eq!(
        next_notice(&mut heard_by_a).await,
        StoreNotice::CancelRequested { task_id: "n1".into() }
    );
}

#[tokio::test]
async fn finished_tasks_are_forgotten_after_the_retention_and_past_the_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    forgets_finished_tasks(Arc::new(MemoryStore::new()).into()).await;
    forgets_finished_tasks(Arc::new(SqliteStore::open(&dir.path().join("tasks.db")).expect("open")).into()).await;
}

/// With the default retention (pruned every minute), tasks finishing fast are pruned sooner:
/// once a tenth of the count kept has finished, a store on disk is brought back to its bound.
#[tokio::test]
async fn a_store_on_disk_is_pruned_before_the_minute_when_many_tasks_finish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Stores = Arc::new(SqliteStore::open(&dir.path().join("tasks.db")).expect("open")).into();
    let config = A2aConfig {
        retention: TaskRetention {
            max_tasks: 3,
            ..TaskRetention::default()
        },
        ..A2aConfig::default()
    };
    let s = serve(GatewayConfig::default(), config, store.clone()).await;
    let (ids, kept) = send_and_await_kept(&s.base, 6, 3).await;
    assert_eq!(kept, ids[3..].to_vec(), "pruned within ten seconds, not a minute");
}

/// Sends `n` messages to the gateway at `base`, 5 ms apart, then waits up to ten seconds for
/// `want` of their tasks to be left (`GetTask` finds them); returns the tasks' ids and those left.
async fn send_and_await_kept(base: &str, n: usize, want: usize) -> (Vec<String>, Vec<String>) {
    let mut ids = Vec::new();
    for _ in 0..n {
        let v = rpc(base, "SendMessage", msg("hello")).await;
        ids.push(v["result"]["task"]["id"].as_str().expect("id").to_string());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut kept = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        kept.clear();
        for id in &ids {
            if rpc(base, "GetTask", json!({"id": id})).await["result"].is_object() {
                kept.push(id.clone());
            }
        }
        if kept.len() == want {
            break;
        }
    }
    (ids, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_forgets_finished_tasks() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    forgets_finished_tasks(Arc::new(common::pg(&url).await).into()).await;
}

async fn forgets_finished_tasks(store: Stores) {
    {
        // by age
        let aged = A2aConfig {
            retention: TaskRetention {
                max_age: Duration::from_millis(300),
                ..TaskRetention::default()
            },
            ..A2aConfig::default()
        };
        let s = serve(GatewayConfig::default(), aged, store.clone()).await;
        let v = rpc(&s.base, "SendMessage", msg("hello")).await;
        let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
        assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
        assert!(rpc(&s.base, "GetTask", json!({"id": id})).await["result"].is_object());
        let mut gone = false;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if code(&rpc(&s.base, "GetTask", json!({"id": id})).await) == -32001 {
                gone = true;
                break;
            }
        }
        assert!(gone, "{}: the task outlived its retention", store.name());
        assert!(store.tasks.events_after(&id, 0).await.expect("events").is_empty());
        drop(s);
        // by count: the two most recent stay
        let counted = A2aConfig {
            retention: TaskRetention {
                max_tasks: 2,
                // (swept every quarter of it)
                max_age: Duration::from_secs(8),
                ..TaskRetention::default()
            },
            ..A2aConfig::default()
        };
        let s = serve(GatewayConfig::default(), counted, store.clone()).await;
        let (ids, kept) = send_and_await_kept(&s.base, 4, 2).await;
        assert_eq!(kept, ids[2..].to_vec(), "{}", store.name());
    }
}

#[tokio::test]
async fn at_capacity_runs_and_subscribers_get_503_with_retry_after_on_both_bindings() {
    let config = GatewayConfig {
        max_streams: 2,
        retry_after_secs: 3,
        ..GatewayConfig::default()
    };
    let s = serve(config, A2aConfig::default(), Arc::new(MemoryStore::new())).await;
    // one run and one subscriber take the two slots
    let mut p = msg("never finish");
    p["configuration"] = json!({"returnImmediately": true});
    let v = rpc(&s.base, "SendMessage", p).await;
    let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": id}});
    let sub = post_a2a(format!("{}/a2a", s.base), body.to_string()).await;
    assert_eq!(sub.status(), 200);
    // the health check counts both
    let health: Value = client()
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("json");
    assert_eq!(health["live_streams"], 2, "{health}");
    // a second subscriber, and a new run, are refused on JSON-RPC …
    for (method, params) in [("SubscribeToTask", json!({"id": id})), ("SendMessage", msg("hello"))] {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}).to_string();
        let resp = post_a2a(format!("{}/a2a", s.base), body).await;
        assert_eq!(resp.status(), 503, "{method}");
        assert_eq!(resp.headers()["retry-after"], "3");
        let v: Value = resp.json().await.expect("json");
        assert_eq!(v["error"]["code"], -32603, "{v}");
    }
    // … and on HTTP+JSON, as a problem with UNAVAILABLE
    let resp = post_a2a(format!("{}/message:send", s.base), msg("hello").to_string()).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "3");
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["error"]["status"], "UNAVAILABLE", "{v}");
    // the subscriber gone, its slot is free again
    drop(sub);
    let mut ok = false;
    for _ in 0..50 {
        if rpc(&s.base, "SendMessage", msg("hello")).await["result"].is_object() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "the slot of a gone subscriber is given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_appends_committed_together_keep_each_task_in_order_and_fail_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(&dir.path().join("tasks.db")).expect("open"));
    // 20 tasks × 10 events, all at once: the writer commits them in groups
    let mut writes = Vec::new();
    for t in 0..20 {
        let store = store.clone();
        writes.push(tokio::spawn(async move {
            for i in 0..10 {
                let rec = record(&format!("t{t}"), None, "c", "TASK_STATE_WORKING", i);
                let seq = store
                    .append(TaskAppend::new(rec, &json!({"i": i}), i % 3 == 0))
                    .await
                    .expect("append");
                assert_eq!(seq, u64::try_from(i + 1).expect("seq"));
            }
        }));
    }
    // a write that fails (a frame sequence no column holds) fails alone
    let bad = store.append_frames(e2a_gateway::store::FrameWrite {
        key: "k".into(),
        run: "r".into(),
        head: Some(e2a_gateway::store::RunHead {
            request: "{}".into(),
            holder: "h".into(),
            lease: Duration::from_secs(1),
        }),
        frames: vec![e2a_gateway::store::StoredFrame {
            seq: u64::MAX,
            frame: "{}".into(),
            is_final: false,
        }],
    });
    assert!(bad.await.is_err());
    for w in writes {
        w.await.expect("join");
    }
    for t in 0..20 {
        let events = store.events_after(&format!("t{t}"), 0).await.expect("events");
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=10).collect::<Vec<u64>>());
        assert_eq!(events[9].json().expect("JSON"), json!({"i": 9}));
    }
    // the failed write left nothing behind
    assert_eq!(store.run_after("k", None).await.expect("read"), None);
}

#[tokio::test]
async fn a_message_of_too_many_parts_is_refused_naming_the_parts() {
    let s = plain().await;
    let parts: Vec<Value> = (0..1_001).map(|_| json!({"text": "x"})).collect();
    let p = json!({"message": {"messageId": "m-many", "role": "ROLE_USER", "parts": parts}});
    let v = rpc(&s.base, "SendMessage", p).await;
    assert_eq!(code(&v), -32602, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("params.message.parts") && message.contains("1000"),
        "{message}"
    );
    // the limit itself is accepted
    let parts: Vec<Value> = (0..1_000).map(|_| json!({"text": "x"})).collect();
    let p = json!({"message": {"messageId": "m-enough", "role": "ROLE_USER", "parts": parts}});
    assert!(rpc(&s.base, "SendMessage", p).await["result"].is_object());
}

#[tokio::test]
async fn versions_are_checked_on_every_http_json_route_whatever_the_header_bytes() {
    let s = plain().await;
    let reason_of = |v: &Value| v["error"]["details"][0]["reason"].as_str().unwrap_or("").to_string();
    // a header that is not text is not a version this gateway serves (not "absent")
    let odd = reqwest::header::HeaderValue::from_bytes(b"1.\xff").expect("a header");
    let resp = client()
        .get(format!("{}/tasks", s.base))
        .header("A2A-Version", odd)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.expect("json");
    assert_eq!(reason_of(&v), "VERSION_NOT_SUPPORTED", "{v}");
    // the extended card's route checks the version like the others
    let resp = client()
        .get(format!("{}/extendedAgentCard", s.base))
        .header("A2A-Version", "9.9")
        .send()
        .await
        .expect("send");
    let v: Value = resp.json().await.expect("json");
    assert_eq!(reason_of(&v), "VERSION_NOT_SUPPORTED", "{v}");
    // a push config's body is read as its type says: a taskId that is not a string is refused
    let sent = rpc(&s.base, "SendMessage", msg("hello")).await;
    let id = sent["result"]["task"]["id"].as_str().expect("task").to_string();
    let resp = client()
        .post(format!("{}/tasks/{id}/pushNotificationConfigs", s.base))
        .json(&json!({"taskId": 5, "url": "https://hooks.example.com/x"}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 400);
    let text = resp.text().await.expect("body");
    assert!(text.contains("taskId"), "{text}");
}

#[tokio::test]
async fn an_empty_task_id_names_no_task_and_flags_must_be_booleans() {
    let s = plain().await;
    let mut p = msg("hello");
    p["message"]["taskId"] = json!("");
    let v = rpc(&s.base, "SendMessage", p).await;
    assert!(
        v["result"]["task"]["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{v}"
    );
    let mut p = msg("hello");
    p["configuration"] = json!({"returnImmediately": "yes"});
    let v = rpc(&s.base, "SendMessage", p).await;
    assert_eq!(code(&v), -32602, "{v}");
}

/// A task cut off by a graceful shutdown ends CANCELED saying the gateway is shutting down (it
/// said its client went away).
#[tokio::test]
async fn a_task_cut_off_by_a_shutdown_says_so() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let config = GatewayConfig {
        drain_timeout: Duration::from_millis(200),
        ..GatewayConfig::default()
    };
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    let gateway = Gateway::new(agent, config).with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(gateway.serve(listener, async move {
        let _ = stopped.await;
    }));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": msg("never finish")});
    let mut resp = post_a2a(format!("{base}/a2a"), body.to_string()).await;
    let mut text = String::new();
    while !text.contains("working on it") {
        let chunk = resp
            .chunk()
            .await
            .expect("chunk")
            .expect("more events before the shutdown");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let _ = stop.send(());
    while let Ok(Some(chunk)) = resp.chunk().await {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = sse_events(&text);
    let last = &events.last().expect("events").1["result"]["statusUpdate"]["status"];
    assert_eq!(last["state"], "TASK_STATE_CANCELED", "{last}");
    let said = last
        .pointer("/message/parts/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(said.contains("shutting down"), "{last}");
    assert!(!said.contains("went away"), "{last}");
    let _ = tokio::time::timeout(Duration::from_secs(5), served).await;
}

/// Cancelling a task that has ended: `TaskNotCancelableError` by default (A2A 1.0); with
/// `cancel_finished = "snapshot"` (GoAI's answer to a repeated cancel) the task as it ended.
#[tokio::test]
async fn cancelling_a_finished_task_answers_as_configured() {
    for (cancel_finished, snapshot) in [
        (e2a::types::CancelFinished::Error, false),
        (e2a::types::CancelFinished::Snapshot, true),
    ] {
        let a2a = A2aConfig {
            cancel_finished,
            ..A2aConfig::default()
        };
        let s = serve(GatewayConfig::default(), a2a, Arc::new(MemoryStore::new())).await;
        let sent = rpc(&s.base, "SendMessage", msg("hello")).await;
        let task = &sent["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
        let cancelled = rpc(&s.base, "CancelTask", json!({"id": task["id"]})).await;
        match snapshot {
            false => assert_eq!(code(&cancelled), -32002, "{cancelled}"),
            true => {
                assert_eq!(cancelled["result"]["id"], task["id"], "{cancelled}");
                assert_eq!(
                    cancelled["result"]["status"]["state"], "TASK_STATE_COMPLETED",
                    "{cancelled}"
                );
            }
        }
    }
}

/// GoAI's delegation names the child task's id (`run-child-001`): with `client_task_ids` a send
/// naming a task id no task has creates the task under it (a retry of the same message gets the
/// same task), and an id another caller's task has is refused; by default it is
/// `TaskNotFoundError`, as A2A 1.0 and its conformance kit say.
#[tokio::test]
async fn a_client_chosen_task_id_creates_its_task_when_configured() {
    let dir = tempfile::tempdir().expect("tmp");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "caller-one-token\ncaller-two-token\n").expect("tokens");
    let config = || GatewayConfig {
        auth: e2a_gateway::Auth::from_file(&tokens).expect("tokens"),
        ..GatewayConfig::default()
    };
    let send = |base: String, token: &'static str, message: Value| async move {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message}).to_string();
        let auth = format!("Bearer {token}");
        rpc_with(
            &base,
            &body,
            &[("A2A-Version", "1.0"), ("Authorization", auth.as_str())],
        )
        .await
        .1
    };
    let child = || {
        let mut m = msg("hello");
        m["message"]["taskId"] = json!("run-child-001");
        m["message"]["contextId"] = json!("thread-demo");
        m
    };
    let default = serve(config(), A2aConfig::default(), Arc::new(MemoryStore::new())).await;
    let v = send(default.base.clone(), "caller-one-token", child()).await;
    assert_eq!(code(&v), -32001, "{v}");
    let a2a = A2aConfig {
        client_task_ids: true,
        ..A2aConfig::default()
    };
    let s = serve(config(), a2a, Arc::new(MemoryStore::new())).await;
    let first = child();
    let v = send(s.base.clone(), "caller-one-token", first.clone()).await;
    assert_eq!(v["result"]["task"]["id"], "run-child-001", "{v}");
    assert_eq!(v["result"]["task"]["contextId"], "thread-demo", "{v}");
    // the same message again (a retry): the same task
    let again = send(s.base.clone(), "caller-one-token", first).await;
    assert_eq!(again["result"]["task"]["id"], "run-child-001", "{again}");
    // another caller cannot take the id
    let taken = send(s.base.clone(), "caller-two-token", child()).await;
    assert_eq!(code(&taken), -32600, "{taken}");
    assert!(!taken.to_string().contains("hello"), "{taken}");
}
