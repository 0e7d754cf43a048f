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
//! Usage: `e2a-floor PORT [SPIN_US]`; listens on 127.0.0.1:PORT. With `SPIN_US`, each request
//! also burns that many microseconds of user CPU (a loop on the clock, no system call): what
//! `kernel-share.sh` uses to show how a server's kernel time per request grows as its own work
//! slows it down.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::{E2AEnvelope, ReadOptions};
use serde_json::json;

/// `e2a serve`'s allocator, its own module.
#[path = "../../../../cli/src/allocator.rs"]
mod allocator;

#[global_allocator]
static GLOBAL: allocator::MiMalloc = allocator::MiMalloc;

/// The echo agent's answer to `body` (the gateway's `EchoAgent`, frame for frame).
fn answer(body: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let mut request = E2AEnvelope::read(text, &ReadOptions::lenient())
        .map_err(|e| e.to_string())?
        .value;
    request.request_id.get_or_insert_with(e2a::stream::new_ordered_id);
    let prompt = request
        .params
        .get("query")
        .and_then(|q| q.as_str())
        .unwrap_or("")
        .to_string();
    let reply = format!("You said: {prompt}");
    let mut s = ResponseStream::for_request(&request);
    let mut frames = Vec::with_capacity(8);
    frames.push(s.reasoning("The user said something; echo it back."));
    frames.push(s.tool_call("echo-1", "echo", json!({"text": prompt})));
    frames.push(s.tool_result("echo-1", json!({"length": prompt.chars().count()})));
    for piece in bench_serve::echo_pieces(&reply) {
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

/// Burns `us` microseconds of user CPU.
fn spin(us: u64) {
    let start = std::time::Instant::now();
    let until = std::time::Duration::from_micros(us);
    while start.elapsed() < until {
        std::hint::spin_loop();
    }
}

fn main() {
    const USAGE: &str = "usage: e2a-floor PORT [SPIN_US]";
    let mut args = std::env::args().skip(1);
    let port: u16 = match args.next().map(|p| p.parse()) {
        Some(Ok(p)) => p,
        _ => bench_serve::die("e2a-floor", USAGE),
    };
    let spin_us: u64 = match args.next().map(|s| s.parse()) {
        None => 0,
        Some(Ok(us)) => us,
        Some(Err(_)) => bench_serve::die("e2a-floor", USAGE),
    };
    bench_serve::serve("e2a-floor", "", port, || {
        Router::new()
            .route(
                "/v1/e2a/requests",
                post(move |body: Bytes| async move {
                    spin(spin_us);
                    match answer(&body) {
                        Ok(json) => (StatusCode::OK, [(CONTENT_TYPE, "application/json")], json),
                        Err(e) => (StatusCode::BAD_REQUEST, [(CONTENT_TYPE, "text/plain")], e),
                    }
                }),
            )
            .route("/healthz", get(|| async { "ok" }))
    });
}
