//! What the gateway logs of a request: its method and path, never the query string (it can
//! carry a credential). Alone in its test binary: `tracing`'s callsite cache is shared by the
//! whole process, and a test running beside it could leave a callsite disabled for the
//! thread-local subscriber this test sets.

mod common;
use common::Captured;

use std::sync::Arc;

use e2a_gateway::backends::EchoAgent;
use e2a_gateway::{Gateway, GatewayConfig};
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
    let gateway = Gateway::with_agent(Arc::new(EchoAgent::new()), GatewayConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = gateway.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/e2a/requests?api_key=planted-secret-value"))
        .header("Accept", "application/json")
        .json(&json!({"method": "chat.send", "params": {"query": "hello"}}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    let logs = captured.text();
    assert!(logs.contains("path=/v1/e2a/requests"), "{logs}");
    assert!(!logs.contains("planted-secret-value"), "{logs}");
}
