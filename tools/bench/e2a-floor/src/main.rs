//! The e2a library's own work for the E2A echo request, in a bare axum handler: what the
//! gateway's E2A JSON path cannot go below with the library as it is.
//!
//! `POST /v1/e2a/requests` reads the body as the gateway does (`E2AEnvelope::read`, lenient),
//! gives it a `request_id`, makes the echo agent's seven frames with `ResponseStream` (a
//! reasoning chunk, a tool call and its result, the reply word by word, the answer), checks
//! them with `StreamValidator::observe` (as the gateway's stream boundary does) and answers the
//! final frame's canonical JSON. No pipeline, run log, retention, task, metrics, auth or trace
//! layer: `e2a serve --agent echo` minus this is what the gateway adds. `GET /healthz`: `ok`.
//!
//! Usage: `e2a-floor PORT`; listens on 127.0.0.1:PORT.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::{E2AEnvelope, ReadOptions};
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The echo agent's answer to `body` (the gateway's `EchoAgent`, frame for frame).
fn answer(body: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let mut request = E2AEnvelope::read(text, &ReadOptions::lenient()).map_err(|e| e.to_string())?.value;
    request.request_id.get_or_insert_with(e2a::stream::new_ordered_id);
    let prompt = request.params.get("query").and_then(|q| q.as_str()).unwrap_or("").to_string();
    let reply = format!("You said: {prompt}");
    let mut s = ResponseStream::for_request(&request);
    let mut frames = Vec::with_capacity(8);
    frames.push(s.reasoning("The user said something; echo it back."));
    frames.push(s.tool_call("echo-1", "echo", json!({"text": prompt})));
    frames.push(s.tool_result("echo-1", json!({"length": prompt.chars().count()})));
    let words: Vec<&str> = reply.split(' ').collect();
    for (i, w) in words.iter().enumerate() {
        let piece = if i + 1 < words.len() { format!("{w} ") } else { (*w).to_string() };
        frames.push(s.text(&piece));
    }
    frames.push(s.answer(&reply, Some("end_turn")));
    let mut v = StreamValidator::new();
    for f in &frames {
        v.observe(f);
    }
    if !v.violations().is_empty() {
        return Err("the frames break the stream invariants".into());
    }
    frames.last().map(|f| f.to_json()).ok_or_else(|| "no frame".into())
}

fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        Some(Ok(p)) => p,
        _ => die("usage: e2a-floor PORT"),
    };
    // Worker threads: tokio's default, as for the gateway (1 under `taskset -c 1`).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let app = Router::new()
            .route(
                "/v1/e2a/requests",
                post(|body: Bytes| async move {
                    match answer(&body) {
                        Ok(json) => (StatusCode::OK, [(CONTENT_TYPE, "application/json")], json),
                        Err(e) => (StatusCode::BAD_REQUEST, [(CONTENT_TYPE, "text/plain")], e),
                    }
                }),
            )
            .route("/healthz", get(|| async { "ok" }));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| die(&format!("cannot listen on 127.0.0.1:{port}: {e}")));
        eprintln!("e2a-floor listening on http://{}", listener.local_addr().expect("addr"));
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve");
    });
}

fn die(msg: &str) -> ! {
    eprintln!("e2a-floor: {msg}");
    std::process::exit(2);
}
