//! The transparent ACP hop: `e2a acp --agent acp:CMD` between an editor and an ACP agent
//! program, invisible to both.
//!
//! - Every request and notification of the editor goes to the agent with its params as sent
//!   (`initialize`, `authenticate`, every `session/*` method, `_`-prefixed extension methods);
//!   the agent's result or error goes back under the editor's id. Each passes through an E2A
//!   envelope on the way (E2A §2: `method` is the ACP method;
//!   [`e2a::acp::envelope_from_jsonrpc`] then [`e2a::acp::envelope_to_jsonrpc_call`]), which
//!   is what the gateway logs.
//! - Every request of the agent (`session/request_permission`, `fs/*`, `terminal/*`,
//!   `elicitation/create`, extensions) goes to the editor and its answer back; every
//!   notification (`session/update` of every kind) reaches the editor in the order the agent
//!   sent it, before the response that follows it.
//! - Each side keeps its own ids: the relay numbers what it sends and maps the answers back, so
//!   concurrent requests in both directions never collide. `$/cancel_request` is mapped to the
//!   other side's id and forwarded; `session/cancel` is forwarded as is.
//! - What the agent sends the editor is redacted ([`e2a::redact::redact_outbound`]).
//! - An agent that exits fails the requests it had not answered with a JSON-RPC error; the
//!   next request starts it again (with the editor's `initialize` re-sent first).
//! - Reading each side waits while the other side's output queue is full, so a fast agent
//!   in front of a slow editor is paused, not buffered without bound.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use e2a::acp::{envelope_from_jsonrpc, envelope_to_jsonrpc_call, jsonrpc_id_from_value, JsonRpcIngress};
use e2a::types::{AcpClientToAgentMethod as Method, AcpMethodBeyondReference as Beyond};

use crate::backends::AcpProcessConfig;
use crate::jsonrpc::{codes, Hook, Incoming, Peer, PeerOptions, RpcError};

/// The JSON-RPC notification that cancels one request (`$/cancel_request`).
fn cancel_request() -> &'static str {
    Beyond::CancelRequest.as_str()
}

/// A transparent ACP hop to an agent program (see the module docs).
#[derive(Debug)]
pub struct AcpRelay {
    config: AcpProcessConfig,
}

/// The running agent.
struct Conn {
    peer: Peer,
    child: tokio::process::Child,
    generation: u64,
}

/// What the relay tracks between the two sides.
#[derive(Default)]
struct Ids {
    /// Editor request id (as JSON text) → (agent generation, id the agent got).
    to_agent: HashMap<String, (u64, Value)>,
    /// (agent generation, agent request id as JSON text) → id the editor got.
    to_editor: HashMap<(u64, String), Value>,
}

struct Shared {
    editor: Peer,
    ids: Mutex<Ids>,
}

impl AcpRelay {
    /// A relay that runs the agent `config.command` (started on the editor's first request).
    pub fn new(config: AcpProcessConfig) -> Result<Self, String> {
        if config.command.is_empty() {
            return Err("acp: a command is required (acp:CMD ARGS)".into());
        }
        Ok(AcpRelay { config })
    }

    /// Relays one editor on `reader` / `writer` until the editor closes its output; the agent
    /// is then stopped.
    pub async fn serve<R, W>(self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (editor, mut incoming) = Peer::start(reader, writer);
        let shared = Arc::new(Shared {
            editor: editor.clone(),
            ids: Mutex::default(),
        });
        let mut conn: Option<Conn> = None;
        let mut generation = 0;
        let mut initialize: Option<Value> = None;
        while let Some(msg) = incoming.recv().await {
            match msg {
                Incoming::Request { id, method, params } => {
                    let Some((method, params)) = through_envelope(&method, params, Some(&id)) else {
                        editor.respond_error(id, RpcError::new(codes::INVALID_PARAMS, "params must be an object"));
                        continue;
                    };
                    let is_init = method == Method::Initialize.as_str();
                    if is_init {
                        initialize = Some(params.clone());
                    }
                    let replay = if is_init { None } else { initialize.as_ref() };
                    let peer = match self.connected(&mut conn, &mut generation, &shared, replay).await {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!(error = %e, "ACP agent unavailable");
                            editor.respond_error(id, RpcError::new(codes::INTERNAL_ERROR, e));
                            continue;
                        }
                    };
                    let (agent_id, answer) = peer.request(&method, params);
                    let key = id.to_string();
                    shared.ids.lock().to_agent.insert(key.clone(), (generation, agent_id));
                    let shared = shared.clone();
                    let closed = peer.closed();
                    tokio::spawn(async move {
                        let outcome = answer.await;
                        shared.ids.lock().to_agent.remove(&key);
                        match outcome {
                            Ok(mut result) => {
                                e2a::redact::redact_outbound(&mut result);
                                shared.editor.respond(id, result);
                            }
                            Err(e) if closed.is_cancelled() => {
                                tracing::warn!(method = %method, "the ACP agent exited before answering");
                                let gone = RpcError::new(
                                    codes::INTERNAL_ERROR,
                                    format!("the ACP agent exited before answering {method}; the next request starts it again"),
                                );
                                shared.editor.respond_error(id, RpcError { data: e.data, ..gone });
                            }
                            Err(mut e) => {
                                if let Some(d) = e.data.as_mut() {
                                    e2a::redact::redact_outbound(d);
                                }
                                shared.editor.respond_error(id, e);
                            }
                        }
                    });
                }
                Incoming::Notification { method, params } => {
                    let Some(peer) = conn
                        .as_ref()
                        .filter(|c| !c.peer.closed().is_cancelled())
                        .map(|c| &c.peer)
                    else {
                        tracing::debug!(method = %method, "notification while no agent runs: dropped");
                        continue;
                    };
                    if method == cancel_request() {
                        let key = params.get("requestId").map(Value::to_string).unwrap_or_default();
                        let target = shared.ids.lock().to_agent.get(&key).cloned();
                        match target {
                            Some((g, agent_id)) if g == generation => {
                                peer.notify(cancel_request(), json!({"requestId": agent_id}));
                            }
                            _ => tracing::debug!(request = %key, "$/cancel_request of no forwarded request"),
                        }
                        continue;
                    }
                    match through_envelope(&method, params, None) {
                        Some((method, params)) => {
                            peer.notify(&method, params);
                        }
                        None => {
                            tracing::debug!(method = %method, "notification with params that are not an object: dropped")
                        }
                    }
                }
            }
        }
        tracing::info!("the editor closed the connection: stopping the agent");
        if let Some(mut c) = conn.take() {
            c.peer.close().await;
            // the agent gets a moment to exit on its own after its input closed
            if tokio::time::timeout(std::time::Duration::from_secs(2), c.child.wait())
                .await
                .is_err()
            {
                let _ = c.child.kill().await;
            }
        }
        editor.close().await;
    }

    /// The running agent's peer: a new process when none runs or it exited, initialized with
    /// `initialize` (the editor's own params) when the editor has already initialized one.
    async fn connected(
        &self,
        conn: &mut Option<Conn>,
        generation: &mut u64,
        shared: &Arc<Shared>,
        initialize: Option<&Value>,
    ) -> Result<Peer, String> {
        if let Some(c) = conn.as_mut() {
            if !c.peer.closed().is_cancelled() && matches!(c.child.try_wait(), Ok(None)) {
                return Ok(c.peer.clone());
            }
            tracing::warn!(command = %self.config.command[0], "the ACP agent exited: starting it again");
        }
        *conn = None;
        let (child, stdin, stdout) = self.config.spawn()?;
        *generation += 1;
        let options = PeerOptions {
            hook: Some(agent_hook(shared.clone(), *generation)),
            // stray output of the agent is logged, never answered
            quiet: true,
            // a slow editor pauses the reading of the agent's output
            paced_by: Some(shared.editor.clone()),
        };
        let (peer, mut rest) = Peer::start_with(stdout, stdin, options);
        // the hook takes every request and notification: nothing else arrives here
        tokio::spawn(async move { while rest.recv().await.is_some() {} });
        if let Some(params) = initialize {
            peer.call(Method::Initialize.as_str(), params.clone())
                .await
                .map_err(|e| format!("the restarted ACP agent refused initialize: {e}"))?;
        }
        *conn = Some(Conn {
            peer: peer.clone(),
            child,
            generation: *generation,
        });
        Ok(peer)
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("generation", &self.generation).finish()
    }
}

/// Handles the agent's requests and notifications on its reading task, in order: requests go
/// to the editor (their answers back to the agent), notifications to the editor, redacted.
fn agent_hook(shared: Arc<Shared>, generation: u64) -> Hook {
    Arc::new(move |agent: &Peer, msg: Incoming| {
        match msg {
            Incoming::Notification { method, mut params } => {
                if method == cancel_request() {
                    let key = params.get("requestId").map(Value::to_string).unwrap_or_default();
                    let target = shared.ids.lock().to_editor.get(&(generation, key)).cloned();
                    if let Some(editor_id) = target {
                        shared.editor.notify(cancel_request(), json!({"requestId": editor_id}));
                    }
                    return None;
                }
                e2a::redact::redact_outbound(&mut params);
                shared.editor.notify(&method, params);
            }
            Incoming::Request { id, method, mut params } => {
                e2a::redact::redact_outbound(&mut params);
                let (editor_id, answer) = shared.editor.request(&method, params);
                let key = (generation, id.to_string());
                shared.ids.lock().to_editor.insert(key.clone(), editor_id);
                let (shared, agent) = (shared.clone(), agent.clone());
                tokio::spawn(async move {
                    let outcome = answer.await;
                    shared.ids.lock().to_editor.remove(&key);
                    match outcome {
                        Ok(result) => agent.respond(id, result),
                        Err(e) => agent.respond_error(id, e),
                    };
                });
            }
        }
        None
    })
}

/// An editor message on its way to the agent: read into an E2A envelope (logged), then the
/// JSON-RPC call of that envelope. `None` when `params` is neither an object nor absent.
fn through_envelope(method: &str, params: Value, id: Option<&Value>) -> Option<(String, Value)> {
    let params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return None,
    };
    let session_id = params.get("sessionId").and_then(Value::as_str).map(str::to_string);
    let mut ingress = JsonRpcIngress::new(method, params);
    ingress.jsonrpc_id = id.and_then(jsonrpc_id_from_value);
    ingress.session_id = session_id;
    ingress.channel = Some("acp".into());
    let envelope = envelope_from_jsonrpc(&ingress);
    tracing::debug!(
        method,
        session = envelope.session_id.as_deref().unwrap_or(""),
        "editor → agent"
    );
    let call = envelope_to_jsonrpc_call(&envelope).ok()?;
    Some((
        call.method.unwrap_or_else(|| method.to_string()),
        Value::Object(call.params),
    ))
}
