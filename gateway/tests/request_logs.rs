//! What the gateway logs of a request: its method and path, never the query string (it can
//! carry a credential); the access log's line (route template, status, latency, caller, trace
//! id); why a request was refused, never the credential. Alone in its test binary: `tracing`'s callsite cache is shared by the
//! whole process, and a test running beside it could leave a callsite disabled for the
//! thread-local subscriber this test sets.

mod common;
use common::Captured;

use std::sync::Arc;

use e2a_gateway::backends::EchoAgent;
use e2a_gateway::{Auth, Gateway, GatewayConfig};
use serde_json::json;

#[tokio::test(flavor = "current_thread")]
async fn request_logs_hold_the_path_not_the_query_string() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    // this runtime has one thread: the server's spans are all recorded here
    let _guard = tracing::subscriber::set_default(subscriber);
    let config = GatewayConfig {
        auth: Auth::token("the-right-token-value"),
        ..GatewayConfig::default()
    };
    let gateway = Gateway::with_agent(Arc::new(EchoAgent::new()), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = gateway.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/e2a/requests?api_key=planted-secret-value"))
        .header("Accept", "application/json")
        .bearer_auth("the-right-token-value")
        .json(&json!({"method": "chat.send", "params": {"query": "hello"}}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    let trace = resp
        .headers()
        .get("x-trace-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("?")
        .to_string();
    let refused = reqwest::Client::new()
        .get(format!("{base}/v1/e2a/runs/some-run-id"))
        .bearer_auth("a-wrong-token-value")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let logs = captured.text();
    assert!(logs.contains("path=/v1/e2a/requests"), "{logs}");
    // the access log: one line per request, the route's template, never the query or an id
    let access: Vec<&str> = logs.lines().filter(|l| l.contains("e2a::access")).collect();
    assert_eq!(access.len(), 2, "{logs}");
    for want in [
        "method=POST",
        "route=\"/v1/e2a/requests\"",
        "status=200",
        "caller=\"token-1\"",
        "latency_ms=",
    ] {
        assert!(access[0].contains(want), "{want} in {}", access[0]);
    }
    assert!(access[0].contains(&format!("trace_id=\"{trace}\"")), "{}", access[0]);
    for want in [
        "method=GET",
        "route=\"/v1/e2a/runs/{segment}\"",
        "status=401",
        "caller=\"-\"",
    ] {
        assert!(access[1].contains(want), "{want} in {}", access[1]);
    }
    assert!(!access[1].contains("some-run-id"), "{}", access[1]);
    // why it was refused, in the log only
    assert!(
        logs.contains("request refused (401)") && logs.contains("not a token of the gateway's"),
        "{logs}"
    );
    for secret in ["planted-secret-value", "the-right-token-value", "a-wrong-token-value"] {
        assert!(!logs.contains(secret), "{secret} in {logs}");
    }
}
