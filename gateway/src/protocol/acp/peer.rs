//! A JSON-RPC 2.0 peer over newline-delimited JSON (ACP's stdio transport), used by both
//! sides: the ACP agent `e2a acp` serves ([`crate::bindings::acp`]) and the ACP client the gateway
//! speaks to an `acp:CMD` backend ([`crate::backends::AcpProcessAgent`]).
//!
//! One task reads lines: responses complete the matching pending request, requests and
//! notifications go to the [`Incoming`] channel. One task writes: every outgoing message is one
//! line, flushed at once, so stdout carries protocol frames only.
//!
//! Why not the official `agent-client-protocol` crate's connection types: they run `!Send`
//! handlers on a `LocalSet` over `futures` I/O and take typed requests and responses, so the
//! JSON the e2a projectors produce would be re-encoded through a second set of types before it
//! is sent. Here it is sent as produced; the tests check every frame against the official
//! types of `agent-client-protocol-schema`, and the official TypeScript client drives it.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::message::{codes, Incoming, RpcError, WireIn, WireOut};
use lines::BadLines;

mod lines;

enum Out {
    Line(String),
    Close(oneshot::Sender<()>),
}

/// What gets the answer to a request this peer sent: run on the reading task, in order with
/// the messages read around the answer.
type Waiter = Box<dyn FnOnce(Result<Value, RpcError>) + Send>;

type Pending = Mutex<HashMap<String, Waiter>>;

/// Takes notifications on the reading task itself, in order with the responses: returns
/// `true` when it consumed the notification (`method`, `params`).
pub type NotificationHook = Arc<dyn Fn(&str, &Value) -> bool + Send + Sync>;

/// Takes every request and notification on the reading task itself, in the order they were
/// read and before any later response completes its request; gets the peer that read it (to
/// answer). Returns the message when it did not consume it (it then goes to the [`Incoming`]
/// channel).
pub type Hook = Arc<dyn Fn(&Peer, Incoming) -> Option<Incoming> + Send + Sync>;

/// How a [`Peer`] reads and answers; `Default` is [`Peer::start`]'s behaviour.
#[derive(Clone, Default)]
pub struct PeerOptions {
    /// Offered every request and notification first (see [`Hook`]).
    pub hook: Option<Hook>,
    /// Never answer an unreadable line (not UTF-8, not JSON, too long, of no known form): log
    /// the first and then at most one summary every [`QUIET_LOG_EVERY`]. For the side that
    /// faces an agent process, whose stray output must not start an exchange of errors.
    pub quiet: bool,
    /// Awaited before each line is read: a reader that forwards what it reads waits for the
    /// side it forwards to (backpressure), e.g. [`Peer::writable`] of that side.
    pub pace: Option<Pace>,
}

impl PeerOptions {
    /// Notifications offered to `hook` first, on the reading task: what it consumes is
    /// handled before any later response completes its request.
    pub fn notification_hook(hook: NotificationHook) -> Self {
        let hook: Hook = Arc::new(move |_: &Peer, msg: Incoming| match &msg {
            Incoming::Notification { method, params } if hook(method, params) => None,
            _ => Some(msg),
        });
        PeerOptions {
            hook: Some(hook),
            ..PeerOptions::default()
        }
    }
}

/// What a reading peer awaits before each line ([`PeerOptions::pace`]).
pub type Pace = Arc<dyn Fn() -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// Bytes queued for output above which [`Peer::writable`] waits.
pub const HIGH_WATER: usize = 4 * 1024 * 1024;

/// How often a quiet peer logs a summary of the unreadable lines it skipped.
pub const QUIET_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

struct Inner {
    out: mpsc::UnboundedSender<Out>,
    pending: Pending,
    next_id: AtomicU64,
    closed: CancellationToken,
    /// How much output waits for the writer (shared with it).
    flow: Arc<Flow>,
}

/// Output waiting for the writer task: the writer holds this, not the peer, so that it ends
/// when the last peer is dropped.
#[derive(Default)]
struct Flow {
    /// Bytes handed to the writer and not yet written.
    queued: std::sync::atomic::AtomicUsize,
    /// Signalled by the writer when `queued` falls below [`HIGH_WATER`].
    drained: tokio::sync::Notify,
}

/// One side of a JSON-RPC connection. Cheap to clone.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<Inner>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("closed", &self.inner.closed.is_cancelled())
            .finish()
    }
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Peer {
    /// Starts the reader and writer tasks; returns the peer and the channel of requests and
    /// notifications from the other side (it ends when the other side closes its output).
    pub fn start<R, W>(reader: R, writer: W) -> (Peer, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with(reader, writer, PeerOptions::default())
    }

    /// Starts the reader and writer tasks with `options`; see [`Peer::start`].
    pub fn start_with<R, W>(reader: R, writer: W, options: PeerOptions) -> (Peer, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Out>();
        let (in_tx, in_rx) = mpsc::unbounded_channel::<Incoming>();
        let inner = Arc::new(Inner {
            out: out_tx,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: CancellationToken::new(),
            flow: Arc::default(),
        });
        let flow = inner.flow.clone();
        let peer = Peer { inner };
        tokio::spawn(lines::write_lines(writer, out_rx, flow));
        let reading = peer.clone();
        tokio::spawn(lines::read_lines(reading, reader, in_tx, options));
        (peer, in_rx)
    }

    /// Reads one line: a request or notification goes to `incoming` (or the hook), a response
    /// completes its pending request. A line that is not JSON is answered with a parse error and
    /// a message of no known form with an invalid request; a response is never answered, so two
    /// peers cannot trade errors forever.
    fn dispatch(
        &self,
        text: &str,
        incoming: &mpsc::UnboundedSender<Incoming>,
        hook: Option<&Hook>,
        quiet: Option<&mut BadLines>,
    ) {
        let msg = match (serde_json::from_str::<WireIn>(text), quiet) {
            (Ok(msg), _) => msg,
            (Err(e), Some(bad)) => {
                bad.note(if e.is_syntax() || e.is_eof() {
                    "not JSON"
                } else {
                    "of no known form"
                });
                return;
            }
            (Err(e), None) if e.is_syntax() || e.is_eof() => {
                tracing::warn!(error = %e, "json-rpc line is not JSON");
                self.respond_error(Value::Null, RpcError::new(codes::PARSE_ERROR, "Parse error"));
                return;
            }
            (Err(e), None) => {
                tracing::warn!(error = %e, "json-rpc message of no known form");
                self.respond_error(Value::Null, RpcError::new(codes::INVALID_REQUEST, "Invalid Request"));
                return;
            }
        };
        let offer = |m: Incoming| {
            let unconsumed = match hook {
                Some(h) => h(self, m),
                None => Some(m),
            };
            if let Some(m) = unconsumed {
                let _ = incoming.send(m);
            }
        };
        match (msg.method, msg.id) {
            (Some(method), Some(id)) if !id.is_null() => offer(Incoming::Request {
                id,
                method,
                params: msg.params,
            }),
            (Some(method), _) => offer(Incoming::Notification {
                method,
                params: msg.params,
            }),
            (None, Some(id)) => {
                let waiter = self.inner.pending.lock().remove(&id_key(&id));
                let outcome = match msg.error {
                    Some(e) => Err(e),
                    None => Ok(msg.result),
                };
                match (waiter, outcome) {
                    (Some(waiter), outcome) => waiter(outcome),
                    (None, Err(e)) => tracing::debug!(id = %id, error = %e, "error response to no pending request"),
                    (None, Ok(_)) => tracing::debug!(id = %id, "response to no pending request"),
                }
            }
            (None, None) if msg.error.is_some() => {
                tracing::debug!(error = ?msg.error, "error response without an id");
            }
            (None, None) => {
                self.respond_error(Value::Null, RpcError::new(codes::INVALID_REQUEST, "Invalid Request"));
            }
        }
    }

    fn write(&self, message: &WireOut<'_>) -> bool {
        self.queue(message.line())
    }

    fn queue(&self, line: String) -> bool {
        let flow = &self.inner.flow;
        flow.queued.fetch_add(line.len(), Ordering::SeqCst);
        let len = line.len();
        let sent = self.inner.out.send(Out::Line(line)).is_ok();
        if !sent {
            flow.queued.fetch_sub(len, Ordering::SeqCst);
        }
        sent
    }

    /// Waits until fewer than [`HIGH_WATER`] bytes are queued for output (at once when the
    /// output is closed: nothing will drain then).
    pub async fn writable(&self) {
        loop {
            let flow = &self.inner.flow;
            let drained = flow.drained.notified();
            if flow.queued.load(Ordering::SeqCst) < HIGH_WATER || self.inner.out.is_closed() {
                return;
            }
            tokio::select! {
                _ = drained => {}
                // the writer may have stopped (output closed) with the queue still full
                _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
            }
        }
    }

    /// Sends one message as is (a line of JSON). `false` once the output is closed.
    pub fn send(&self, message: Value) -> bool {
        let mut line = message.to_string();
        line.push('\n');
        self.queue(line)
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> bool {
        self.write(&WireOut {
            method: Some(method),
            params: Some(&params),
            ..WireOut::EMPTY
        })
    }

    /// Answers request `id` with `result`.
    pub fn respond(&self, id: Value, result: Value) -> bool {
        self.write(&WireOut {
            id: Some(&id),
            result: Some(&result),
            ..WireOut::EMPTY
        })
    }

    /// Answers request `id` with an error.
    pub fn respond_error(&self, id: Value, error: RpcError) -> bool {
        self.write(&WireOut {
            id: Some(&id),
            error: Some(&error),
            ..WireOut::EMPTY
        })
    }

    /// Sends a request; returns its id (`null` when the connection is closed) and a future of
    /// its outcome.
    pub fn request(
        &self,
        method: &str,
        params: Value,
    ) -> (
        Value,
        impl std::future::Future<Output = Result<Value, RpcError>> + Send + 'static,
    ) {
        let (tx, rx) = oneshot::channel();
        let id = self.request_then(method, params, move |outcome| {
            let _ = tx.send(outcome);
        });
        // not sent: the handler (and `tx` with it) is dropped, and the future says so
        let fut = async move {
            rx.await
                .unwrap_or_else(|_| Err(RpcError::new(codes::INTERNAL_ERROR, "the connection is closed")))
        };
        (id.unwrap_or(Value::Null), fut)
    }

    /// Sends a request whose answer goes to `then`, run on the reading task in the order the
    /// answer was read among the other messages (so a relay forwards answers and notifications
    /// in the order they came). Returns the request's id, or `None` — `then` not called — when
    /// the connection is closed.
    pub fn request_then(
        &self,
        method: &str,
        params: Value,
        then: impl FnOnce(Result<Value, RpcError>) + Send + 'static,
    ) -> Option<Value> {
        if self.inner.closed.is_cancelled() {
            return None;
        }
        let id = Value::from(self.inner.next_id.fetch_add(1, Ordering::SeqCst));
        self.inner.pending.lock().insert(id_key(&id), Box::new(then));
        // closed meanwhile: the reader may have answered the pending requests before this
        // one was added; whoever takes it back from the map answers it
        let sent = !self.inner.closed.is_cancelled()
            && self.write(&WireOut {
                id: Some(&id),
                method: Some(method),
                params: Some(&params),
                ..WireOut::EMPTY
            });
        if !sent && self.inner.pending.lock().remove(&id_key(&id)).is_some() {
            return None;
        }
        Some(id)
    }

    /// Sends a request and waits for its outcome.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.request(method, params).1.await
    }

    /// Fires when the other side closed its output (end of input).
    pub fn closed(&self) -> CancellationToken {
        self.inner.closed.clone()
    }

    /// Writes everything queued so far, then closes the output.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.inner.out.send(Out::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::acp::message::MAX_LINE;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A peer whose other side is the test: returns what to write to it, its output lines
    /// and its incoming channel.
    fn peer() -> (
        tokio::io::DuplexStream,
        tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
        mpsc::UnboundedReceiver<Incoming>,
    ) {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_out) = tokio::io::duplex(1 << 16);
        let (_peer, incoming) = Peer::start(theirs_in, theirs_out);
        (ours, BufReader::new(ours_out).lines(), incoming)
    }

    async fn next_json(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
        let line = lines.next_line().await.unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    #[tokio::test]
    async fn a_bad_line_is_answered_and_the_next_one_is_read() {
        let (mut input, mut out, mut incoming) = peer();
        input.write_all(b"\xff\xfe not utf-8\n").await.unwrap();
        input.write_all(b"not json\n").await.unwrap();
        input.write_all(b"[1]\n").await.unwrap();
        let long = vec![b' '; MAX_LINE + 10];
        input.write_all(&long).await.unwrap();
        input
            .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"params\":{\"a\":1}}\n")
            .await
            .unwrap();
        for code in [
            codes::PARSE_ERROR,
            codes::PARSE_ERROR,
            codes::INVALID_REQUEST,
            codes::INVALID_REQUEST,
        ] {
            let answer = next_json(&mut out).await;
            assert_eq!(answer["error"]["code"], code, "{answer}");
            assert_eq!(answer["id"], Value::Null);
        }
        match incoming.recv().await.unwrap() {
            Incoming::Request { id, method, params } => {
                assert_eq!(
                    (id, method.as_str(), params),
                    (Value::from(7), "m", serde_json::json!({"a": 1}))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_response_is_never_answered() {
        let (mut input, mut out, mut incoming) = peer();
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n")
            .await
            .unwrap();
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n")
            .await
            .unwrap();
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n")
            .await
            .unwrap();
        match incoming.recv().await.unwrap() {
            Incoming::Notification { method, params } => assert_eq!((method.as_str(), params), ("n", Value::Null)),
            other => panic!("{other:?}"),
        }
        drop(input);
        assert!(
            out.next_line().await.unwrap().is_none(),
            "the peer wrote an answer to a response"
        );
    }
}
