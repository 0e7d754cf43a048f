//! What the server knows of each open connection, so that no connection is kept for nothing:
//! the requests open on it (a request is open from its head until its answer's body is written
//! or dropped), since when it has had none, and its rate of HTTP/2 control frames.
//!
//! - A connection that has not begun a request within `header_read_timeout` of its accept (a
//!   socket that sends nothing, a partial HTTP/2 preface) is closed, and so is one without an
//!   open request for `idle_timeout` (an idle HTTP/2 or kept-alive connection).
//! - At the connection cap a new connection closes the one idle the longest instead of being
//!   refused: only connections with open requests hold the cap, and a client sending nothing
//!   cannot keep others out. (Past the cap with every connection busy, the new one gets `503`.)
//! - An HTTP/2 connection sending more than [`CONTROL_FRAMES_PER_WINDOW`] `SETTINGS` or `PING`
//!   frames (ACKs aside) in [`CONTROL_WINDOW`] is cut: hyper answers each, and a flood of them
//!   costs the server a core.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Most `SETTINGS` and `PING` frames (not ACKs) an HTTP/2 client may send in [`CONTROL_WINDOW`].
pub(crate) const CONTROL_FRAMES_PER_WINDOW: u32 = 100;

/// The window [`CONTROL_FRAMES_PER_WINDOW`] counts in.
pub(crate) const CONTROL_WINDOW: Duration = Duration::from_secs(10);

/// One open connection.
pub(crate) struct Conn {
    /// Requests open on it now.
    open: AtomicUsize,
    /// Whether a request ever began on it.
    used: AtomicBool,
    /// Milliseconds after the registry's start at which it last had no open request.
    idle_since: AtomicU64,
    /// Chosen to make room at the cap (each is chosen once).
    evicted: AtomicBool,
    /// Wakes its watchdog when it is evicted.
    evict: Notify,
    epoch: Instant,
}

impl Conn {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Marks a request begun; the guard ends it when dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> RequestGuard {
        self.used.store(true, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::AcqRel);
        RequestGuard(self.clone())
    }

    /// Returns when the connection should be closed: evicted, never used within `first`, or
    /// without an open request for `idle`.
    pub(crate) async fn watch(&self, first: Duration, idle: Duration) {
        loop {
            let limit = if self.used.load(Ordering::Relaxed) { idle } else { first };
            let since = self.idle_since.load(Ordering::Acquire);
            let now = self.now();
            let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
            let wait = if self.open.load(Ordering::Acquire) > 0 {
                // busy: look again after a whole idle period
                limit_ms
            } else if now.saturating_sub(since) >= limit_ms {
                return;
            } else {
                limit_ms - now.saturating_sub(since)
            };
            tokio::select! {
                () = self.evict.notified() => return,
                () = tokio::time::sleep(Duration::from_millis(wait.max(1))) => {}
            }
        }
    }
}

/// A request open on a connection, until dropped.
pub(crate) struct RequestGuard(Arc<Conn>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let c = &self.0;
        c.idle_since.store(c.now(), Ordering::Release);
        c.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The open connections of one server.
pub(crate) struct Registry {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
    epoch: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            conns: Mutex::default(),
            next: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Registry {
    /// A connection accepted now; [`Registry::remove`] it when it closes.
    pub(crate) fn add(&self) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            open: AtomicUsize::new(0),
            used: AtomicBool::new(false),
            idle_since: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
            epoch: self.epoch,
        });
        conn.idle_since.store(conn.now(), Ordering::Relaxed);
        self.conns.lock().insert(id, conn.clone());
        (id, conn)
    }

    /// Forgets a closed connection.
    pub(crate) fn remove(&self, id: u64) {
        self.conns.lock().remove(&id);
    }

    /// Tells the connection idle the longest (no open request) to close; whether there was one.
    pub(crate) fn evict_idlest(&self) -> bool {
        let conns = self.conns.lock();
        let idlest = conns
            .values()
            .filter(|c| c.open.load(Ordering::Acquire) == 0 && !c.evicted.load(Ordering::Relaxed))
            .min_by_key(|c| c.idle_since.load(Ordering::Relaxed));
        match idlest {
            Some(c) => {
                c.evicted.store(true, Ordering::Relaxed);
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// The router of one connection: each request counted open on it until its answer's body ends.
#[derive(Clone)]
pub(crate) struct Counted<R> {
    /// The router that answers a request now (a reloadable gateway swaps it).
    pub(crate) routes: R,
    pub(crate) conn: Arc<Conn>,
}

impl<B, R> tower_service::Service<axum::http::Request<B>> for Counted<R>
where
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
    R: Fn() -> axum::Router,
{
    type Response = axum::http::Response<Tracked>;
    type Error = std::convert::Infallible;
    type Future = CountedFuture<<axum::Router as tower_service::Service<axum::http::Request<B>>>::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let guard = self.conn.begin();
        CountedFuture {
            inner: tower_service::Service::call(&mut (self.routes)(), req),
            guard: Some(guard),
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of a [`Counted`] request: its body carries the request's guard.
    pub(crate) struct CountedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<RequestGuard>,
    }
}

impl<F> std::future::Future for CountedFuture<F>
where
    F: std::future::Future<Output = Result<axum::response::Response, std::convert::Infallible>>,
{
    type Output = Result<axum::http::Response<Tracked>, std::convert::Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.inner.poll(cx) {
            Poll::Ready(Ok(resp)) => {
                let guard = this.guard.take();
                Poll::Ready(Ok(resp.map(|inner| Tracked::new(inner, guard))))
            }
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => Poll::Pending,
        }
    }
}

/// An answer's body, its request open until the body is dropped.
pub(crate) type Tracked = super::body::Observed<Option<RequestGuard>>;

impl super::body::Observer for Option<RequestGuard> {}

/// The client preface of HTTP/2 with prior knowledge (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Where the reading of an HTTP/2 connection's frames stands.
enum Frames {
    /// Matching the preface: how many bytes of it have come.
    Preface(usize),
    /// Not HTTP/2: nothing more is looked at.
    NotH2,
    /// In a frame header: its bytes so far.
    Header([u8; 9], usize),
    /// In a frame's payload: the bytes still to come.
    Payload(usize),
}

/// A socket whose incoming HTTP/2 control frames are counted; past the rate, reads fail and
/// the connection ends.
pub(crate) struct Metered<T> {
    inner: T,
    frames: Frames,
    window_start: Instant,
    in_window: u32,
}

impl<T> Metered<T> {
    /// `inner`, metered.
    pub(crate) fn new(inner: T) -> Self {
        Metered {
            inner,
            frames: Frames::Preface(0),
            window_start: Instant::now(),
            in_window: 0,
        }
    }

    /// Reads `bytes` as the next bytes of the stream; whether the control-frame rate holds.
    fn scan(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            match &mut self.frames {
                Frames::NotH2 => return true,
                Frames::Preface(n) => {
                    let take = (PREFACE.len() - *n).min(bytes.len());
                    if bytes[..take] != PREFACE[*n..*n + take] {
                        self.frames = Frames::NotH2;
                        return true;
                    }
                    *n += take;
                    bytes = &bytes[take..];
                    if *n == PREFACE.len() {
                        self.frames = Frames::Header([0; 9], 0);
                    }
                }
                Frames::Header(head, n) => {
                    let take = (9 - *n).min(bytes.len());
                    head[*n..*n + take].copy_from_slice(&bytes[..take]);
                    *n += take;
                    bytes = &bytes[take..];
                    if *n == 9 {
                        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
                        let (kind, flags) = (head[3], head[4]);
                        // SETTINGS (4) and PING (6) without the ACK flag (0x1): each is answered
                        if (kind == 4 || kind == 6) && flags & 1 == 0 && !self.count_control() {
                            return false;
                        }
                        self.frames = if len == 0 {
                            Frames::Header([0; 9], 0)
                        } else {
                            Frames::Payload(len)
                        };
                    }
                }
                Frames::Payload(left) => {
                    let take = (*left).min(bytes.len());
                    *left -= take;
                    bytes = &bytes[take..];
                    if *left == 0 {
                        self.frames = Frames::Header([0; 9], 0);
                    }
                }
            }
        }
        true
    }

    /// Counts a control frame; whether the rate still holds.
    fn count_control(&mut self) -> bool {
        if self.window_start.elapsed() >= CONTROL_WINDOW {
            self.window_start = Instant::now();
            self.in_window = 0;
        }
        self.in_window += 1;
        self.in_window <= CONTROL_FRAMES_PER_WINDOW
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            if !matches!(self.frames, Frames::NotH2) && !self.scan(&buf.filled()[before..]) {
                tracing::debug!("HTTP/2 SETTINGS/PING flood: closing the connection");
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "too many HTTP/2 SETTINGS or PING frames",
                )));
            }
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags, 0, 0, 0, 0];
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn pings_past_the_rate_are_refused_whatever_the_read_boundaries() {
        let mut wire = PREFACE.to_vec();
        wire.extend(frame(4, 0, &[]));
        wire.extend(frame(4, 1, &[])); // an ACK is not counted
        wire.extend(frame(0, 0, &[0; 300])); // DATA, skipped
        for _ in 0..CONTROL_FRAMES_PER_WINDOW - 1 {
            wire.extend(frame(6, 0, &[7; 8]));
        }
        for split in [1, 7, 9, 17, 4096] {
            let mut m = Metered::new(());
            assert!(wire.chunks(split).all(|c| m.scan(c)), "split {split}: at the limit");
            assert!(!m.scan(&frame(6, 0, &[7; 8])), "split {split}: one past it");
        }
    }

    #[test]
    fn http1_is_not_looked_at() {
        let mut m = Metered::new(());
        assert!(m.scan(b"GET / HTTP/1.1\r\n"));
        assert!(matches!(m.frames, Frames::NotH2));
    }
}
