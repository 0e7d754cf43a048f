//! `[errors] expose = "safe"` (`GatewayConfig::errors`): an agent's own error text (a backend's
//! "the model provider is down", an upstream detail) reaches no caller on any HTTP binding —
//! each gets its error kind's fixed message — and the log keeps the detail with the trace id;
//! a refusal's reason, and the gateway's own cut-off, are still shown. Alone in its test binary: it captures the logs with a
//! thread-local subscriber (as request_logs.rs does).

mod common;
use common::Captured;

use std::sync::Arc;

use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::MemoryStore;
use e2a_gateway::{Gateway, GatewayConfig};
use serde_json::{json, Value};

const SCRIPT: &str = r#"{"scenarios": [
  {"name": "fail", "match": {"text": "crash"}, "steps": [
    {"type": "text", "text": "starting"},
    {"type": "fail", "message": "the model provider is down (upstream 10.1.2.3 said: quota)"}]},
  {"name": "refuse", "match": {"text": "forbidden"}, "steps": [{"type": "reject", "message": "I do not do that."}]},
  {"name": "forever", "match": {"text": "never finish"}, "steps": [
    {"type": "text", "text": "working on it"}, {"type": "sleep", "ms": 600000}, {"type": "complete"}]},
  {"name": "echo", "steps": [{"type": "text", "text": "You said: {input}"}, {"type": "complete"}]}
]}"#;

const DETAIL: &str = "the model provider is down";
const SAFE: &str = "The agent could not complete the request.";

#[tokio::test(flavor = "current_thread")]
async fn callers_get_the_safe_message_and_the_log_keeps_the_detail() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let config = GatewayConfig {
        errors: e2a::types::ErrorExposure::Safe,
        deadlines: e2a_gateway::pipeline::boundary::Deadlines {
            idle: Some(std::time::Duration::from_millis(300)),
            ..Default::default()
        },
        ..GatewayConfig::default()
    };
    let agent = ScriptAgent::from_json(SCRIPT).expect("script");
    let gateway = Gateway::new(agent, config)
        .with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()))
        .with_agui();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let router = gateway.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value, trace: &str| {
        client
            .post(format!("{base}{path}"))
            .header("A2A-Version", "1.0")
            .header("X-Trace-ID", trace)
            .json(&body)
            .send()
    };
    // E2A
    let e2a = post(
        "/v1/e2a/requests",
        json!({"method": "chat.send", "params": {"query": "crash"}}),
        "trace-e2a",
    )
    .await
    .expect("e2a")
    .text()
    .await
    .expect("body");
    // A2A JSON-RPC
    let message = |text: &str| json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}});
    let a2a = post(
        "/a2a",
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("crash")}),
        "trace-a2a",
    )
    .await
    .expect("a2a")
    .text()
    .await
    .expect("body");
    // AG-UI
    let agui = post(
        "/agui",
        json!({"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "crash"}],
               "tools": [], "context": [], "state": {}, "forwardedProps": {}}),
        "trace-agui",
    )
    .await
    .expect("agui")
    .text()
    .await
    .expect("body");
    for (binding, said) in [("e2a", &e2a), ("a2a", &a2a), ("agui", &agui)] {
        assert!(
            !said.contains(DETAIL) && !said.contains("10.1.2.3"),
            "{binding}: {said}"
        );
        assert!(said.contains(SAFE), "{binding}: {said}");
    }
    assert!(e2a.contains("E2A.AGENT_ERROR"), "{e2a}");
    assert!(a2a.contains("TASK_STATE_FAILED"), "{a2a}");
    // the log keeps the detail, with each run's trace id
    let logs = captured.text();
    for trace in ["trace-e2a", "trace-a2a", "trace-agui"] {
        let line = logs
            .lines()
            .find(|l| l.contains(trace) && l.contains("safe message"))
            .unwrap_or_else(|| panic!("no log line of {trace}:\n{logs}"));
        assert!(line.contains(DETAIL), "{line}");
    }
    // a refusal's reason is the agent's word to the user: shown
    let refused = post(
        "/a2a",
        json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": message("forbidden")}),
        "trace-refusal",
    )
    .await
    .expect("a2a")
    .text()
    .await
    .expect("body");
    assert!(
        refused.contains("I do not do that.") && refused.contains("TASK_STATE_REJECTED"),
        "{refused}"
    );
    // the gateway's own cut-off says what happened
    let cut = post(
        "/v1/e2a/requests",
        json!({"method": "chat.send", "params": {"query": "never finish"}}),
        "trace-cut",
    )
    .await
    .expect("e2a")
    .text()
    .await
    .expect("body");
    assert!(cut.contains("E2A.TIMEOUT") && cut.contains("idle deadline"), "{cut}");
}
