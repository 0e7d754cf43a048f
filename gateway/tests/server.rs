//! The server loop under abuse: TCP_NODELAY (sequential SSE answers on one kept-alive
//! connection do not wait for delayed ACKs), a request head that never completes is cut, a
//! connection past the cap gets a 503, slow connections do not keep a normal client out, and
//! shutdown returns within the drain deadline + 2 s whatever the clients do.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use e2a_gateway::web::server::ServerLimits;
use e2a_gateway::{Gateway, GatewayConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

struct Server {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(config: GatewayConfig) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let gateway = Gateway::with_agent(Arc::new(common::script()), config);
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    Server {
        addr,
        stop: Some(tx),
        task,
    }
}

fn sse_request(text: &str) -> String {
    let body = serde_json::json!({"method": "chat.send", "params": {"query": text}}).to_string();
    format!(
        "POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\naccept: text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads until the peer closes (or `limit` passes); what arrived.
async fn read_to_close(tcp: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(limit, read).await.ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[tokio::test]
async fn sequential_sse_answers_on_one_connection_do_not_wait_for_delayed_acks() {
    let s = serve(common::fast_config()).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .expect("client");
    let url = format!("http://{}/v1/e2a/requests", s.addr);
    let body = serde_json::json!({"method": "chat.send", "params": {"query": "hello"}}).to_string();
    let mut took = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        let resp = client
            .post(&url)
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .expect("send");
        let text = resp.text().await.expect("body");
        assert!(text.contains("\"is_final\":true"), "{text}");
        took.push(started.elapsed());
    }
    took.sort();
    // a delayed ACK costs 40 ms on Linux; with TCP_NODELAY an answer takes a few
    let median = took[took.len() / 2];
    assert!(median < Duration::from_millis(25), "median {median:?} of {took:?}");
}

#[tokio::test]
async fn a_request_head_that_never_completes_is_cut() {
    let config = GatewayConfig {
        server: ServerLimits {
            header_read_timeout: Duration::from_millis(300),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let s = serve(config).await;
    let mut slow = TcpStream::connect(s.addr).await.expect("connect");
    slow.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\n")
        .await
        .expect("write");
    let closed = read_to_close(&mut slow, Duration::from_secs(5)).await;
    assert!(
        closed.is_some(),
        "the connection is closed after the header-read timeout"
    );
    // an idle kept-alive connection too
    let mut idle = TcpStream::connect(s.addr).await.expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: gw\r\n\r\n")
        .await
        .expect("write");
    let answer = read_to_close(&mut idle, Duration::from_secs(5))
        .await
        .expect("closed when idle");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_connection_past_the_cap_gets_a_503_and_slow_ones_do_not_keep_others_out() {
    let config = GatewayConfig {
        server: ServerLimits {
            max_connections: 3,
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let s = serve(config).await;
    // three connections each with a request open (its body held back)
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = TcpStream::connect(s.addr).await.expect("connect");
        c.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{")
            .await
            .expect("write");
        held.push(c);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut extra = TcpStream::connect(s.addr).await.expect("connect");
    let answer = read_to_close(&mut extra, Duration::from_secs(5)).await.expect("closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 1"), "{answer}");
    drop(held);

    // many slow connections (under the default cap) do not keep a normal client waiting
    let s = serve(common::fast_config()).await;
    let mut slow = Vec::new();
    for _ in 0..300 {
        let mut c = TcpStream::connect(s.addr).await.expect("connect");
        c.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\ncontent-length: 100\r\n")
            .await
            .expect("write");
        slow.push(c);
    }
    let resp = common::post(
        &format!("http://{}", s.addr),
        &common::envelope("hello"),
        "application/json",
    )
    .await;
    assert_eq!(resp.status(), 200);
}

/// The HTTP/2 client preface and an empty `SETTINGS` frame.
const H2_START: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

/// An HTTP/2 frame.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len().to_be_bytes();
    let mut f = vec![len[5], len[6], len[7], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// `GET /healthz` on stream 1 of an HTTP/2 connection (HPACK without Huffman coding).
fn h2_get_healthz() -> Vec<u8> {
    let mut block = vec![0x82, 0x86, 0x44, 8];
    block.extend_from_slice(b"/healthz");
    block.extend_from_slice(&[0x41, 2]);
    block.extend_from_slice(b"gw");
    h2_frame(1, 0x5, 1, &block)
}

/// Whether a `HEADERS` frame (an answer) on stream 1 of an HTTP/2 connection arrives within
/// `limit`, before the connection closes.
async fn answer_on_stream_1(tcp: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let found = tokio::time::timeout(limit, async {
        loop {
            let n = tcp.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                return false;
            }
            got.extend_from_slice(&buf[..n]);
            let mut at = 0;
            while at + 9 <= got.len() {
                let len = usize::from(got[at]) << 16 | usize::from(got[at + 1]) << 8 | usize::from(got[at + 2]);
                if got[at + 3] == 1 && got[at + 8] == 1 {
                    return true;
                }
                at += 9 + len;
            }
        }
    })
    .await;
    found == Ok(true)
}

#[tokio::test]
async fn silent_sockets_neither_stay_nor_keep_a_normal_client_out_at_the_cap() {
    let config = GatewayConfig {
        server: ServerLimits {
            max_connections: 50,
            header_read_timeout: Duration::from_secs(60),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let s = serve(config).await;
    // four times the cap of sockets that send nothing, a partial HTTP/2 preface or half a head
    let mut silent = Vec::new();
    for i in 0..200 {
        let mut c = TcpStream::connect(s.addr).await.expect("connect");
        match i % 3 {
            0 => {}
            1 => c.write_all(b"PRI * HTTP/2.0\r\n").await.expect("write"),
            _ => c.write_all(b"GET /healthz HTTP/1.1\r\n").await.expect("write"),
        }
        silent.push(c);
    }
    // a normal client is served all the same, each time
    for _ in 0..5 {
        let resp = common::post(
            &format!("http://{}", s.addr),
            &common::envelope("hello"),
            "application/json",
        )
        .await;
        assert_eq!(resp.status(), 200);
    }
    drop(silent);
}

#[tokio::test]
async fn connections_without_a_request_are_closed() {
    let config = GatewayConfig {
        server: ServerLimits {
            header_read_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(600),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let s = serve(config).await;
    let started = Instant::now();
    // one that never sends a byte, one with a partial HTTP/2 preface, an HTTP/2 connection
    // that never opens a stream
    let mut nothing = TcpStream::connect(s.addr).await.expect("connect");
    let mut preface = TcpStream::connect(s.addr).await.expect("connect");
    preface.write_all(b"PRI * HTTP/2.0\r\n").await.expect("write");
    let mut settings = TcpStream::connect(s.addr).await.expect("connect");
    settings.write_all(H2_START).await.expect("write");
    for c in [&mut nothing, &mut preface, &mut settings] {
        assert!(read_to_close(c, Duration::from_secs(5)).await.is_some(), "closed");
    }
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // an HTTP/2 connection is served, then closed once idle
    let mut used = TcpStream::connect(s.addr).await.expect("connect");
    used.write_all(H2_START).await.expect("write");
    used.write_all(&h2_get_healthz()).await.expect("write");
    let started = Instant::now();
    let answer = read_to_close(&mut used, Duration::from_secs(5))
        .await
        .expect("closed when idle");
    assert!(answer.len() > 9, "an answer came first: {answer:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_http2_ping_flood_is_cut() {
    let s = serve(common::fast_config()).await;
    let mut flood = TcpStream::connect(s.addr).await.expect("connect");
    flood.write_all(H2_START).await.expect("write");
    flood.write_all(&h2_get_healthz()).await.expect("write");
    let mut pings = Vec::new();
    for i in 0..1_000u64 {
        pings.extend(h2_frame(6, 0, 0, &i.to_be_bytes()));
    }
    // the server may close while the pings are still being written
    let _ = flood.write_all(&pings).await;
    assert!(
        read_to_close(&mut flood, Duration::from_secs(5)).await.is_some(),
        "the connection is closed"
    );
    // a client pinging now and then is served
    let mut calm = TcpStream::connect(s.addr).await.expect("connect");
    calm.write_all(H2_START).await.expect("write");
    for i in 0..10u64 {
        calm.write_all(&h2_frame(6, 0, 0, &i.to_be_bytes()))
            .await
            .expect("write");
    }
    calm.write_all(&h2_get_healthz()).await.expect("write");
    assert!(
        answer_on_stream_1(&mut calm, Duration::from_secs(5)).await,
        "served after ten pings"
    );
}

#[tokio::test]
async fn a_grpc_call_whose_message_never_comes_is_answered_within_the_body_timeout() {
    let config = GatewayConfig {
        server: ServerLimits {
            body_read_timeout: Duration::from_millis(300),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let gateway = Gateway::with_agent(Arc::new(common::script()), config).with_a2a(
        e2a_gateway::bindings::a2a::A2aConfig::default(),
        Arc::new(e2a_gateway::store::MemoryStore::new()),
    );
    let (_stop, rx) = oneshot::channel::<()>();
    tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    // the head of a SendMessage call (no END_STREAM), then nothing
    let mut block = vec![0x83, 0x86, 0x44];
    let path = b"/lf.a2a.v1.A2AService/SendMessage";
    block.push(path.len() as u8);
    block.extend_from_slice(path);
    block.extend_from_slice(&[0x41, 2]);
    block.extend_from_slice(b"gw");
    block.extend_from_slice(&[0x5f, 16]);
    block.extend_from_slice(b"application/grpc");
    block.extend_from_slice(&[0x00, 2]);
    block.extend_from_slice(b"te");
    block.push(8);
    block.extend_from_slice(b"trailers");
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(H2_START).await.expect("write");
    tcp.write_all(&h2_frame(1, 0x4, 1, &block)).await.expect("write");
    // an answer on stream 1 (its HEADERS: the status, trailers-only or not)
    assert!(
        answer_on_stream_1(&mut tcp, Duration::from_secs(3)).await,
        "the call is answered, not held"
    );
}

#[tokio::test]
async fn shutdown_returns_within_the_drain_deadline_whatever_the_clients_do() {
    let config = GatewayConfig {
        drain_timeout: Duration::from_millis(500),
        server: ServerLimits {
            header_read_timeout: Duration::from_secs(60),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let mut s = serve(config).await;
    // a partial head, a half-sent body, and a client of a long run that never reads
    let mut head = TcpStream::connect(s.addr).await.expect("connect");
    head.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\n")
        .await
        .expect("write");
    let mut body = TcpStream::connect(s.addr).await.expect("connect");
    body.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"method\":")
        .await
        .expect("write");
    let mut deaf = TcpStream::connect(s.addr).await.expect("connect");
    deaf.write_all(sse_request("never finish").as_bytes())
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    if let Some(stop) = s.stop.take() {
        let _ = stop.send(());
    }
    let ended = tokio::time::timeout(Duration::from_secs(10), &mut s.task).await;
    let took = started.elapsed();
    assert!(matches!(ended, Ok(Ok(Ok(())))), "{ended:?}");
    assert!(
        took < Duration::from_millis(500) + Duration::from_secs(2),
        "shutdown took {took:?}"
    );
    // the run was cut off with a final frame before its connection went
    let text = read_to_close(&mut deaf, Duration::from_secs(2))
        .await
        .unwrap_or_default();
    assert!(text.contains("E2A.CANCELLED"), "{text}");
    drop((head, body));
}

#[tokio::test]
async fn a_body_that_arrives_too_slowly_gets_a_408() {
    let config = GatewayConfig {
        server: ServerLimits {
            body_read_timeout: Duration::from_millis(300),
            ..ServerLimits::default()
        },
        ..common::fast_config()
    };
    let s = serve(config).await;
    let mut slow = TcpStream::connect(s.addr).await.expect("connect");
    slow.write_all(b"POST /v1/e2a/requests HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"method\":")
        .await
        .expect("write");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), slow.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("E2A.TIMEOUT"), "{answer}");
}

#[tokio::test]
async fn a_refusal_before_the_body_is_read_says_connection_close() {
    let config = GatewayConfig {
        auth: e2a_gateway::Auth::token("the-token"),
        ..common::fast_config()
    };
    let server = serve(config).await;
    let body = serde_json::json!({"method": "chat.send", "params": {"query": "hi"}}).to_string();
    let head = |auth: &str| {
        format!(
            "POST /v1/e2a/requests HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: application/json\r\n{auth}content-length: {}\r\n\r\n",
            body.len()
        )
    };
    // the head alone, the body held back: the 401 comes before the body is read
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.write_all(head("").as_bytes()).await.expect("write");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("an answer before the body")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    assert!(
        answer.contains("connection: close"),
        "the client is told not to reuse it: {answer}"
    );
    // an accepted request, its body read: the connection stays open for the next one
    let mut tcp = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!("{}{body}", head("authorization: Bearer the-token\r\n"));
    tcp.write_all(request.as_bytes()).await.expect("write");
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    let answer = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(!answer.contains("connection: close"), "{answer}");
}
