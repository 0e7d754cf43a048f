//! The floor: axum 0.8 handlers that read the request body and answer fixed bytes.
//!
//! - `POST /v1/e2a/requests`: the JSON the e2a gateway answers to the echo request
//!   (`{"method":"chat.send","params":{"query":"hello"}}`, `Accept: application/json`);
//! - `POST /a2a`: the JSON-RPC response the gateway answers to an A2A `SendMessage`;
//! - `GET /healthz`: `ok`.
//!
//! The bodies are the files in `data/`, captured once from `e2a serve`, embedded at build
//! time; `--e2a-body FILE` / `--a2a-body FILE` read fresh captures instead (run.sh passes the
//! ones it captured from the binary it benchmarks).
//!
//! `--sse-replay PATH=FILE` (repeatable; bench case e) answers a POST to PATH (in place of the
//! fixed JSON, when PATH is one of the two above) with `text/event-stream` and the bytes of
//! FILE, a captured event stream, as a streaming body of one chunk per SSE event: FILE is split
//! after each `\n\n` once at start-up, and each request's body yields those `Bytes` one by one
//! (each a body frame of its own, written as hyper writes a real server's stream).
//!
//! Usage: `bare-axum PORT [--e2a-body FILE] [--a2a-body FILE] [--sse-replay PATH=FILE]...`;
//! listens on 127.0.0.1:PORT.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post};
use axum::Router;

const E2A_BODY: &[u8] = include_bytes!("../data/e2a-echo.json");
const A2A_BODY: &[u8] = include_bytes!("../data/a2a-send-message.json");
const USAGE: &str = "usage: bare-axum PORT [--e2a-body FILE] [--a2a-body FILE] [--sse-replay PATH=FILE]...";

/// A handler that reads the request body and answers `body` as JSON.
fn fixed(body: Bytes) -> axum::routing::MethodRouter {
    post(move |_request: Bytes| {
        let body = body.clone();
        async move { ([(CONTENT_TYPE, "application/json")], body) }
    })
}

/// `bytes` cut after each `\n\n` (the end of an SSE event); a rest without one is the last
/// piece.
fn sse_events(bytes: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\n' && bytes[i + 1] == b'\n' {
            out.push(bytes.slice(start..i + 2));
            start = i + 2;
            i = start;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        out.push(bytes.slice(start..));
    }
    out
}

/// A handler that reads the request body and streams `events` as `text/event-stream`, one
/// body frame per event.
fn replay(events: Arc<[Bytes]>) -> axum::routing::MethodRouter {
    post(move |_request: Bytes| {
        let events = events.clone();
        async move {
            let frames = (0..events.len()).map(move |i| Ok::<_, Infallible>(events[i].clone()));
            let body = Body::from_stream(futures_util::stream::iter(frames));
            ([(CONTENT_TYPE, "text/event-stream")], body)
        }
    })
}

fn main() {
    let mut port: Option<u16> = None;
    let mut e2a = Bytes::from_static(E2A_BODY);
    let mut a2a = Bytes::from_static(A2A_BODY);
    let mut replays: Vec<(String, Arc<[Bytes]>)> = Vec::new();
    let mut it = std::env::args().skip(1);
    let read = |f: &str| Bytes::from(std::fs::read(f).unwrap_or_else(|e| die(&format!("cannot read {f}: {e}"))));
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| die(&format!("{a} needs a value")));
        match a.as_str() {
            "--e2a-body" => e2a = read(&value()),
            "--a2a-body" => a2a = read(&value()),
            "--sse-replay" => {
                let v = value();
                let (path, file) = v
                    .split_once('=')
                    .filter(|(p, _)| p.starts_with('/') && *p != "/healthz")
                    .unwrap_or_else(|| {
                        die(&format!(
                            "--sse-replay {v:?}: PATH=FILE, PATH starting with / (not /healthz)"
                        ))
                    });
                if replays.iter().any(|(p, _)| p == path) {
                    die(&format!("--sse-replay: {path} given twice"));
                }
                replays.push((path.to_string(), sse_events(&read(file)).into()));
            }
            p if port.is_none() => port = Some(p.parse().unwrap_or_else(|_| die("PORT must be a number"))),
            other => die(&format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let port = port.unwrap_or_else(|| die(USAGE));
    let what = replays
        .iter()
        .map(|(p, events)| format!("{p}: {} events replayed", events.len()))
        .collect::<Vec<_>>()
        .join(", ");
    bench_serve::serve("bare-axum", &what, port, move || {
        let mut app = Router::new().route("/healthz", get(|| async { "ok" }));
        for (path, body) in [("/v1/e2a/requests", e2a), ("/a2a", a2a)] {
            if !replays.iter().any(|(p, _)| p == path) {
                app = app.route(path, fixed(body));
            }
        }
        for (path, events) in replays {
            app = app.route(&path, replay(events));
        }
        app
    });
}

fn die(msg: &str) -> ! {
    bench_serve::die("bare-axum", msg)
}
