//! The HTTP server loop, bounded under abuse: every accepted socket gets `TCP_NODELAY` (an SSE
//! answer is several writes; without it each waits for the client's delayed ACK, ~40 ms), a
//! request head must arrive within `header_read_timeout` (slowloris), a connection without an
//! open request is closed after `idle_timeout` (and one that never began a request after
//! `header_read_timeout`), HTTP/2 `SETTINGS`/`PING` floods are cut (`web::connections`),
//! at most `max_connections` are open at once (at the cap a new connection closes the one idle
//! the longest; with every connection busy it gets a `503` and is closed, before file
//! descriptors run out), and on shutdown the listener closes, idle connections close, and
//! every connection still open at the deadline is dropped — a client that sends half a request
//! or stops reading cannot keep the process alive.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::connections::{Counted, Metered, Registry};

/// What a connection past the cap is told: a `503` problem with `Retry-After`.
fn busy() -> Vec<u8> {
    let body = r#"{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"too many connections; retry later"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// How the server treats connections.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// Longest time for a request head to arrive, and for the next one on an idle kept-alive
    /// connection (the connection is closed after it).
    pub header_read_timeout: Duration,
    /// Longest time for a request body to arrive once its head has (`408` after it; gRPC's
    /// `DEADLINE_EXCEEDED`).
    pub body_read_timeout: Duration,
    /// Longest time a connection that has served requests (HTTP/2, or kept-alive HTTP/1) may
    /// stay without an open one.
    pub idle_timeout: Duration,
    /// Most connections open at once (lowered to what the process's file-descriptor limit
    /// allows, with room for stores and backends).
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
        }
    }
}

impl ServerLimits {
    /// `max_connections`, within the soft limit on open files less 128 for everything else.
    pub fn effective_max_connections(&self) -> usize {
        match open_files_limit() {
            Some(n) => self.max_connections.min(n.saturating_sub(128).max(16)),
            None => self.max_connections,
        }
    }
}

/// The soft limit on open files, where the system says (Linux `/proc/self/limits`).
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Serves on `listener`, each request answered by the router `routes` gives then (one router
/// throughout, or the one a reloadable gateway serves at that moment: no router in front of
/// it), until `shutdown` completes; then stops accepting, lets open
/// connections finish until `drain` completes, and drops those still open then. `drain` is
/// started when `shutdown` completes.
pub(crate) async fn serve<S, D>(
    listener: TcpListener,
    routes: impl Fn() -> axum::Router + Clone + Send + Sync + 'static,
    limits: ServerLimits,
    shutdown: S,
    drain: impl FnOnce() -> D,
) -> std::io::Result<()>
where
    S: Future<Output = ()> + Send,
    D: Future<Output = ()>,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.effective_max_connections()));
    let registry = Arc::new(Registry::default());
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let (tcp, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // out of descriptors, or a connection reset before accept: not fatal
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let Some(slot) = slot_for(&slots, &registry).await else {
            connections.spawn(refuse(tcp));
            continue;
        };
        let (id, state) = registry.add();
        let service = TowerToHyperService::new(Counted {
            routes: routes.clone(),
            conn: state.clone(),
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(Metered::new(tcp)), service);
        let conn = graceful.watch(conn.into_owned());
        let registry = registry.clone();
        connections.spawn(async move {
            tokio::select! {
                ended = conn => if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                () = state.watch(limits.header_read_timeout, limits.idle_timeout) => {
                    tracing::debug!("closing a connection without an open request");
                }
            }
            registry.remove(id);
            drop(slot);
        });
    }
    drop(listener);
    close_connections(graceful, drain, connections).await;
    Ok(())
}

/// A slot for a new connection: a free one, else the one the connection idle the longest gives
/// up (waited for a second at most); `None` when every connection is busy.
async fn slot_for(slots: &Arc<Semaphore>, registry: &Registry) -> Option<OwnedSemaphorePermit> {
    match slots.clone().try_acquire_owned() {
        Ok(slot) => Some(slot),
        // at the cap: the connection idle the longest makes room, if there is one
        Err(_) if registry.evict_idlest() => {
            match tokio::time::timeout(Duration::from_secs(1), slots.clone().acquire_owned()).await {
                Ok(Ok(slot)) => Some(slot),
                _ => None,
            }
        }
        Err(_) => None,
    }
}

/// Once the listener is closed: idle connections close now, busy ones after their answer;
/// `drain` (started now) bounds the wait, with a second more for the final frames; then every
/// connection still open is dropped.
async fn close_connections<D: Future<Output = ()>>(
    graceful: GracefulShutdown,
    drain: impl FnOnce() -> D,
    mut connections: JoinSet<()>,
) {
    // idle connections close now, busy ones after their answer
    let closed = graceful.shutdown();
    let drained = drain();
    tokio::pin!(closed, drained);
    tokio::select! {
        // every connection closed: runs without one (detached tasks) may still be going
        () = &mut closed => drained.await,
        () = &mut drained => {
            // runs ended or cut off: a moment for their final frames to reach the clients
            if tokio::time::timeout(Duration::from_secs(1), &mut closed).await.is_err() {
                tracing::info!(open = connections.len(), "drain deadline passed: closing the connections still open");
            }
        }
    }
    connections.shutdown().await;
}

/// Records when a request body was read to its end.
struct Watched(Arc<std::sync::atomic::AtomicBool>);

impl super::body::Observer for Watched {
    fn observe(&mut self, polled: super::body::Polled, _: &mut std::task::Context<'_>) -> super::body::Polled {
        if let std::task::Poll::Ready(None) = polled {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        polled
    }
}

/// A response sent before its request's body was read to the end (a `401`, `403`, `429`, a
/// `404` of an unknown route, a `415`…) says `Connection: close`: the server closes such a
/// connection after the answer (the rest of the body is still on it), and a client that is
/// told so opens a new one instead of failing its next request on the closed one.
///
/// This watches `request`'s body: `None` when there is nothing to watch (no body, or HTTP/2,
/// which has no `Connection` header: a stream is reset on its own, gRPC's included); give what
/// it returns to [`close_unread`] with the response.
pub(crate) fn watch_unread(request: &mut axum::extract::Request) -> Option<Arc<std::sync::atomic::AtomicBool>> {
    use http_body::Body as _;
    if request.body().is_end_stream() || request.version() >= axum::http::Version::HTTP_2 {
        return None;
    }
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let body = std::mem::take(request.body_mut());
    *request.body_mut() = axum::body::Body::new(super::body::Observed::new(body, Watched(done.clone())));
    Some(done)
}

/// `Connection: close` on `response` when the body [`watch_unread`] watched was not read to
/// the end.
pub(crate) fn close_unread(
    watched: Option<Arc<std::sync::atomic::AtomicBool>>,
    response: &mut axum::response::Response,
) {
    if watched.is_some_and(|done| !done.load(std::sync::atomic::Ordering::Relaxed)) {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
}

/// Answers a connection past the cap with a `503` and closes it (within a second).
async fn refuse(mut tcp: tokio::net::TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = tcp.write_all(&busy()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}
