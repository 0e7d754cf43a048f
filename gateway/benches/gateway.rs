//! The gateway's speed against bare axum baselines, measured in one run (ratios on the same
//! machine, same load generator):
//!
//! 1. non-streaming echo (`Accept: application/json`) through the gateway vs. a bare axum
//!    handler returning the same bytes: 64 connections, throughput, p50/p99 (target ≥ 0.5×);
//! 2. one SSE stream of 10,000 chunks through the gateway vs. the same frames written to a bare
//!    SSE response (target ≥ 0.5×);
//!    (plus the same path with an agent that answers its final frame only);
//! 3. 10,000 idle open SSE streams: the gateway process's memory per stream (target ≤ 64 KiB).
//!
//! `cargo bench -p e2a-gateway --bench gateway` (`-- --quick` for a short run). The idle-stream
//! part runs the gateway in a child process (this binary, re-executed) so the client's sockets
//! are not counted.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::routing::post;
use axum::Router;
use e2a::stream::ResponseStream;
use e2a::E2AEnvelope;
use e2a_gateway::backends::EchoAgent;
use e2a_gateway::{Agent, FrameStream, Gateway, GatewayConfig, RequestContext};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PATH: &str = "/v1/e2a/requests";

/// Yields `n` text chunks as fast as it can, then completes.
struct Burst(usize);

impl Agent for Burst {
    fn run(&self, request: E2AEnvelope, _ctx: RequestContext) -> FrameStream {
        let n = self.0;
        Box::pin(async_stream::stream! {
            let mut s = ResponseStream::for_request(&request);
            for i in 0..n {
                yield s.text(if i % 2 == 0 { "tick " } else { "tock " });
            }
            yield s.complete(json!({}));
        })
    }
}

/// Answers with the final frame only.
struct Single;

impl Agent for Single {
    fn run(&self, request: E2AEnvelope, _ctx: RequestContext) -> FrameStream {
        let done = ResponseStream::for_request(&request).complete(json!({"content": "You said: hello gateway"}));
        Box::pin(futures_util::stream::iter([done]))
    }
}

/// Sends one frame, then stays open (an idle stream).
struct Idle;

impl Agent for Idle {
    fn run(&self, request: E2AEnvelope, _ctx: RequestContext) -> FrameStream {
        Box::pin(async_stream::stream! {
            let mut s = ResponseStream::for_request(&request);
            yield s.text("waiting");
            std::future::pending::<()>().await;
        })
    }
}

async fn listen(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}{PATH}")
}

fn body() -> String {
    json!({"method": "chat.send", "params": {"query": "hello gateway"}}).to_string()
}

struct Load {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
}

/// 64 connections, each sending requests back to back for `duration`.
async fn load(url: &str, accept: &'static str, duration: Duration) -> Load {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let url = url.to_string();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client");
            let mut lat = Vec::new();
            while started.elapsed() < duration {
                let t = Instant::now();
                let resp = client
                    .post(&url)
                    .header("accept", accept)
                    .header("content-type", "application/json")
                    .body(body())
                    .send()
                    .await;
                match resp {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        lat.push(t.elapsed());
                    }
                    _ => {}
                }
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Load {
        per_sec: all.len() as f64 / secs,
        p50: pct(0.50),
        p99: pct(0.99),
    }
}

async fn stream_frames(url: &str) -> (usize, Duration) {
    let client = reqwest::Client::new();
    let t = Instant::now();
    let mut resp = client
        .post(url)
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .body(body())
        .send()
        .await
        .expect("send");
    let mut events = 0usize;
    let mut tail = Vec::<u8>::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        tail.extend_from_slice(&chunk);
        events += tail.windows(2).filter(|w| w == b"\n\n").count();
        // keep the last byte: an event end may straddle two chunks
        let keep = tail.last().copied();
        tail.clear();
        tail.extend(keep);
    }
    (events, t.elapsed())
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Child role: a gateway with the idle agent; prints its address and serves until killed.
fn idle_server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let config = GatewayConfig {
            max_streams: 20_000,
            ..GatewayConfig::default()
        };
        let url = listen(Gateway::new(Idle, config).router()).await;
        println!("{url}");
        std::future::pending::<()>().await;
    });
}

async fn idle_streams(n: usize) -> Option<(u64, u64, usize)> {
    let exe = std::env::current_exe().ok()?;
    let mut child = Command::new(exe)
        .env("E2A_BENCH_ROLE", "idle-server")
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?).read_line(&mut line).ok()?;
    let addr = line.trim().trim_start_matches("http://").split('/').next()?.to_string();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib(child.id());
    let req = format!(
        "POST {PATH} HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        body().len(),
        body()
    );
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
            break;
        };
        if s.write_all(req.as_bytes()).await.is_err() {
            break;
        }
        // wait for the first frame: the run is live
        let mut buf = [0u8; 4096];
        let mut seen = Vec::new();
        while !seen
            .windows(15)
            .any(|w| w == b"\n\nid: 0\nevent: " || w == b"event: e2a.resp")
        {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(k) => seen.extend_from_slice(&buf[..k]),
            }
        }
        open.push(s);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(child.id());
    let opened = open.len();
    drop(open);
    let _ = child.kill();
    let _ = child.wait();
    Some((before, after, opened))
}

fn main() {
    if std::env::var("E2A_BENCH_ROLE").as_deref() == Ok("idle-server") {
        idle_server();
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let secs = if quick { 2 } else { 5 };
    let idle_n = if quick { 2_000 } else { 10_000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        // 1. non-streaming echo
        let gw = listen(Gateway::new(EchoAgent::new(), GatewayConfig::default()).router()).await;
        let final_frame = reqwest::Client::new()
            .post(&gw)
            .header("content-type", "application/json")
            .body(body())
            .send()
            .await
            .expect("warm-up")
            .bytes()
            .await
            .expect("bytes");
        let bare = listen(Router::new().route(
            PATH,
            post(move || {
                let b = final_frame.clone();
                async move { ([("content-type", "application/json")], b) }
            }),
        ))
        .await;
        // alternate the two servers and keep each one's best round (the machine is shared)
        let d = Duration::from_secs(secs);
        let (mut base, mut through) = (
            load(&bare, "application/json", d).await,
            load(&gw, "application/json", d).await,
        );
        for _ in 1..if quick { 2 } else { 3 } {
            let b = load(&bare, "application/json", d).await;
            if b.per_sec > base.per_sec {
                base = b;
            }
            let g = load(&gw, "application/json", d).await;
            if g.per_sec > through.per_sec {
                through = g;
            }
        }
        println!("non-streaming echo, 64 connections, best of alternating {secs} s rounds");
        println!(
            "  bare axum   {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms",
            base.per_sec,
            base.p50.as_secs_f64() * 1e3,
            base.p99.as_secs_f64() * 1e3
        );
        println!(
            "  gateway     {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms",
            through.per_sec,
            through.p50.as_secs_f64() * 1e3,
            through.p99.as_secs_f64() * 1e3
        );
        let r1 = through.per_sec / base.per_sec.max(1.0);
        println!("  ratio       {r1:.2}× (target ≥ 0.5×)");
        // the same path with an agent that answers the final frame only: what a frame costs
        let one = listen(Gateway::new(Single, GatewayConfig::default()).router()).await;
        let single = load(&one, "application/json", d).await;
        println!(
            "  gateway, one-frame agent {:>9.0} req/s  p50 {:>7.2} ms  ({:.2}× of bare)",
            single.per_sec,
            single.p50.as_secs_f64() * 1e3,
            single.per_sec / base.per_sec.max(1.0)
        );

        // 2. one SSE stream of 10,000 chunks
        let n = 10_000;
        let gw = listen(Gateway::new(Burst(n), GatewayConfig::default()).router()).await;
        let bare = listen(Router::new().route(
            PATH,
            post(move || async move {
                let req = E2AEnvelope::new("chat.send", json!({})).with_request_id("bare");
                let frames = async_stream::stream! {
                    let mut s = ResponseStream::for_request(&req);
                    for i in 0..n {
                        let f = s.text(if i % 2 == 0 { "tick " } else { "tock " });
                        yield Ok::<Bytes, std::convert::Infallible>(Bytes::from(e2a::sse::encode(&f)));
                    }
                    yield Ok(Bytes::from(e2a::sse::encode(&s.complete(json!({})))));
                };
                ([("content-type", "text/event-stream")], Body::from_stream(frames))
            }),
        ))
        .await;
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..if quick { 2 } else { 5 } {
            let (eb, tb) = stream_frames(&bare).await;
            let (eg, tg) = stream_frames(&gw).await;
            assert_eq!((eb, eg), (n + 1, n + 1), "every frame arrives");
            best = (best.0.min(tb.as_secs_f64()), best.1.min(tg.as_secs_f64()));
        }
        let (fb, fg) = ((n + 1) as f64 / best.0, (n + 1) as f64 / best.1);
        println!("one SSE stream of {n} chunks (best of runs)");
        println!("  bare SSE    {fb:>9.0} frames/s");
        println!("  gateway     {fg:>9.0} frames/s");
        let r2 = fg / fb;
        println!("  ratio       {r2:.2}× (target ≥ 0.5×)");

        // 3. idle streams
        match idle_streams(idle_n).await {
            Some((before, after, opened)) if opened > 0 => {
                let per = (after.saturating_sub(before)) as f64 / opened as f64;
                println!("{opened} idle SSE streams (gateway process RSS {before} KiB → {after} KiB)");
                println!("  per stream  {per:>9.1} KiB (target ≤ 64 KiB)");
            }
            _ => println!("idle SSE streams: could not open any"),
        }
    });
}
