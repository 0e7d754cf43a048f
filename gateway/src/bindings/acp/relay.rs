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
//! - Order is kept both ways: each side's messages — requests, notifications and answers — are
//!   forwarded on the task that reads them, in the order they were read (an editor's
//!   `session/cancel` and its answer to a pending permission request reach the agent in the
//!   order the editor sent them). Only while the agent is being (re)started do the editor's
//!   messages wait in a queue, which is then forwarded in order.
//! - Reading the agent waits while the editor's output queue is full, so a fast agent in front
//!   of a slow editor is paused, not buffered without bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use e2a::acp::{envelope_from_jsonrpc, envelope_to_jsonrpc_call, jsonrpc_id_from_value, JsonRpcIngress};
use e2a::types::{AcpClientToAgentMethod as Method, AcpMethodBeyondReference as Beyond};

use crate::backends::AcpProcessConfig;
use crate::protocol::acp::{
    cancel_request_params, cancelled_request, codes, Hook, Incoming, Pace, Peer, PeerOptions, RpcError,
};

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
}

/// What the relay tracks between the two sides.
#[derive(Default)]
struct Ids {
    /// Editor request id (as JSON text) → (agent generation, id the agent got).
    to_agent: HashMap<String, (u64, Value)>,
    /// (agent generation, agent request id as JSON text) → id the editor got.
    to_editor: HashMap<(u64, String), Value>,
}

/// What both reading tasks and the restarting loop share.
struct Shared {
    editor: OnceLock<Peer>,
    ids: Mutex<Ids>,
    /// The running, initialized agent and its generation (`None` while none runs).
    agent: Mutex<Option<(Peer, u64)>>,
    /// Editor messages handed to the restarting loop and not forwarded yet: while there are
    /// any, later ones queue behind them.
    queued: AtomicUsize,
    generation: AtomicU64,
}

impl Shared {
    fn editor(&self) -> Option<&Peer> {
        self.editor.get()
    }

    /// The agent when it runs.
    fn live_agent(&self) -> Option<(Peer, u64)> {
        self.agent
            .lock()
            .as_ref()
            .filter(|(p, _)| !p.closed().is_cancelled())
            .cloned()
    }

    /// Forwards one editor message to `agent` (of `generation`).
    fn forward(self: &Arc<Self>, msg: Incoming, agent: &Peer, generation: u64) {
        let Some(editor) = self.editor() else { return };
        match msg {
            Incoming::Request { id, method, params } => {
                let Some((method, params)) = through_envelope(&method, params, Some(&id)) else {
                    editor.respond_error(id, RpcError::new(codes::INVALID_PARAMS, "params must be an object"));
                    return;
                };
                let key = id.to_string();
                let (shared, closed) = (self.clone(), agent.closed());
                let answered_key = key.clone();
                let editor_id = id.clone();
                let answered_method = method.clone();
                let mut ids = self.ids.lock();
                let then = move |outcome: Result<Value, RpcError>| {
                    shared.ids.lock().to_agent.remove(&answered_key);
                    let Some(editor) = shared.editor() else { return };
                    match outcome {
                        Ok(mut result) => {
                            e2a::redact::redact_outbound(&mut result);
                            editor.respond(editor_id, result);
                        }
                        Err(e) if closed.is_cancelled() => {
                            tracing::warn!(method = %answered_method, "the ACP agent exited before answering");
                            let gone = format!(
                                "the ACP agent exited before answering {answered_method}; the next request starts it again"
                            );
                            editor.respond_error(
                                editor_id,
                                RpcError {
                                    data: e.data,
                                    ..RpcError::new(codes::INTERNAL_ERROR, gone)
                                },
                            );
                        }
                        Err(mut e) => {
                            if let Some(d) = e.data.as_mut() {
                                e2a::redact::redact_outbound(d);
                            }
                            editor.respond_error(editor_id, e);
                        }
                    }
                };
                match agent.request_then(&method, params, then) {
                    Some(agent_id) => {
                        ids.to_agent.insert(key, (generation, agent_id));
                    }
                    None => {
                        drop(ids);
                        editor.respond_error(id, RpcError::new(codes::INTERNAL_ERROR, "the ACP agent exited"));
                    }
                }
            }
            Incoming::Notification { method, params } => {
                if method == cancel_request() {
                    let key = cancelled_request(&params).map(|id| id.to_string()).unwrap_or_default();
                    let target = self.ids.lock().to_agent.get(&key).cloned();
                    match target {
                        Some((g, agent_id)) if g == generation => {
                            agent.notify(cancel_request(), cancel_request_params(agent_id));
                        }
                        _ => tracing::debug!(request = %key, "$/cancel_request of no forwarded request"),
                    }
                    return;
                }
                match through_envelope(&method, params, None) {
                    Some((method, params)) => {
                        agent.notify(&method, params);
                    }
                    None => {
                        tracing::debug!(method = %method, "notification with params that are not an object: dropped")
                    }
                }
            }
        }
    }
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
        let shared = Arc::new(Shared {
            editor: OnceLock::new(),
            ids: Mutex::default(),
            agent: Mutex::new(None),
            queued: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
        });
        let options = PeerOptions {
            hook: Some(editor_hook(shared.clone())),
            ..PeerOptions::default()
        };
        let (editor, mut incoming) = Peer::start_with(reader, writer, options);
        let _ = shared.editor.set(editor.clone());
        let mut conn: Option<Conn> = None;
        let mut initialize: Option<Value> = None;
        // what the editor hook could not forward: no agent runs (yet, or any more)
        while let Some(msg) = incoming.recv().await {
            if let Incoming::Request { method, params, .. } = &msg {
                if method == Method::Initialize.as_str() {
                    initialize = Some(params.clone());
                }
            }
            let is_init = matches!(&msg, Incoming::Request { method, .. } if method == Method::Initialize.as_str());
            let replay = if is_init { None } else { initialize.as_ref() };
            match (&msg, self.connected(&mut conn, &shared, replay).await) {
                (_, Ok((peer, generation))) => shared.forward(msg, &peer, generation),
                (Incoming::Request { id, .. }, Err(e)) => {
                    tracing::warn!(error = %e, "ACP agent unavailable");
                    editor.respond_error(id.clone(), RpcError::new(codes::INTERNAL_ERROR, e));
                }
                (Incoming::Notification { method, .. }, Err(_)) => {
                    tracing::debug!(method = %method, "notification while no agent runs: dropped");
                }
            }
            shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
        tracing::info!("the editor closed the connection: stopping the agent");
        *shared.agent.lock() = None;
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

    /// The running agent: a new process when none runs or it exited, initialized with
    /// `initialize` (the editor's own params) when the editor has already initialized one.
    async fn connected(
        &self,
        conn: &mut Option<Conn>,
        shared: &Arc<Shared>,
        initialize: Option<&Value>,
    ) -> Result<(Peer, u64), String> {
        if let Some(c) = conn.as_mut() {
            if !c.peer.closed().is_cancelled() && matches!(c.child.try_wait(), Ok(None)) {
                let generation = shared.generation.load(Ordering::SeqCst);
                return Ok((c.peer.clone(), generation));
            }
            tracing::warn!(command = %self.config.command[0], "the ACP agent exited: starting it again");
        }
        *conn = None;
        *shared.agent.lock() = None;
        let (child, stdin, stdout) = self.config.spawn()?;
        let generation = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let options = PeerOptions {
            hook: Some(agent_hook(shared.clone(), generation)),
            // stray output of the agent is logged, never answered
            quiet: true,
            // a slow editor pauses the reading of the agent's output
            pace: shared.editor().cloned().map(|editor| -> Pace {
                Arc::new(move || {
                    let editor = editor.clone();
                    Box::pin(async move { editor.writable().await })
                })
            }),
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
        });
        *shared.agent.lock() = Some((peer.clone(), generation));
        Ok((peer, generation))
    }
}

/// Forwards the editor's messages on its reading task, in order, while an agent runs and no
/// earlier message waits in the restarting loop's queue; hands them to that loop otherwise.
fn editor_hook(shared: Arc<Shared>) -> Hook {
    Arc::new(move |_: &Peer, msg: Incoming| {
        if shared.queued.load(Ordering::SeqCst) == 0 {
            if let Some((agent, generation)) = shared.live_agent() {
                shared.forward(msg, &agent, generation);
                return None;
            }
        }
        shared.queued.fetch_add(1, Ordering::SeqCst);
        Some(msg)
    })
}

/// Forwards the agent's requests and notifications on its reading task, in order, redacted:
/// requests go to the editor (their answers back to the agent, in the editor's order),
/// notifications to the editor.
fn agent_hook(shared: Arc<Shared>, generation: u64) -> Hook {
    Arc::new(move |agent: &Peer, msg: Incoming| {
        let editor = shared.editor()?;
        match msg {
            Incoming::Notification { method, mut params } => {
                if method == cancel_request() {
                    let key = cancelled_request(&params).map(|id| id.to_string()).unwrap_or_default();
                    let target = shared.ids.lock().to_editor.get(&(generation, key)).cloned();
                    if let Some(editor_id) = target {
                        editor.notify(cancel_request(), cancel_request_params(editor_id));
                    }
                    return None;
                }
                e2a::redact::redact_outbound(&mut params);
                editor.notify(&method, params);
            }
            Incoming::Request { id, method, mut params } => {
                e2a::redact::redact_outbound(&mut params);
                let key = (generation, id.to_string());
                let (answered, agent_answers, agent_id) = (shared.clone(), agent.clone(), id.clone());
                let answered_key = key.clone();
                let mut ids = shared.ids.lock();
                let then = move |outcome: Result<Value, RpcError>| {
                    answered.ids.lock().to_editor.remove(&answered_key);
                    match outcome {
                        Ok(result) => agent_answers.respond(agent_id, result),
                        Err(e) => agent_answers.respond_error(agent_id, e),
                    };
                };
                match editor.request_then(&method, params, then) {
                    Some(editor_id) => {
                        ids.to_editor.insert(key, editor_id);
                    }
                    None => {
                        drop(ids);
                        agent.respond_error(id, RpcError::new(codes::INTERNAL_ERROR, "the editor is gone"));
                    }
                }
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
