//! An ACP agent program as a gateway agent (`--agent acp:CMD ARGS`): the gateway spawns it
//! and speaks to it as an ACP client.
//!
//! - An E2A request is a turn of an ACP session: requests with the same `session_id` (else
//!   `context_id`, else `task_id`) share one ACP session; one turn at a time per session. A
//!   request without any of them gets a session of its own.
//! - `session/update` notifications become E2A frames: text and thought chunks become
//!   `e2a.chunk` text / reasoning, tool calls and finished tool-call updates become the tool
//!   chunk bodies the projectors read (a result is the update's `rawOutput`, else the text of
//!   its content when that is only text), every other update travels as `acp.session_update`
//!   (which the ACP projector forwards unchanged). The `session/prompt` response completes the
//!   run (`stopReason` in the result).
//! - Cancelling the run (client gone, deadline, ACP `session/cancel` at the front) sends
//!   `session/cancel`; the turn keeps its session locked until the agent has answered.
//! - An agent that exits ends its running turns with an `e2a.error` final frame and is
//!   started again on the next request.
//! - A run that does not keep up holds the agent back: past [`MAX_BACKLOG`](routing::MAX_BACKLOG) updates waiting
//!   for their runs, the agent's output is not read until they are taken.
//! - `session/request_permission` follows a [`PermissionPolicy`]: denied unless allowed by
//!   the `approve` list, every decision logged. `fs/*` and `terminal/*` client methods are
//!   declined unless enabled.

mod client_side;
mod config;
mod routing;
mod workspace;

pub use config::{AcpProcessConfig, PermissionPolicy, AGENT_ENV, AGENT_ENV_PREFIXES};

use std::collections::HashMap;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{AcpClientToAgentMethod as Method, AcpNotificationName};
use e2a::E2AEnvelope;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext};
use crate::backends::request_text;
use crate::pipeline::boundary::details;
use crate::protocol::acp::{Peer, PeerOptions, RpcError};
use client_side::serve_client_side;
use routing::{Backlog, Counted, Routes};
use workspace::SessionDirs;

struct Conn {
    child: tokio::process::Child,
}

#[derive(Default)]
struct State {
    conn: Option<Arc<tokio::sync::Mutex<Conn>>>,
    peer: Option<Peer>,
    routes: Option<Routes>,
    generation: u64,
    /// E2A session key (scoped by the caller) → (ACP session id, generation of the process
    /// that made it, its working directory when not the default).
    sessions: HashMap<ConversationKey, (String, u64, Option<std::path::PathBuf>)>,
    /// The working directories of the sessions not in the default one.
    dirs: SessionDirs,
    turns: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
}

/// An ACP agent program behind the gateway (see the module docs).
#[derive(Clone)]
pub struct AcpProcessAgent {
    config: Arc<AcpProcessConfig>,
    state: Arc<tokio::sync::Mutex<State>>,
}

impl std::fmt::Debug for AcpProcessAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpProcessAgent")
            .field("command", &self.config.command.first())
            .finish()
    }
}

enum Event {
    Update(Counted),
    Done(Result<Value, RpcError>),
}

impl AcpProcessAgent {
    /// A backend agent (started on the first request).
    pub fn new(config: AcpProcessConfig) -> Result<Self, String> {
        if config.command.is_empty() {
            return Err("acp: a command is required (acp:CMD ARGS)".into());
        }
        Ok(AcpProcessAgent {
            config: Arc::new(config),
            state: Arc::default(),
        })
    }

    /// The running connection, started (and initialized) when there is none or it died.
    async fn connect(&self, state: &mut State) -> Result<(Peer, Routes, u64), String> {
        if let (Some(conn), Some(peer), Some(routes)) = (&state.conn, &state.peer, &state.routes) {
            let alive = {
                let mut c = conn.lock().await;
                !peer.closed().is_cancelled() && matches!(c.child.try_wait(), Ok(None))
            };
            if alive {
                return Ok((peer.clone(), routes.clone(), state.generation));
            }
            tracing::warn!(agent = %self.name(), "ACP agent exited: restarting");
        }
        let (child, stdin, stdout) = self.config.spawn()?;
        let routes: Routes = Arc::default();
        let backlog: Arc<Backlog> = Arc::default();
        // session/updates are routed on the reading task; the agent's stray output is logged,
        // never answered (no exchange of errors); its output is read while its runs keep up
        let hook = routing::update_router(routes.clone(), backlog.clone());
        let pace = routing::paced_by(backlog);
        let options = PeerOptions {
            hook: Some(hook),
            quiet: true,
            pace: Some(pace),
        };
        let (peer, incoming) = Peer::start_with(stdout, stdin, options);
        tokio::spawn(serve_client_side(
            peer.clone(),
            incoming,
            self.config.clone(),
            state.dirs.clone(),
        ));
        let fs = acp::FileSystemCapabilities::new()
            .read_text_file(self.config.allow_fs)
            .write_text_file(self.config.allow_fs);
        let init = acp::InitializeRequest::new(agent_client_protocol_schema::ProtocolVersion::V1)
            .client_capabilities(acp::ClientCapabilities::new().fs(fs).terminal(false))
            .client_info(acp::Implementation::new("e2a-gateway", env!("CARGO_PKG_VERSION")).title("E2A gateway"));
        let init: acp::InitializeResponse = call(&peer, Method::Initialize, init).await?;
        let version = serde_json::to_value(init.protocol_version).unwrap_or_default();
        if version != crate::protocol::acp::PROTOCOL_VERSION {
            return Err(format!("the ACP agent speaks protocol version {version}, not 1"));
        }
        state.generation += 1;
        state.conn = Some(Arc::new(tokio::sync::Mutex::new(Conn { child })));
        state.peer = Some(peer.clone());
        state.routes = Some(routes.clone());
        Ok((peer, routes, state.generation))
    }

    /// The ACP session of an E2A request, working in `cwd` (`None`: the default directory), and
    /// its turn lock (a new session when needed: the first turn of a conversation, or one in
    /// another directory).
    async fn session(
        &self,
        key: Option<ConversationKey>,
        cwd: Option<std::path::PathBuf>,
    ) -> Result<(Peer, Routes, String, Arc<tokio::sync::Mutex<()>>), String> {
        let mut state = self.state.lock().await;
        let (peer, routes, generation) = self.connect(&mut state).await?;
        if let Some(k) = &key {
            if let Some((sid, g, dir)) = state.sessions.get(k) {
                if *g == generation && *dir == cwd {
                    let sid = sid.clone();
                    let lock = state.turns.entry(sid.clone()).or_default().clone();
                    return Ok((peer, routes, sid, lock));
                }
            }
        }
        let dir = cwd.clone().unwrap_or_else(|| self.config.session_cwd());
        let new = acp::NewSessionRequest::new(dir.display().to_string());
        let created: acp::NewSessionResponse = call(&peer, Method::SessionNew, new).await?;
        let sid = created.session_id.0.to_string();
        if let Some(dir) = &cwd {
            state.dirs.lock().insert(sid.clone(), dir.clone());
        }
        if let Some(k) = key {
            state.sessions.insert(k, (sid.clone(), generation, cwd));
        }
        let lock = state.turns.entry(sid.clone()).or_default().clone();
        Ok((peer, routes, sid, lock))
    }
}

fn session_key(request: &E2AEnvelope) -> Option<String> {
    [&request.session_id, &request.context_id, &request.task_id]
        .into_iter()
        .find_map(|v| v.clone().filter(|s| !s.is_empty()))
}

/// The `session/prompt` request of a turn: the E2A request's prompt blocks as they came (an
/// ACP client's), else its text as one text block; the trace in `_meta`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Prompt {
    session_id: String,
    prompt: Value,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Map<String, Value>>,
}

impl Prompt {
    fn of(sid: &str, request: &E2AEnvelope) -> Value {
        let prompt = match request.params.get("prompt") {
            Some(Value::Array(blocks)) if !blocks.is_empty() => Value::Array(blocks.clone()),
            _ => serde_json::to_value(vec![acp::ContentBlock::from(request_text(request))]).unwrap_or_default(),
        };
        // the trace goes on to the agent, in _meta
        let meta = request.correlation_id.as_deref().map(|cid| {
            crate::web::trace::outgoing(cid)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.into()))
                .collect()
        });
        let prompt = Prompt {
            session_id: sid.to_string(),
            prompt,
            meta,
        };
        serde_json::to_value(prompt).unwrap_or_default()
    }
}

/// `request` sent as `method`, its answer read as `T` (30 s to answer).
async fn call<T: serde::de::DeserializeOwned>(
    peer: &Peer,
    method: Method,
    request: impl serde::Serialize,
) -> Result<T, String> {
    let name = method.as_str();
    let params = serde_json::to_value(request).map_err(|e| format!("{name}: {e}"))?;
    let answer = tokio::time::timeout(std::time::Duration::from_secs(30), peer.call(name, params))
        .await
        .map_err(|_| format!("the ACP agent did not answer {name}"))?
        .map_err(|e| format!("the ACP agent refused {name}: {e}"))?;
    serde_json::from_value(answer).map_err(|e| format!("the ACP agent's answer to {name} is not ACP: {e}"))
}

/// The `stopReason` of a `session/prompt` result (`end_turn` when it names none).
fn stop_reason(result: Value) -> String {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Stopped {
        stop_reason: String,
    }
    serde_json::from_value::<Stopped>(result).map_or_else(|_| "end_turn".into(), |r| r.stop_reason)
}

impl Agent for AcpProcessAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            let mut s = ResponseStream::for_request(&request);
            let agent_error = ErrorKind::AgentError.mapping().e2a_code;
            let cwd = workspace::prompt_cwd(&this.config, &request.params);
            let (peer, routes, sid, turn) = match this.session(session_key(&request).map(|k| ctx.conversation(k)), cwd).await {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(agent = %this.name(), error = %e, "ACP agent unavailable");
                    yield s.fail(agent_error, &e, Map::new());
                    return;
                }
            };
            let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
            let prompt = Prompt::of(&sid, &request);
            // the turn runs on its own: it holds the session until the agent has answered,
            // even when the run is dropped after a cancel
            let cancel: CancellationToken = ctx.cancel.clone();
            tokio::spawn(async move {
                let _turn = turn.lock().await;
                let (utx, mut urx) = mpsc::unbounded_channel::<Counted>();
                routes.lock().insert(sid.clone(), utx);
                let (_, answer) = peer.request(Method::SessionPrompt.as_str(), prompt);
                tokio::pin!(answer);
                let mut cancel_sent = false;
                let outcome = loop {
                    tokio::select! {
                        biased;
                        Some(u) = urx.recv() => { let _ = tx.send(Event::Update(u)); }
                        a = &mut answer => break a,
                        _ = cancel.cancelled(), if !cancel_sent => {
                            cancel_sent = true;
                            tracing::info!(session = %sid, "run cancelled: session/cancel");
                            let cancel = serde_json::to_value(acp::CancelNotification::new(sid.clone())).unwrap_or_default();
                            peer.notify(AcpNotificationName::SessionCancel.as_str(), cancel);
                        }
                    }
                };
                while let Ok(u) = urx.try_recv() {
                    let _ = tx.send(Event::Update(u));
                }
                routes.lock().remove(&sid);
                let _ = tx.send(Event::Done(outcome));
            });
            let mut text = String::new();
            while let Some(event) = rx.recv().await {
                match event {
                    Event::Update(u) => {
                        if let Some(f) = e2a::acp::inbound::frame_of_update(&mut s, &u.0, &mut text) {
                            yield f;
                        }
                    }
                    Event::Done(Ok(result)) => {
                        let stop = stop_reason(result);
                        let stop = stop.as_str();
                        if stop == "cancelled" {
                            let code = ErrorKind::Cancelled.mapping().e2a_code;
                            yield s.fail(code, "the ACP agent cancelled the turn", details(&[("stopReason", stop.into())]));
                        } else {
                            yield s.answer(&text, Some(stop));
                        }
                        return;
                    }
                    Event::Done(Err(e)) => {
                        tracing::warn!(agent = %this.name(), error = %e, "ACP turn failed");
                        let d = details(&[("acp_code", e.code.into())]);
                        yield s.fail(agent_error, &format!("the ACP agent failed: {}", e.message), d);
                        return;
                    }
                }
            }
            yield s.fail(agent_error, "the ACP turn ended without an answer", Map::new());
        })
    }

    fn name(&self) -> String {
        let program = self.config.command.first().map(String::as_str).unwrap_or("");
        format!("acp:{program}")
    }
}
