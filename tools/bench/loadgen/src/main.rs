//! A small, bounded HTTP/1.1 load generator for the side-by-side server benchmark.
//!
//! `C` keep-alive connections (each its own task on one current-thread runtime, so the whole
//! generator fits on one core) send the same request back to back for `D` seconds, then stop
//! by themselves. Latency is measured from sending the request head to the end of the response
//! body (`json` mode reads the whole body; `sse` mode reads the event stream until the server
//! ends it). One JSON line goes to stdout:
//!
//! `{"requests":N,"errors":E,"secs":S,"rps":R,"p50_ms":..,"p99_ms":..,...}`
//!
//! A request counts as an error when the connection fails, the status is not 2xx, the body
//! contains a `--reject` string, misses an `--expect` string, or (in `sse` mode) the response
//! is not `text/event-stream`. The first few errors are described on stderr.
//!
//! `{{n}}` in the body file is replaced, per request, by a string unique to this run and
//! request (`<pid>-<start µs>-<counter>`), for servers that refuse a repeated id.
//!
//! Requests still in flight at the end of the `D` seconds are dropped uncounted. With `--drain`
//! they are read to their end and counted instead (no new request starts after `D`), and `secs`
//! is the time until the last one ended: the server does no work in the run for a request that
//! is not counted, and is idle when the generator exits (for long streams, where a request takes
//! a good part of a round).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

const USAGE: &str = "usage: loadgen --url URL [--method POST] [--body FILE] [-H 'Name: value']... \
[-c CONNECTIONS] [-d SECONDS] [--mode json|sse] [--expect STR] [--reject STR] [--timeout SECONDS] [--drain] [--once]";

/// Most errors described on stderr.
const MAX_ERROR_LINES: u32 = 5;

struct Args {
    uri: Uri,
    method: Method,
    body: Option<String>,
    headers: Vec<(HeaderName, HeaderValue)>,
    connections: usize,
    duration: Duration,
    sse: bool,
    expect: Vec<String>,
    reject: Vec<String>,
    timeout: Duration,
    /// Read the requests in flight at the end of the run to their end, and count them.
    drain: bool,
    /// Send one request, print its status line to stderr and its body to stdout, and exit.
    once: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut uri = None;
    let mut method = Method::GET;
    let mut method_set = false;
    let mut body = None;
    let mut headers = Vec::new();
    let mut connections = 64usize;
    let mut duration = 5.0f64;
    let mut sse = false;
    let mut expect = Vec::new();
    let mut reject = Vec::new();
    let mut timeout = 10.0f64;
    let mut once = false;
    let mut drain = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--url" => uri = Some(val()?.parse::<Uri>().map_err(|e| format!("--url: {e}"))?),
            "--method" | "-X" => {
                method = val()?.parse().map_err(|e| format!("--method: {e}"))?;
                method_set = true;
            }
            "--body" => {
                let f = val()?;
                body = Some(std::fs::read_to_string(&f).map_err(|e| format!("cannot read {f}: {e}"))?);
            }
            "-H" | "--header" => {
                let h = val()?;
                let (k, v) = h.split_once(':').ok_or_else(|| format!("bad header {h:?}"))?;
                let k = HeaderName::from_bytes(k.trim().as_bytes()).map_err(|e| format!("header {h:?}: {e}"))?;
                let v = HeaderValue::from_str(v.trim()).map_err(|e| format!("header {h:?}: {e}"))?;
                headers.push((k, v));
            }
            "-c" | "--connections" => connections = val()?.parse().map_err(|e| format!("-c: {e}"))?,
            "-d" | "--duration" => duration = val()?.parse().map_err(|e| format!("-d: {e}"))?,
            "--mode" => {
                sse = match val()?.as_str() {
                    "json" => false,
                    "sse" => true,
                    m => return Err(format!("--mode {m}: json or sse")),
                }
            }
            "--expect" => expect.push(val()?),
            "--reject" => reject.push(val()?),
            "--timeout" => timeout = val()?.parse().map_err(|e| format!("--timeout: {e}"))?,
            "--once" => once = true,
            "--drain" => drain = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let uri = uri.ok_or_else(|| format!("--url is required\n{USAGE}"))?;
    if uri.scheme_str() != Some("http") {
        return Err("only http:// URLs are supported".into());
    }
    if !method_set && body.is_some() {
        method = Method::POST;
    }
    let bounded = |x: f64, max: f64| x.is_finite() && x > 0.0 && x <= max;
    if connections == 0 || !bounded(duration, 3600.0) || !bounded(timeout, 3600.0) {
        return Err("need -c >= 1, 0 < -d <= 3600 and 0 < --timeout <= 3600".into());
    }
    Ok(Args {
        uri,
        method,
        body,
        headers,
        connections,
        duration: Duration::from_secs_f64(duration),
        sse,
        expect,
        reject,
        timeout: Duration::from_secs_f64(timeout),
        drain,
        once,
    })
}

/// What all connections share (one thread, so `Cell`/`RefCell` suffice).
struct Shared {
    args: Args,
    /// `host:port` to connect to and send as `Host`.
    authority: String,
    path: String,
    /// `(before, after)` the first `{{n}}`, or the whole body as `before` when there is none.
    body_parts: Option<(String, Option<String>)>,
    run_tag: String,
    counter: Cell<u64>,
    errors: Cell<u64>,
    error_lines: Cell<u32>,
    sse_events: Cell<u64>,
    latencies_us: RefCell<Vec<u32>>,
    deadline: tokio::time::Instant,
}

impl Shared {
    fn error(&self, what: impl std::fmt::Display) {
        self.errors.set(self.errors.get() + 1);
        let n = self.error_lines.get();
        if n < MAX_ERROR_LINES {
            self.error_lines.set(n + 1);
            eprintln!("loadgen: error: {what}");
        }
    }

    fn body(&self) -> Bytes {
        match &self.body_parts {
            None => Bytes::new(),
            Some((whole, None)) => Bytes::copy_from_slice(whole.as_bytes()),
            Some((before, Some(after))) => {
                let n = self.counter.get();
                self.counter.set(n + 1);
                Bytes::from(format!("{before}{}-{n}{after}", self.run_tag))
            }
        }
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(self.args.method.clone())
            .uri(self.path.as_str())
            .header(HOST, self.authority.as_str());
        let has_ct = self.args.headers.iter().any(|(k, _)| k == CONTENT_TYPE);
        if self.body_parts.is_some() && !has_ct {
            b = b.header(CONTENT_TYPE, "application/json");
        }
        for (k, v) in &self.args.headers {
            b = b.header(k, v);
        }
        b.body(Full::new(self.body())).expect("valid request")
    }
}

enum Outcome {
    Ok,
    /// The response arrived but is wrong; the connection can be reused.
    Bad(String),
    /// The connection failed; reconnect.
    Broken(String),
}

async fn read_response(shared: &Shared, resp: Response<Incoming>) -> Outcome {
    let status = resp.status();
    let ct = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = match resp.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Outcome::Broken(format!("reading body: {e}")),
    };
    // (`from_utf8` first: its ASCII fast path is several times quicker than the lossy
    // conversion's, which matters for long streams)
    let text = match std::str::from_utf8(&body) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(&body),
    };
    if !status.is_success() {
        let snippet: String = text.chars().take(200).collect();
        return Outcome::Bad(format!("status {status}: {snippet}"));
    }
    if shared.args.sse {
        if !ct.starts_with("text/event-stream") {
            return Outcome::Bad(format!("content-type {ct:?} is not text/event-stream"));
        }
        let events = count_blank_lines(&body);
        shared.sse_events.set(shared.sse_events.get() + events);
    }
    for e in &shared.args.expect {
        if !text.contains(e.as_str()) {
            let snippet: String = text.chars().take(200).collect();
            return Outcome::Bad(format!("body lacks {e:?}: {snippet}"));
        }
    }
    for r in &shared.args.reject {
        if text.contains(r.as_str()) {
            let snippet: String = text.chars().take(300).collect();
            return Outcome::Bad(format!("body has {r:?}: {snippet}"));
        }
    }
    Outcome::Ok
}

/// The `\n\n` in `body`, not overlapping (as `str::matches` counts them): the SSE events.
fn count_blank_lines(body: &[u8]) -> u64 {
    memchr::memmem::find_iter(body, b"\n\n").count() as u64
}

/// One connection's loop: (re)connect, then send requests back to back until the deadline.
async fn connection(shared: Rc<Shared>) {
    let deadline = shared.deadline;
    'connect: while tokio::time::Instant::now() < deadline {
        let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(shared.authority.as_str())).await {
            Err(_) => return,
            Ok(Err(e)) => {
                shared.error(format!("connect: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Ok(Ok(s)) => s,
        };
        let _ = stream.set_nodelay(true);
        let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(x) => x,
            Err(e) => {
                shared.error(format!("handshake: {e}"));
                continue;
            }
        };
        let driver = tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        loop {
            if tokio::time::Instant::now() >= deadline {
                break 'connect;
            }
            match tokio::time::timeout_at(deadline, sender.ready()).await {
                Err(_) => break 'connect,
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    // The server closed the kept-alive connection between two requests: not
                    // an error of a request, just reconnect.
                    driver.abort();
                    continue 'connect;
                }
            }
            let req = shared.request();
            let start = Instant::now();
            let per_request = tokio::time::Instant::now() + shared.args.timeout;
            let until = if shared.args.drain {
                per_request
            } else {
                per_request.min(deadline)
            };
            let fut = async {
                match sender.send_request(req).await {
                    Ok(resp) => read_response(&shared, resp).await,
                    Err(e) => Outcome::Broken(format!("request: {e}")),
                }
            };
            match tokio::time::timeout_at(until, fut).await {
                Err(_) if until == deadline && per_request > deadline => {
                    // Still in flight when the run ended: neither counted nor an error.
                    break 'connect;
                }
                Err(_) => {
                    shared.error(format!("timeout after {:?}", shared.args.timeout));
                    driver.abort();
                    continue 'connect;
                }
                Ok(Outcome::Ok) => {
                    let us = start.elapsed().as_micros().min(u32::MAX as u128) as u32;
                    shared.latencies_us.borrow_mut().push(us);
                }
                Ok(Outcome::Bad(e)) => shared.error(e),
                Ok(Outcome::Broken(e)) => {
                    shared.error(e);
                    driver.abort();
                    continue 'connect;
                }
            }
        }
    }
}

/// `--once`: one request on a fresh connection; the body to stdout, the verdict as exit code.
async fn once(shared: &Shared) -> i32 {
    let fut = async {
        let stream = TcpStream::connect(shared.authority.as_str())
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        let resp = sender
            .send_request(shared.request())
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = resp.status();
        let ct = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok::<_, String>((status, ct, body))
    };
    match tokio::time::timeout(shared.args.timeout, fut).await {
        Err(_) => {
            eprintln!("loadgen: timeout");
            1
        }
        Ok(Err(e)) => {
            eprintln!("loadgen: {e}");
            1
        }
        Ok(Ok((status, ct, body))) => {
            use std::io::Write;
            eprintln!("loadgen: {status} content-type: {ct}");
            let _ = std::io::stdout().write_all(&body);
            let _ = std::io::stdout().flush();
            if status.is_success() {
                0
            } else {
                1
            }
        }
    }
}

/// This process's user+system CPU seconds, from `/proc/self/stat` (0 where unreadable).
fn own_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `(comm)`: state is field 3, utime 14 and stime 15.
    let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| f.get(i)?.parse::<f64>().ok()).sum();
    let hz = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    ticks / hz
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest-rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let idx = rank.clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1000.0
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let code = local.block_on(&rt, run(args));
    std::process::exit(code);
}

async fn run(args: Args) -> i32 {
    let authority = match args.uri.authority() {
        Some(a) if a.port_u16().is_some() => a.as_str().to_string(),
        Some(a) => format!("{}:80", a.host()),
        None => {
            eprintln!("loadgen: --url needs a host");
            return 2;
        }
    };
    let path = args
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let body_parts = args.body.as_ref().map(|b| match b.split_once("{{n}}") {
        Some((before, after)) => (before.to_string(), Some(after.to_string())),
        None => (b.clone(), None),
    });
    let start_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let connections = args.connections;
    let duration = args.duration;
    let begin = tokio::time::Instant::now();
    let cpu0 = own_cpu_secs();
    let shared = Rc::new(Shared {
        authority,
        path,
        body_parts,
        run_tag: format!("{}-{start_us}", std::process::id()),
        counter: Cell::new(0),
        errors: Cell::new(0),
        error_lines: Cell::new(0),
        sse_events: Cell::new(0),
        latencies_us: RefCell::new(Vec::with_capacity(1 << 16)),
        deadline: begin + duration,
        args,
    });
    if shared.args.once {
        return once(&shared).await;
    }
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::task::spawn_local(connection(shared.clone())))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let secs = if shared.args.drain {
        begin.elapsed().as_secs_f64()
    } else {
        begin.elapsed().as_secs_f64().min(duration.as_secs_f64())
    }
    .max(1e-9);
    let mut lat = shared.latencies_us.borrow_mut();
    lat.sort_unstable();
    let n = lat.len() as u64;
    let mut out = serde_json::json!({
        "requests": n,
        "errors": shared.errors.get(),
        "secs": (secs * 1000.0).round() / 1000.0,
        "rps": ((n as f64 / secs) * 10.0).round() / 10.0,
        "p50_ms": (percentile_ms(&lat, 50.0) * 1000.0).round() / 1000.0,
        "p99_ms": (percentile_ms(&lat, 99.0) * 1000.0).round() / 1000.0,
        "connections": connections,
        "client_cpu_pct": (((own_cpu_secs() - cpu0) / secs) * 1000.0).round() / 10.0,
    });
    if shared.args.sse && n > 0 {
        out["events_per_req"] = serde_json::json!(((shared.sse_events.get() as f64 / n as f64) * 10.0).round() / 10.0);
    }
    println!("{out}");
    0
}

#[cfg(test)]
mod tests {
    #[test]
    fn blank_lines_are_counted_as_str_matches_counts_them() {
        for text in [
            "",
            "\n",
            "\n\n",
            "a\n\nb\n\n\nc\n\n\n\n",
            "data: x\n\nid: 1\ndata: y\n\n",
        ] {
            assert_eq!(
                super::count_blank_lines(text.as_bytes()),
                text.matches("\n\n").count() as u64,
                "{text:?}"
            );
        }
    }
}
