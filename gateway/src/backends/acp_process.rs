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
//! - A run that does not keep up holds the agent back: past [`MAX_BACKLOG`] updates waiting
//!   for their runs, the agent's output is not read until they are taken.
//! - `session/request_permission` follows a [`PermissionPolicy`]: denied unless allowed by
//!   the `approve` list, every decision logged. `fs/*` and `terminal/*` client methods are
//!   declined unless enabled.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use parking_lot::Mutex;

use agent_client_protocol_schema::v1 as acp;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{AcpAgentToClientMethod as AgentMethod, AcpClientToAgentMethod as Method, AcpNotificationName};
use e2a::E2AEnvelope;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext};
use crate::backends::request_text;
use crate::pipeline::boundary::details;
use crate::protocol::acp::{codes, read_params, Hook, Incoming, Pace, Peer, PeerOptions, RpcError};

/// Which permission requests of the backend agent may be allowed.
#[derive(Debug, Clone, Default)]
pub struct PermissionPolicy {
    /// Patterns allowed: a tool-call `kind` (`read`, `edit`, `execute`, …), a substring of its
    /// title, or `*` for everything. Empty: every request is denied.
    pub approve: Vec<String>,
}

impl PermissionPolicy {
    /// True when the tool call described by `tool_call` may be allowed.
    pub fn allows(&self, tool_call: &acp::ToolCallUpdate) -> bool {
        let kind = tool_call
            .fields
            .kind
            .map(|k| serde_json::to_value(k).unwrap_or_default());
        let kind = kind.as_ref().and_then(Value::as_str).unwrap_or("");
        let title = tool_call.fields.title.as_deref().unwrap_or("").to_lowercase();
        self.approve.iter().any(|p| {
            let p = p.trim();
            p == "*" || (!p.is_empty() && (p == kind || title.contains(&p.to_lowercase())))
        })
    }
}

/// How to run the backend agent.
#[derive(Debug, Clone)]
pub struct AcpProcessConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Working directory given to `session/new` (default: the current directory).
    pub cwd: Option<PathBuf>,
    /// Which permission requests may be allowed.
    pub policy: PermissionPolicy,
    /// Serve `fs/read_text_file` and `fs/write_text_file`, only for files inside the session's
    /// working directory ([`AcpProcessConfig::cwd`]), symlinks resolved (declined otherwise).
    pub allow_fs: bool,
    /// Environment variables passed to the agent besides [`AGENT_ENV`] (its environment is
    /// otherwise empty: the gateway's credentials never reach it).
    pub env: Vec<String>,
}

impl AcpProcessConfig {
    /// A backend running `command`, with the default policy (deny), no file system and the
    /// default environment.
    pub fn new(command: Vec<String>) -> Self {
        AcpProcessConfig {
            command,
            cwd: None,
            policy: PermissionPolicy::default(),
            allow_fs: false,
            env: Vec::new(),
        }
    }

    /// The working directory of the agent's sessions: absolute, as ACP requires (a relative
    /// [`AcpProcessConfig::cwd`] is taken from the gateway's current directory; none is the
    /// current directory).
    pub fn session_cwd(&self) -> PathBuf {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        match &self.cwd {
            Some(d) if d.is_relative() => here.join(d),
            Some(d) => d.clone(),
            None => here,
        }
    }

    /// Starts the agent program with stdin and stdout piped (stderr inherited) and a scrubbed
    /// environment: [`AGENT_ENV`] and the names in [`AcpProcessConfig::env`] are passed, nothing
    /// else; the gateway's own credentials ([`crate::config::SECRET_ENV`]) never.
    pub fn spawn(
        &self,
    ) -> Result<
        (
            tokio::process::Child,
            tokio::process::ChildStdin,
            tokio::process::ChildStdout,
        ),
        String,
    > {
        let (program, args) = self.command.split_first().ok_or_else(|| "no command".to_string())?;
        let mut command = tokio::process::Command::new(program);
        command.env_clear();
        for (name, value) in std::env::vars_os() {
            let Some(n) = name.to_str() else { continue };
            if crate::config::SECRET_ENV.contains(&n) {
                continue;
            }
            let wanted = AGENT_ENV.contains(&n)
                || AGENT_ENV_PREFIXES.iter().any(|p| n.starts_with(p))
                || self.env.iter().any(|e| e == n);
            if wanted {
                command.env(&name, value);
            }
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the ACP agent `{program}`: {e}"))?;
        match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Ok((child, stdin, stdout)),
            _ => Err("the ACP agent has no stdio".into()),
        }
    }
}

/// The environment variables an ACP agent process gets by default (when set): what programs
/// need to run (`PATH`, `HOME`, locale, temporary directory, terminal), never credentials.
pub const AGENT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TMPDIR",
    "TZ",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "TEMP",
    "TMP",
];

/// Prefixes of the environment variables an ACP agent process gets by default (locale and XDG
/// directories).
pub const AGENT_ENV_PREFIXES: &[&str] = &["LC_", "XDG_"];

type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Counted>>>>;

/// Most `session/update`s of an agent routed to its runs and not yet taken by them: past it
/// the agent's output is not read (the agent waits) until a run takes some.
pub const MAX_BACKLOG: usize = 1024;

/// The updates of one agent process waiting for their runs.
#[derive(Default)]
struct Backlog {
    waiting: std::sync::atomic::AtomicUsize,
    taken: tokio::sync::Notify,
}

impl Backlog {
    /// Waits until fewer than [`MAX_BACKLOG`] updates wait.
    async fn room(&self) {
        loop {
            let taken = self.taken.notified();
            if self.waiting.load(std::sync::atomic::Ordering::SeqCst) < MAX_BACKLOG {
                return;
            }
            taken.await;
        }
    }
}

/// An update on its way to its run, counted in the [`Backlog`] until it is dropped (taken by
/// the run, or dropped with a run that ended).
struct Counted(Value, Arc<Backlog>);

impl Counted {
    fn new(update: Value, backlog: &Arc<Backlog>) -> Self {
        backlog.waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Counted(update, backlog.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        // only the update that makes room wakes the reader
        if self.1.waiting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) >= MAX_BACKLOG {
            self.1.taken.notify_waiters();
        }
    }
}

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
    /// that made it).
    sessions: HashMap<ConversationKey, (String, u64)>,
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

    /// The working directory sent in `session/new` ([`AcpProcessConfig::session_cwd`]).
    fn cwd(&self) -> String {
        self.config.session_cwd().display().to_string()
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
        let routing = routes.clone();
        let backlog: Arc<Backlog> = Arc::default();
        let counting = backlog.clone();
        // session/updates are routed on the reading task, so that every update of a turn is
        // routed before the turn's response completes it
        let hook: Hook = Arc::new(move |_: &Peer, msg: Incoming| {
            let Incoming::Notification { method, params } = msg else {
                return Some(msg);
            };
            if method != AgentMethod::SessionUpdate.as_str() {
                return Some(Incoming::Notification { method, params });
            }
            let Ok(routed) = serde_json::from_value::<RoutedUpdate>(params) else {
                tracing::debug!("a session/update without a sessionId: dropped");
                return None;
            };
            match routing.lock().get(&routed.session_id).cloned() {
                Some(tx) => {
                    let _ = tx.send(Counted::new(routed.update, &counting));
                }
                None => tracing::debug!(session = %routed.session_id, "session/update outside a turn"),
            }
            None
        });
        // the agent's stray output is logged, never answered (no exchange of errors); its
        // output is read while its runs keep up
        let pace: Pace = Arc::new(move || {
            let backlog = backlog.clone();
            Box::pin(async move { backlog.room().await })
        });
        let options = PeerOptions {
            hook: Some(hook),
            quiet: true,
            pace: Some(pace),
        };
        let (peer, incoming) = Peer::start_with(stdout, stdin, options);
        tokio::spawn(serve_client_side(peer.clone(), incoming, self.config.clone()));
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

    /// The ACP session of an E2A request and its turn lock (a new session when needed).
    async fn session(
        &self,
        key: Option<ConversationKey>,
    ) -> Result<(Peer, Routes, String, Arc<tokio::sync::Mutex<()>>), String> {
        let mut state = self.state.lock().await;
        let (peer, routes, generation) = self.connect(&mut state).await?;
        if let Some(k) = &key {
            if let Some((sid, g)) = state.sessions.get(k) {
                if *g == generation {
                    let sid = sid.clone();
                    let lock = state.turns.entry(sid.clone()).or_default().clone();
                    return Ok((peer, routes, sid, lock));
                }
            }
        }
        let created: acp::NewSessionResponse =
            call(&peer, Method::SessionNew, acp::NewSessionRequest::new(self.cwd())).await?;
        let sid = created.session_id.0.to_string();
        if let Some(k) = key {
            state.sessions.insert(k, (sid.clone(), generation));
        }
        let lock = state.turns.entry(sid.clone()).or_default().clone();
        Ok((peer, routes, sid, lock))
    }
}

/// Answers the backend's requests to its client.
async fn serve_client_side(peer: Peer, mut incoming: mpsc::UnboundedReceiver<Incoming>, config: Arc<AcpProcessConfig>) {
    while let Some(msg) = incoming.recv().await {
        match msg {
            Incoming::Notification { method, .. } => tracing::debug!(method = %method, "notification ignored"),
            Incoming::Request { id, method, params } => {
                let answer = client_request(&method, &params, &config).await;
                match answer {
                    Ok(v) => peer.respond(id, v),
                    Err(e) => peer.respond_error(id, e),
                };
            }
        }
    }
}

async fn client_request(method: &str, params: &Value, config: &AcpProcessConfig) -> Result<Value, RpcError> {
    match method.parse::<AgentMethod>() {
        Ok(AgentMethod::SessionRequestPermission) => {
            let asked: acp::RequestPermissionRequest = read_params(params)?;
            let allowed = config.policy.allows(&asked.tool_call);
            let wanted: &[acp::PermissionOptionKind] = if allowed {
                &[
                    acp::PermissionOptionKind::AllowOnce,
                    acp::PermissionOptionKind::AllowAlways,
                ]
            } else {
                &[
                    acp::PermissionOptionKind::RejectOnce,
                    acp::PermissionOptionKind::RejectAlways,
                ]
            };
            let option = wanted
                .iter()
                .find_map(|k| asked.options.iter().find(|o| o.kind == *k))
                .map(|o| o.option_id.clone());
            tracing::info!(
                tool = asked.tool_call.fields.title.as_deref().unwrap_or(""),
                allowed,
                "permission request of the ACP agent decided by policy"
            );
            let outcome = match option {
                Some(id) => acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(id)),
                None => acp::RequestPermissionOutcome::Cancelled,
            };
            to_result(acp::RequestPermissionResponse::new(outcome))
        }
        Ok(AgentMethod::FsReadTextFile) if config.allow_fs => {
            let req: acp::ReadTextFileRequest = read_params(params)?;
            let path = confined(&req.path, &config.session_cwd(), false)?;
            let text = tokio::fs::read_to_string(&path)
                .await
                .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("cannot read {}: {e}", path.display())))?;
            let from = req.line.map_or(0, |l| l.saturating_sub(1) as usize);
            let lines: Vec<&str> = text.split_inclusive('\n').skip(from).collect();
            let lines = match req.limit {
                Some(n) => &lines[..(n as usize).min(lines.len())],
                None => &lines[..],
            };
            to_result(acp::ReadTextFileResponse::new(lines.concat()))
        }
        Ok(AgentMethod::FsWriteTextFile) if config.allow_fs => {
            let req: acp::WriteTextFileRequest = read_params(params)?;
            let path = confined(&req.path, &config.session_cwd(), true)?;
            tokio::fs::write(&path, req.content)
                .await
                .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("cannot write {}: {e}", path.display())))?;
            to_result(acp::WriteTextFileResponse::new())
        }
        Ok(
            AgentMethod::FsReadTextFile
            | AgentMethod::FsWriteTextFile
            | AgentMethod::TerminalCreate
            | AgentMethod::TerminalOutput
            | AgentMethod::TerminalRelease
            | AgentMethod::TerminalWaitForExit
            | AgentMethod::TerminalKill,
        ) => {
            tracing::info!(method, "client method declined (not enabled)");
            Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("{method} is not enabled on this gateway"),
            ))
        }
        _ => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}

/// `path` when it lies inside `root` once symlinks are resolved (for a file to be written, its
/// directory is resolved and the file itself when it exists); an invalid-params error
/// otherwise.
fn confined(path: &std::path::Path, root: &std::path::Path, write: bool) -> Result<PathBuf, RpcError> {
    let denied = |why: String| RpcError::invalid_params_at("/path", why);
    if !path.is_absolute() {
        return Err(denied(format!("path must be absolute, not {}", path.display())));
    }
    let root = root
        .canonicalize()
        .map_err(|e| denied(format!("the session directory is unusable: {e}")))?;
    let resolved = match (write, path.canonicalize()) {
        (_, Ok(p)) => p,
        (true, Err(_)) => {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(denied(format!("{} names no file", path.display())));
            };
            dir.canonicalize()
                .map_err(|e| denied(format!("cannot write {}: {e}", path.display())))?
                .join(name)
        }
        (false, Err(e)) => return Err(denied(format!("cannot read {}: {e}", path.display()))),
    };
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(denied(format!(
            "{} is outside the session directory {}",
            path.display(),
            root.display()
        )))
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

/// The params of a `session/update` as routed to its turn: the session, the update as sent.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoutedUpdate {
    session_id: String,
    update: Value,
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

/// `value` as a JSON-RPC result.
fn to_result(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(codes::INTERNAL_ERROR, e.to_string()))
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
            let (peer, routes, sid, turn) = match this.session(session_key(&request).map(|k| ctx.conversation(k))).await {
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

#[cfg(test)]
mod tests {
    use super::PermissionPolicy;
    use agent_client_protocol_schema::v1 as acp;

    #[test]
    fn the_policy_denies_unless_approved() {
        let fields = acp::ToolCallUpdateFields::new()
            .title("Edit src/main.rs".to_string())
            .kind(acp::ToolKind::Edit);
        let call = acp::ToolCallUpdate::new("t", fields);
        assert!(!PermissionPolicy::default().allows(&call));
        let p = |v: &[&str]| PermissionPolicy {
            approve: v.iter().map(|s| s.to_string()).collect(),
        };
        assert!(p(&["edit"]).allows(&call));
        assert!(p(&["main.RS"]).allows(&call));
        assert!(p(&["*"]).allows(&call));
        assert!(!p(&["read", ""]).allows(&call));
    }
}
