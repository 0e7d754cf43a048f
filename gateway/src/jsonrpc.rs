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

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;

/// Longest accepted line (one JSON-RPC message), in bytes.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC error codes used by the ACP binding.
pub mod codes {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: authentication required.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: resource (session) not found.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// ACP: the request was cancelled (`$/cancel_request`).
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// Error code.
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Optional data.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error as a JSON-RPC `error` member.
    pub fn to_value(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            v["data"] = d.clone();
        }
        v
    }

    fn from_value(v: &Value) -> Self {
        RpcError {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(codes::INTERNAL_ERROR),
            message: v.get("message").and_then(Value::as_str).unwrap_or("error").to_string(),
            data: v.get("data").cloned(),
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A message from the other side that is not a response.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A request: answer it with [`Peer::respond`] or [`Peer::respond_error`].
    Request {
        /// Its id.
        id: Value,
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
}

enum Out {
    Message(Value),
    Close(oneshot::Sender<()>),
}

type Pending = Mutex<HashMap<String, oneshot::Sender<Result<Value, RpcError>>>>;

/// Takes notifications on the reading task itself, in order with the responses: returns
/// `true` when it consumed the notification (`method`, `params`).
pub type NotificationHook = Arc<dyn Fn(&str, &Value) -> bool + Send + Sync>;

struct Inner {
    out: mpsc::UnboundedSender<Out>,
    pending: Pending,
    next_id: AtomicU64,
    closed: CancellationToken,
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
        Self::start_with_hook(reader, writer, None)
    }

    /// Like [`Peer::start`], with notifications offered to `hook` first, on the reading task:
    /// what it consumes is handled before any later response completes its request.
    pub fn start_with_hook<R, W>(
        reader: R,
        writer: W,
        hook: Option<NotificationHook>,
    ) -> (Peer, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Out>();
        let (in_tx, in_rx) = mpsc::unbounded_channel::<Incoming>();
        let inner = Arc::new(Inner {
            out: out_tx,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: CancellationToken::new(),
        });
        let peer = Peer { inner };
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(out) = out_rx.recv().await {
                match out {
                    Out::Message(v) => {
                        let mut line = v.to_string();
                        line.push('\n');
                        if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
                            tracing::debug!("json-rpc output closed");
                            break;
                        }
                    }
                    Out::Close(done) => {
                        let _ = writer.flush().await;
                        let _ = writer.shutdown().await;
                        let _ = done.send(());
                        break;
                    }
                }
            }
        });
        let reading = peer.clone();
        tokio::spawn(async move {
            let mut lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE));
            while let Some(line) = lines.next().await {
                let line = match line {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %e, "json-rpc input unreadable: closing");
                        break;
                    }
                };
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(text) {
                    Ok(msg) => reading.dispatch(msg, &in_tx, hook.as_ref()),
                    Err(e) => {
                        tracing::warn!(error = %e, "json-rpc line is not JSON");
                        reading.respond_error(Value::Null, RpcError::new(codes::PARSE_ERROR, "Parse error"));
                    }
                }
            }
            reading.inner.closed.cancel();
            let pending: Vec<_> = reading.inner.pending.lock().drain().collect();
            for (_, tx) in pending {
                let _ = tx.send(Err(RpcError::new(codes::INTERNAL_ERROR, "the connection closed")));
            }
        });
        (peer, in_rx)
    }

    fn dispatch(&self, msg: Value, incoming: &mpsc::UnboundedSender<Incoming>, hook: Option<&NotificationHook>) {
        let Value::Object(m) = msg else {
            self.respond_error(Value::Null, RpcError::new(codes::INVALID_REQUEST, "Invalid Request"));
            return;
        };
        let params = m.get("params").cloned().unwrap_or(Value::Null);
        match (m.get("method").and_then(Value::as_str), m.get("id")) {
            (Some(method), Some(id)) if !id.is_null() => {
                let _ = incoming.send(Incoming::Request {
                    id: id.clone(),
                    method: method.to_string(),
                    params,
                });
            }
            (Some(method), _) => {
                if hook.is_some_and(|h| h(method, &params)) {
                    return;
                }
                let _ = incoming.send(Incoming::Notification {
                    method: method.to_string(),
                    params,
                });
            }
            (None, Some(id)) => {
                let waiter = self.inner.pending.lock().remove(&id_key(id));
                let outcome = match m.get("error") {
                    Some(e) => Err(RpcError::from_value(e)),
                    None => Ok(m.get("result").cloned().unwrap_or(Value::Null)),
                };
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(outcome);
                    }
                    None => tracing::debug!(id = %id, "response to no pending request"),
                }
            }
            (None, None) => {
                self.respond_error(Value::Null, RpcError::new(codes::INVALID_REQUEST, "Invalid Request"));
            }
        }
    }

    /// Sends one message as is (a line of JSON). `false` once the output is closed.
    pub fn send(&self, message: Value) -> bool {
        self.inner.out.send(Out::Message(message)).is_ok()
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> bool {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Answers request `id` with `result`.
    pub fn respond(&self, id: Value, result: Value) -> bool {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// Answers request `id` with an error.
    pub fn respond_error(&self, id: Value, error: RpcError) -> bool {
        self.send(json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}))
    }

    /// Sends a request; returns its id and a future of its outcome.
    pub fn request(
        &self,
        method: &str,
        params: Value,
    ) -> (
        Value,
        impl std::future::Future<Output = Result<Value, RpcError>> + Send + 'static,
    ) {
        let id = Value::from(self.inner.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(id_key(&id), tx);
        let sent = !self.inner.closed.is_cancelled()
            && self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let fut = async move {
            if !sent {
                return Err(RpcError::new(codes::INTERNAL_ERROR, "the connection is closed"));
            }
            rx.await
                .unwrap_or_else(|_| Err(RpcError::new(codes::INTERNAL_ERROR, "the connection closed")))
        };
        (id, fut)
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
