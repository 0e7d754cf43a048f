//! Test helpers: a gateway on 127.0.0.1 with an ephemeral port, and an HTTP client.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use e2a::E2AResponse;
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::{Agent, Gateway, GatewayConfig};
use serde_json::Value;
use tokio::sync::oneshot;

/// A running gateway.
pub struct Server {
    pub base: String,
    pub gateway: Gateway,
    stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Triggers the graceful shutdown (like SIGTERM).
    pub fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub async fn start(agent: Arc<dyn Agent>, config: GatewayConfig) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let gateway = Gateway::with_agent(agent, config);
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(gateway.clone().serve(listener, async move {
        let _ = rx.await;
    }));
    Server {
        base: format!("http://{addr}"),
        gateway,
        stop: Some(tx),
        task,
    }
}

pub fn script_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/script.json")
}

pub fn script() -> ScriptAgent {
    ScriptAgent::from_file(&script_path()).expect("script")
}

pub fn fast_config() -> GatewayConfig {
    GatewayConfig {
        keep_alive: Duration::from_millis(200),
        disconnect_grace: Duration::from_millis(100),
        ..GatewayConfig::default()
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().build().expect("client")
}

pub fn envelope(text: &str) -> Value {
    serde_json::json!({"method": "chat.send", "request_id": format!("req-{}", uuid()), "params": {"query": text}})
}

pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub async fn post(base: &str, body: &Value, accept: &str) -> reqwest::Response {
    post_auth(base, body, accept, None).await
}

pub async fn post_auth(base: &str, body: &Value, accept: &str, token: Option<&str>) -> reqwest::Response {
    let mut req = client()
        .post(format!("{base}{}", e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("accept", accept)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.expect("send")
}

pub fn sse_frames(text: &str) -> Vec<E2AResponse> {
    e2a::sse::decode(text).expect("sse frames")
}

pub fn ndjson_frames(text: &str) -> Vec<E2AResponse> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| E2AResponse::from_json(l).expect("ndjson frame"))
        .collect()
}

/// What two runs of the same scenario share: everything but ids and times.
pub fn essence(f: &E2AResponse) -> Value {
    serde_json::json!([f.sequence, f.is_final, f.status, f.response_kind, f.body])
}

/// Reads SSE events from a streaming response until `n` frames arrived.
pub async fn read_frames(resp: &mut reqwest::Response, n: usize) -> Vec<E2AResponse> {
    let mut buf = String::new();
    loop {
        let frames = complete_events(&buf);
        if frames.len() >= n {
            return frames;
        }
        match tokio::time::timeout(Duration::from_secs(10), resp.chunk()).await {
            Ok(Ok(Some(c))) => buf.push_str(&String::from_utf8_lossy(&c)),
            _ => return frames,
        }
    }
}

fn complete_events(buf: &str) -> Vec<E2AResponse> {
    match buf.rfind("\n\n") {
        Some(end) => sse_frames(&buf[..end + 2]),
        None => Vec::new(),
    }
}

/// Every frame passes the stream invariants.
pub fn assert_valid_stream(frames: &[E2AResponse]) {
    let mut v = e2a::stream::StreamValidator::new();
    for f in frames {
        v.push(f);
    }
    let problems = v.finish();
    assert!(problems.is_empty(), "stream violations: {problems:?}");
}

pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// The SSE events of a response body: (id, data).
pub fn sse_events(text: &str) -> Vec<(Option<u64>, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            data.map(|d| (id, d))
        })
        .collect()
}

#[path = "../support/postgres.rs"]
mod postgres_server;

/// A new database on the PostgreSQL server of `E2A_TEST_POSTGRES_URL`, or `None` (skipped)
/// without one — unless `E2A_REQUIRE_POSTGRES` is set (CI), which makes that a failure.
pub async fn postgres_database() -> Option<String> {
    let url = postgres_server::postgres()?;
    Some(postgres_server::fresh_database(&url).await)
}

/// `E2A_TEST_POSTGRES_CA`: the test server's certificate, when it speaks TLS.
pub fn test_ca() -> Option<std::path::PathBuf> {
    std::env::var_os("E2A_TEST_POSTGRES_CA")
        .filter(|c| !c.is_empty())
        .map(Into::into)
}

pub async fn pg(url: &str) -> e2a_gateway::store::PgStore {
    let options = e2a_gateway::store::PgOptions {
        ca_file: test_ca(),
        ..e2a_gateway::store::PgOptions::default()
    };
    e2a_gateway::store::PgStore::connect(url, options)
        .await
        .expect("connect")
}

/// The number in file `progress` (what a flooding agent has said so far; 0 before it wrote any).
pub fn progress(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// Waits until the number in file `path` stops changing for a second or reaches `n` (at most two
/// minutes); returns it.
pub async fn progress_when_still(path: &std::path::Path, n: usize) -> usize {
    let mut last = usize::MAX;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let now = progress(path);
        if now == last || now == n {
            break;
        }
        last = now;
    }
    progress(path)
}

/// A router served on 127.0.0.1 (an ephemeral port), aborted when dropped.
pub struct Spawned {
    pub base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Spawned {
    /// A server already spawned: its base URL and task (aborted when dropped).
    pub fn from_parts(base: String, task: tokio::task::JoinHandle<()>) -> Self {
        Spawned { base, task }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` on 127.0.0.1.
pub async fn spawn(router: axum::Router) -> Spawned {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Spawned { base, task }
}

/// A gateway served on 127.0.0.1 with no graceful shutdown: dropping it aborts the server like
/// a crash (no drain).
pub struct Crashable {
    pub base: String,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Crashable {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `gateway` on an ephemeral port of 127.0.0.1 until the returned handle is dropped.
pub async fn serve_crashable(gateway: Gateway) -> Crashable {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(gateway.serve(listener, std::future::pending()));
    Crashable {
        base: format!("http://{addr}"),
        task,
    }
}

/// Captures what the gateway logs (the writer of a `tracing_subscriber::fmt` subscriber).
#[derive(Clone, Default)]
pub struct Captured(Arc<parking_lot::Mutex<Vec<u8>>>);

impl Captured {
    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
