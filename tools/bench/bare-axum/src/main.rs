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
//! Usage: `bare-axum PORT [--e2a-body FILE] [--a2a-body FILE]`; listens on 127.0.0.1:PORT.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post};
use axum::Router;

const E2A_BODY: &[u8] = include_bytes!("../data/e2a-echo.json");
const A2A_BODY: &[u8] = include_bytes!("../data/a2a-send-message.json");

/// A handler that reads the request body and answers `body` as JSON.
fn fixed(body: Bytes) -> axum::routing::MethodRouter {
    post(move |_request: Bytes| {
        let body = body.clone();
        async move { ([(CONTENT_TYPE, "application/json")], body) }
    })
}

fn main() {
    let mut port: Option<u16> = None;
    let mut e2a = Bytes::from_static(E2A_BODY);
    let mut a2a = Bytes::from_static(A2A_BODY);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut file = || {
            let f = it.next().unwrap_or_else(|| die(&format!("{a} needs a file")));
            Bytes::from(std::fs::read(&f).unwrap_or_else(|e| die(&format!("cannot read {f}: {e}"))))
        };
        match a.as_str() {
            "--e2a-body" => e2a = file(),
            "--a2a-body" => a2a = file(),
            p if port.is_none() => port = Some(p.parse().unwrap_or_else(|_| die("PORT must be a number"))),
            other => die(&format!("unknown argument {other:?}")),
        }
    }
    let port = port.unwrap_or_else(|| die("usage: bare-axum PORT [--e2a-body FILE] [--a2a-body FILE]"));
    bench_serve::serve("bare-axum", "", port, || {
        Router::new()
            .route("/v1/e2a/requests", fixed(e2a))
            .route("/a2a", fixed(a2a))
            .route("/healthz", get(|| async { "ok" }))
    });
}

fn die(msg: &str) -> ! {
    bench_serve::die("bare-axum", msg)
}
