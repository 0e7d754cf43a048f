//! The ACP agent side: `e2a acp` answers an ACP client (an editor) over stdio in front of any
//! gateway [`Agent`].
//!
//! Every `session/prompt` is protocol → E2A → agent → E2A → protocol: the request becomes an
//! envelope through [`e2a::acp::envelope_from_jsonrpc`], the agent's frames pass the
//! [`boundary`] and [`e2a::acp::stream::AcpStreamProjector`] turns them into the
//! `session/update` notifications and the `session/prompt` response that are sent, unchanged.
//!
//! A pause of the agent for approval (`plan.approval_required` with `input_kind: approval`)
//! becomes a `session/request_permission` request to the client; its answer is sent to the
//! agent as the follow-up of the same session (`yes` / `no`) and the turn goes on. A pause for
//! input ends the turn after showing the question; the next prompt of the session answers it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use e2a::acp::stream::{session_update, AcpStreamProjector};
use e2a::acp::{envelope_from_jsonrpc, JsonRpcIngress};
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{PauseKind, ResponseKind};
use e2a::{E2AEnvelope, E2AResponse, ResponseBody};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use e2a::types::{
    AcpAgentToClientMethod as AgentMethod, AcpClientToAgentMethod as Method, AcpMethodBeyondReference as Beyond,
    AcpNotificationName,
};

use super::session::{HistoryLimits, Session};
use crate::agent::{Agent, Caller, RequestContext};
use crate::pipeline::boundary::{self, Deadlines};
use crate::protocol::acp::{codes, Incoming, Peer, RpcError};
use crate::store::{MemoryStore, SessionQuery, SessionStore, Stores};

/// The ACP protocol version this agent speaks.
pub use crate::protocol::acp::PROTOCOL_VERSION;

/// The `channel_context` key under which every turn's envelope carries the session's set-up:
/// `{cwd, mcpServers, modeId?, configOptions: {id: value}}`.
pub const SESSION_CONTEXT_KEY: &str = "acp_session";

/// Most sessions one `session/list` page holds (`nextCursor` leads to the next).
pub const LIST_PAGE: usize = 100;

/// How `e2a acp` presents itself.
#[derive(Debug, Clone)]
pub struct AcpServerConfig {
    /// `agentInfo.name`.
    pub name: String,
    /// `agentInfo.title`.
    pub title: String,
    /// `agentInfo.version`.
    pub version: String,
    /// Deadlines applied to every run at the boundary.
    pub deadlines: Deadlines,
    /// The session modes offered (the first is every new session's); none: `session/set_mode`
    /// is refused.
    pub modes: Vec<ModeDecl>,
    /// The session config options offered (each a select; its first value is the default).
    pub config_options: Vec<ConfigOptionDecl>,
    /// How much of a session `session/load` replays.
    pub history: HistoryLimits,
}

impl Default for AcpServerConfig {
    fn default() -> Self {
        AcpServerConfig {
            name: "e2a".into(),
            title: "E2A gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            deadlines: Deadlines::default(),
            modes: Vec::new(),
            config_options: Vec::new(),
            history: HistoryLimits::default(),
        }
    }
}

/// A session mode declared by the operator: `ID` or `ID=NAME` (`--mode`).
///
/// ```
/// use e2a_gateway::bindings::acp::ModeDecl;
/// let m: ModeDecl = "plan=Plan first".parse().unwrap();
/// assert_eq!((m.id.as_str(), m.name.as_str()), ("plan", "Plan first"));
/// assert_eq!("code".parse::<ModeDecl>().unwrap().name, "code");
/// assert!("=x".parse::<ModeDecl>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeDecl {
    /// `id` of the ACP `SessionMode`.
    pub id: String,
    /// Its `name`.
    pub name: String,
}

impl std::str::FromStr for ModeDecl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, name) = s.split_once('=').unwrap_or((s, s));
        let (id, name) = (id.trim(), name.trim());
        if id.is_empty() || name.is_empty() {
            return Err(format!("a mode is ID or ID=NAME, not {s:?}"));
        }
        Ok(ModeDecl {
            id: id.into(),
            name: name.into(),
        })
    }
}

/// A select config option declared by the operator: `ID=VALUE,VALUE…` (`--config-option`);
/// its first value is the default.
///
/// ```
/// use e2a_gateway::bindings::acp::ConfigOptionDecl;
/// let o: ConfigOptionDecl = "model=fast,smart".parse().unwrap();
/// assert_eq!((o.id.as_str(), o.values.len()), ("model", 2));
/// assert!("model=".parse::<ConfigOptionDecl>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOptionDecl {
    /// `id` (and `name`) of the ACP `SessionConfigOption`.
    pub id: String,
    /// Its values, the first the default.
    pub values: Vec<String>,
}

impl std::str::FromStr for ConfigOptionDecl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("a config option is ID=VALUE,VALUE…, not {s:?}");
        let (id, values) = s.split_once('=').ok_or_else(bad)?;
        let values: Vec<String> = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect();
        if id.trim().is_empty() || values.is_empty() {
            return Err(bad());
        }
        Ok(ConfigOptionDecl {
            id: id.trim().into(),
            values,
        })
    }
}

/// An ACP agent (JSON-RPC over a byte stream, usually stdio) in front of a gateway agent.
pub struct AcpServer {
    agent: Arc<dyn Agent>,
    config: AcpServerConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Cancellation of each request in flight, by JSON-RPC id (`$/cancel_request`).
    requests: Mutex<HashMap<String, CancellationToken>>,
    approvals: AtomicU64,
    /// The client's `clientCapabilities` (from `initialize`).
    client: Mutex<Value>,
    /// Where sessions and their histories are kept (a [`MemoryStore`] unless one was given).
    store: Arc<dyn SessionStore>,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer")
            .field("agent", &self.agent.name())
            .field("config", &self.config)
            .finish()
    }
}

fn params_obj(params: &Value) -> Result<Map<String, Value>, RpcError> {
    match params {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(Map::new()),
        _ => Err(RpcError::new(codes::INVALID_PARAMS, "params must be an object")),
    }
}

fn session_id_param(p: &Map<String, Value>) -> Result<String, RpcError> {
    p.get("sessionId")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().to_string())
        .ok_or_else(|| RpcError::new(codes::INVALID_PARAMS, "missing sessionId"))
}

/// The session's working directory: ACP requires an absolute path (`cwd`).
fn cwd_param(p: &Map<String, Value>) -> Result<String, RpcError> {
    #[derive(serde::Deserialize)]
    struct Cwd {
        cwd: String,
    }
    match <Cwd as serde::Deserialize>::deserialize(crate::json::object_deserializer(p)) {
        Ok(Cwd { cwd }) if std::path::Path::new(&cwd).is_absolute() => Ok(cwd),
        Ok(Cwd { cwd }) => Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("cwd must be an absolute path, not {cwd:?}"),
        )),
        Err(_) => Err(RpcError::new(
            codes::INVALID_PARAMS,
            "cwd (an absolute path) is required",
        )),
    }
}

/// A store failure as the JSON-RPC error the client gets (the store's words, which never hold
/// a credential).
fn store_error(e: crate::store::StoreError) -> RpcError {
    tracing::warn!(error = %e, "session store");
    RpcError::new(codes::INTERNAL_ERROR, e.to_string())
}

/// The MCP servers of `session/new`: (passed to the agent, names of those refused). Stdio
/// servers are passed; `http` and `sse` ones are refused (this agent declares neither).
fn mcp_servers_param(p: &Map<String, Value>) -> Result<(Vec<Value>, Vec<String>), RpcError> {
    let servers = match p.get("mcpServers") {
        None | Some(Value::Null) => return Ok((Vec::new(), Vec::new())),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(RpcError::new(codes::INVALID_PARAMS, "mcpServers must be an array")),
    };
    let (mut passed, mut refused) = (Vec::new(), Vec::new());
    for server in servers {
        match server.get("type").and_then(Value::as_str) {
            Some(kind @ ("http" | "sse")) => {
                let name = server.get("name").and_then(Value::as_str).unwrap_or("?");
                refused.push(format!("{name} ({kind})"));
            }
            _ => passed.push(server.clone()),
        }
    }
    Ok((passed, refused))
}

enum Turn {
    /// The projector's `session/prompt` response: send it as is.
    Done(Value),
    /// The agent paused for approval: ask the client, then resume with the answer.
    Approval(String),
    /// The agent paused with a question and the client fills forms: ask it with
    /// `elicitation/create`, then resume with the answer.
    Question(String),
}

impl AcpServer {
    /// An ACP agent in front of `agent`; its sessions live as long as the process.
    pub fn new(agent: Arc<dyn Agent>, config: AcpServerConfig) -> Arc<Self> {
        Self::build(agent, config, Arc::new(MemoryStore::new()))
    }

    /// An ACP agent in front of `agent` whose sessions are kept in `store` (SQLite: a
    /// `session/load` replays after a restart); an error when the store keeps no sessions.
    pub fn with_store(
        agent: Arc<dyn Agent>,
        config: AcpServerConfig,
        stores: impl Into<Stores>,
    ) -> Result<Arc<Self>, String> {
        let stores = stores.into();
        let Some(sessions) = stores.sessions else {
            return Err(format!(
                "the store {} keeps no ACP sessions: use memory or sqlite:PATH",
                stores.tasks.name()
            ));
        };
        Ok(Self::build(agent, config, sessions))
    }

    fn build(agent: Arc<dyn Agent>, config: AcpServerConfig, store: Arc<dyn SessionStore>) -> Arc<Self> {
        Arc::new(AcpServer {
            // every turn passes the stream boundary
            agent: Arc::new(boundary::Guarded::new(agent, config.deadlines)),
            config,
            sessions: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            approvals: AtomicU64::new(0),
            client: Mutex::new(Value::Null),
            store,
        })
    }

    /// Serves one client on `reader` / `writer` until the client closes its output; running
    /// turns are then cancelled and everything queued is written.
    pub async fn serve<R, W>(self: Arc<Self>, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (peer, mut incoming) = Peer::start(reader, writer);
        let mut tasks = JoinSet::new();
        while let Some(msg) = incoming.recv().await {
            match msg {
                Incoming::Request { id, method, params } => {
                    let token = CancellationToken::new();
                    self.requests.lock().insert(id.to_string(), token.clone());
                    // the session's cancel count when the prompt arrived, read before the task runs
                    let epoch = match method.parse() {
                        Ok(Method::SessionPrompt) => params
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .and_then(|sid| self.session(sid))
                            .map(|s| s.cancels.load(Ordering::SeqCst)),
                        _ => None,
                    };
                    let this = self.clone();
                    let peer = peer.clone();
                    tasks.spawn(async move {
                        let key = id.to_string();
                        let out = this.request(&peer, id.clone(), &method, &params, token, epoch).await;
                        this.requests.lock().remove(&key);
                        match out {
                            Ok(Some(result)) => {
                                peer.respond(id, result);
                            }
                            Ok(None) => {}
                            Err(e) => {
                                tracing::debug!(method = %method, error = %e, "request failed");
                                peer.respond_error(id, e);
                            }
                        }
                    });
                }
                Incoming::Notification { method, params } => self.notification(&method, &params),
            }
            while tasks.try_join_next().is_some() {}
        }
        tracing::info!("client closed the connection: cancelling running turns");
        self.sessions.lock().values().for_each(|s| s.cancel());
        let drain = async { while tasks.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
        peer.close().await;
    }

    fn notification(&self, method: &str, params: &Value) {
        if method == Beyond::CancelRequest.as_str() {
            let id = params.get("requestId").map(Value::to_string).unwrap_or_default();
            if let Some(t) = self.requests.lock().get(&id).cloned() {
                tracing::info!(request = %id, "$/cancel_request");
                t.cancel();
            }
            return;
        }
        match method.parse() {
            Ok(AcpNotificationName::SessionCancel) => {
                let sid = params.get("sessionId").and_then(Value::as_str).unwrap_or("");
                match self.session(sid) {
                    Some(s) => {
                        tracing::info!(session = sid, "session/cancel");
                        s.cancel();
                    }
                    None => tracing::debug!(session = sid, "session/cancel of an unknown session"),
                }
            }
            _ => tracing::debug!(method, "notification ignored"),
        }
    }

    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.lock().get(id).cloned()
    }

    fn add_session(&self, id: &str, cwd: String, mcp_servers: Vec<Value>) -> Arc<Session> {
        let (mode, config) = self.defaults();
        let s = Session::new(cwd, mcp_servers, mode, config, self.config.history);
        self.sessions.lock().insert(id.to_string(), s.clone());
        s
    }

    /// The declared modes' default and config options' defaults.
    fn defaults(&self) -> (Option<String>, Vec<(String, String)>) {
        let c = &self.config;
        let mode = c.modes.first().map(|m| m.id.clone());
        let config = c
            .config_options
            .iter()
            .map(|o| (o.id.clone(), o.values[0].clone()))
            .collect();
        (mode, config)
    }

    /// The session `sid`: the live one, else the stored one brought back (after a restart).
    async fn known_session(&self, sid: &str) -> Result<Arc<Session>, RpcError> {
        if let Some(s) = self.session(sid) {
            return Ok(s);
        }
        let unknown = || RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}"));
        let record = self
            .store
            .get_session(sid)
            .await
            .map_err(store_error)?
            .ok_or_else(unknown)?;
        let history = self.store.history(sid).await.map_err(store_error)?;
        let history = history.iter().filter_map(|e| serde_json::from_str(e).ok()).collect();
        // the stored mode and config values, where they are still declared; the defaults else
        let stored = &record.state;
        let (default_mode, defaults) = self.defaults();
        let mode = stored["modeId"]
            .as_str()
            .filter(|m| self.config.modes.iter().any(|d| d.id == *m))
            .map(str::to_string)
            .or(default_mode);
        let config = self
            .config
            .config_options
            .iter()
            .zip(defaults)
            .map(|(decl, (id, default))| {
                let value = stored["configOptions"][&id]
                    .as_str()
                    .filter(|v| decl.values.iter().any(|d| d == v))
                    .map_or(default, str::to_string);
                (id, value)
            })
            .collect();
        let s = Session::restored(&record, history, mode, config, self.config.history);
        // a request that raced this one may have brought it back first
        Ok(self.sessions.lock().entry(sid.to_string()).or_insert(s).clone())
    }

    /// Writes the session and the history it has not stored yet.
    async fn persist(&self, sid: &str, session: &Session) -> Result<(), RpcError> {
        let entries = session.history.lock().take_unsaved();
        if !entries.is_empty() {
            let keep = self.config.history.messages;
            self.store
                .append_history(sid, entries, keep)
                .await
                .map_err(store_error)?;
        }
        self.store
            .put_session(session.record_of(sid))
            .await
            .map_err(store_error)
    }

    /// A session that is open (not closed) or a resource-not-found error.
    fn open_session(&self, sid: &str) -> Result<Arc<Session>, RpcError> {
        match self.session(sid) {
            Some(s) if !s.closed.load(Ordering::SeqCst) => Ok(s),
            Some(_) => Err(RpcError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("session {sid} is closed: load or resume it first"),
            )),
            None => Err(RpcError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("unknown session {sid}"),
            )),
        }
    }

    /// The session's `modes` (ACP `SessionModeState`), `None` when no modes are declared.
    fn modes(&self, session: &Session) -> Option<Value> {
        let current = session.mode.lock().clone()?;
        let available: Vec<Value> = self
            .config
            .modes
            .iter()
            .map(|m| json!({"id": m.id, "name": m.name}))
            .collect();
        Some(json!({"currentModeId": current, "availableModes": available}))
    }

    /// The session's `configOptions` (ACP `SessionConfigOption`s, each a select).
    fn config_options(&self, session: &Session) -> Value {
        let current = session.config.lock().clone();
        let options: Vec<Value> = self
            .config
            .config_options
            .iter()
            .zip(current)
            .map(|(decl, (_, value))| {
                let values: Vec<Value> = decl.values.iter().map(|v| json!({"value": v, "name": v})).collect();
                json!({"id": decl.id, "name": decl.id, "type": "select", "currentValue": value, "options": values})
            })
            .collect();
        Value::Array(options)
    }

    /// What `session/new`, `load` and `resume` answer: the session's modes and config options.
    fn session_state(&self, session: &Session, mut result: Value) -> Value {
        if let Some(modes) = self.modes(session) {
            result["modes"] = modes;
        }
        result["configOptions"] = self.config_options(session);
        result
    }

    /// `session/list`: the sessions (of `cwd`, when given), most recently updated first, a page
    /// of [`LIST_PAGE`] at a time (`cursor` / `nextCursor`).
    async fn list_sessions(&self, p: &Map<String, Value>) -> Result<Value, RpcError> {
        let offset = match p.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .parse::<usize>()
                .map_err(|_| RpcError::new(codes::INVALID_PARAMS, format!("unknown cursor {c:?}")))?,
            Some(_) => return Err(RpcError::new(codes::INVALID_PARAMS, "cursor must be a string")),
        };
        let query = SessionQuery {
            cwd: p.get("cwd").and_then(Value::as_str).map(str::to_string),
            offset,
            limit: LIST_PAGE,
        };
        let page = self.store.list_sessions(query).await.map_err(store_error)?;
        let mut result =
            e2a::acp::results::session_list_result_v1(page.sessions.iter().map(|r| (r.id.as_str(), r.cwd.as_str())));
        if let Some(items) = result.get_mut("sessions").and_then(Value::as_array_mut) {
            for (item, r) in items.iter_mut().zip(&page.sessions) {
                item["updatedAt"] = Session::updated_at(r.updated_ms).into();
            }
        }
        if page.more {
            result["nextCursor"] = (offset + LIST_PAGE).to_string().into();
        }
        Ok(result)
    }

    async fn request(
        &self,
        peer: &Peer,
        id: Value,
        method: &str,
        params: &Value,
        cancel: CancellationToken,
        epoch: Option<u64>,
    ) -> Result<Option<Value>, RpcError> {
        let p = params_obj(params)?;
        let simple = |v: Value| Ok(Some(v));
        if method == Beyond::SessionDelete.as_str() {
            let sid = session_id_param(&p)?;
            let removed = self.sessions.lock().remove(&sid);
            if let Some(s) = &removed {
                s.cancel();
            }
            let stored = self.store.delete_session(&sid).await.map_err(store_error)?;
            if removed.is_none() && !stored {
                return Err(RpcError::new(
                    codes::RESOURCE_NOT_FOUND,
                    format!("unknown session {sid}"),
                ));
            }
            tracing::info!(session = %sid, "session/delete");
            return simple(json!({}));
        }
        let Ok(known) = method.parse::<Method>() else {
            return Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ));
        };
        match known {
            Method::Initialize => simple(self.initialize(&p)),
            Method::Authenticate => {
                let method_id = p.get("methodId").and_then(Value::as_str).unwrap_or("");
                Err(RpcError::new(
                    codes::INVALID_PARAMS,
                    format!("unknown auth method `{method_id}`: this agent declares none"),
                ))
            }
            Method::SessionNew => {
                let cwd = cwd_param(&p)?;
                let (passed, refused) = mcp_servers_param(&p)?;
                let sid = format!("sess_{}", uuid::Uuid::new_v4().simple());
                let session = self.add_session(&sid, cwd, passed);
                tracing::info!(session = %sid, "session/new");
                let note = (!refused.is_empty()).then(|| {
                    // the editor sees why some of its MCP servers will not be used
                    let text = format!(
                        "Note: MCP servers not passed to the agent ({}): only stdio servers are supported.",
                        refused.join(", ")
                    );
                    tracing::warn!(session = %sid, servers = %refused.join(", "), "MCP servers refused");
                    let update = session_update(
                        &sid,
                        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
                    );
                    session.record(&update);
                    update
                });
                if let Err(e) = self.persist(&sid, &session).await {
                    self.sessions.lock().remove(&sid);
                    return Err(e);
                }
                let result = self.session_state(&session, e2a::acp::session_new_result(&sid));
                peer.respond(id, result);
                if let Some(update) = note {
                    peer.send(update);
                }
                Ok(None)
            }
            Method::SessionLoad | Method::SessionResume => {
                let sid = session_id_param(&p)?;
                // an unknown id is refused: loading or resuming must not make a session appear
                let s = self.known_session(&sid).await?;
                if s.closed.swap(false, Ordering::SeqCst) {
                    self.persist(&sid, &s).await?;
                }
                if known == Method::SessionLoad {
                    let history = s.history.lock().replay();
                    for update in history {
                        peer.send(update);
                    }
                }
                simple(self.session_state(&s, json!({})))
            }
            Method::SessionClose => {
                // closed: its turn cancelled, still listed and loadable (close is not delete)
                let sid = session_id_param(&p)?;
                let s = self.open_session(&sid)?;
                s.closed.store(true, Ordering::SeqCst);
                s.cancel();
                self.persist(&sid, &s).await?;
                simple(json!({}))
            }
            Method::SessionList => simple(self.list_sessions(&p).await?),
            Method::SessionPrompt => {
                let response = self.prompt(peer, id, p, cancel, epoch).await?;
                peer.send(response);
                Ok(None)
            }
            Method::SessionSetMode => {
                if self.config.modes.is_empty() {
                    return Err(RpcError::new(
                        codes::METHOD_NOT_FOUND,
                        format!("{method}: this agent declares no modes"),
                    ));
                }
                let sid = session_id_param(&p)?;
                let s = self.open_session(&sid)?;
                let mode = p.get("modeId").and_then(Value::as_str).unwrap_or("");
                if !self.config.modes.iter().any(|m| m.id == mode) {
                    return Err(RpcError::new(codes::INVALID_PARAMS, format!("unknown modeId {mode:?}")));
                }
                *s.mode.lock() = Some(mode.to_string());
                let update = session_update(
                    &sid,
                    json!({"sessionUpdate": "current_mode_update", "currentModeId": mode}),
                );
                s.record(&update);
                self.persist(&sid, &s).await?;
                peer.send(update);
                simple(json!({}))
            }
            Method::SessionSetConfigOption => {
                let sid = session_id_param(&p)?;
                let s = self.open_session(&sid)?;
                let config_id = p.get("configId").and_then(Value::as_str).unwrap_or("");
                let Some(decl) = self.config.config_options.iter().find(|o| o.id == config_id) else {
                    return Err(RpcError::new(
                        codes::INVALID_PARAMS,
                        format!("unknown configId {config_id:?}"),
                    ));
                };
                let value = match p.get("value") {
                    Some(Value::String(v)) if decl.values.contains(v) => v.clone(),
                    other => {
                        return Err(RpcError::new(
                            codes::INVALID_PARAMS,
                            format!(
                                "value of {config_id} must be one of {:?}, not {}",
                                decl.values,
                                other.unwrap_or(&Value::Null)
                            ),
                        ))
                    }
                };
                if let Some(slot) = s.config.lock().iter_mut().find(|(k, _)| k == config_id) {
                    slot.1 = value;
                }
                s.touch();
                self.persist(&sid, &s).await?;
                simple(json!({"configOptions": self.config_options(&s)}))
            }
            _ => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    fn initialize(&self, p: &Map<String, Value>) -> Value {
        let asked = p
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .unwrap_or(PROTOCOL_VERSION);
        tracing::info!(client_version = asked, "initialize");
        *self.client.lock() = p.get("clientCapabilities").cloned().unwrap_or(Value::Null);
        let c = &self.config;
        let mut r = e2a::acp::results::initialize_result(&c.name, &c.title, &c.version);
        // the latest version this agent supports (the client disconnects if it cannot speak it)
        r["protocolVersion"] = PROTOCOL_VERSION.into();
        r["agentCapabilities"]["sessionCapabilities"] = json!({"list": {}, "resume": {}, "close": {}, "delete": {}});
        r
    }

    /// Runs one `session/prompt` turn; returns the JSON-RPC response to send.
    async fn prompt(
        &self,
        peer: &Peer,
        id: Value,
        p: Map<String, Value>,
        request_cancel: CancellationToken,
        epoch: Option<u64>,
    ) -> Result<Value, RpcError> {
        let sid = session_id_param(&p)?;
        let session = self.open_session(&sid)?;
        if !p.get("prompt").is_some_and(Value::is_array) {
            return Err(RpcError::new(
                codes::INVALID_PARAMS,
                "prompt must be an array of content blocks",
            ));
        }
        let _turn = session.turn.lock().await;
        let turn_cancel = CancellationToken::new();
        *session.running.lock() = Some(turn_cancel.clone());
        if epoch.is_some_and(|e| e != session.cancels.load(Ordering::SeqCst)) {
            // cancelled after it arrived, before it ran
            turn_cancel.cancel();
        }
        let link = {
            let (req, turn) = (request_cancel.clone(), turn_cancel.clone());
            tokio::spawn(async move {
                req.cancelled().await;
                turn.cancel();
            })
        };
        let mut request = turn_request(&session, &sid, &id, p);
        let mut projector = AcpStreamProjector::new(sid.clone(), request.jsonrpc_id.clone());
        let result = loop {
            let answer = match self.run(peer, &session, &request, &mut projector, &turn_cancel).await {
                Turn::Done(response) => break response,
                Turn::Approval(question) => self.ask_permission(peer, &sid, &question, &turn_cancel).await,
                Turn::Question(question) => self.ask_form(peer, &sid, &question, &turn_cancel).await,
            };
            match answer {
                Some(text) => request = follow_up(&request, &text),
                None => {
                    let frame =
                        boundary::cutoff_frame(&request, 0, ErrorKind::Cancelled, "the turn was cancelled", Map::new());
                    break self
                        .project(peer, &session, &mut projector, &frame)
                        .unwrap_or(Value::Null);
                }
            }
        };
        link.abort();
        *session.running.lock() = None;
        if let Err(e) = self.persist(&sid, &session).await {
            // the turn happened: its answer is sent, only its replay may be incomplete
            tracing::warn!(session = %sid, error = %e, "the session's history could not be stored");
        }
        if request_cancel.is_cancelled() {
            return Err(RpcError::new(codes::REQUEST_CANCELLED, "Request cancelled"));
        }
        let mut result = result;
        if let Value::Object(m) = &mut result {
            // the answer carries the request's id as it came (any JSON-RPC id shape)
            m.insert("id".into(), id);
        }
        Ok(result)
    }

    /// Pushes a frame through the projector, sends the updates; returns the final response.
    fn project(
        &self,
        peer: &Peer,
        session: &Session,
        projector: &mut AcpStreamProjector,
        frame: &E2AResponse,
    ) -> Option<Value> {
        let mut last = None;
        for mut msg in projector.push(frame) {
            // what the agent said may carry a credential: never to the editor as is
            e2a::redact::redact_outbound(&mut msg);
            if msg.get("method").is_some() {
                if msg.get("method").and_then(Value::as_str) == Some(AgentMethod::SessionUpdate.as_str()) {
                    session.record(&msg);
                }
                peer.send(msg);
            } else {
                last = Some(msg);
            }
        }
        last
    }

    async fn run(
        &self,
        peer: &Peer,
        session: &Session,
        request: &E2AEnvelope,
        projector: &mut AcpStreamProjector,
        cancel: &CancellationToken,
    ) -> Turn {
        let mut ctx = RequestContext::new(Caller::named("acp-client"), None);
        ctx.cancel = cancel.child_token();
        let mut frames = self.agent.run(request.clone(), ctx);
        let mut pause: Option<(PauseKind, String)> = None;
        while let Some(frame) = frames.next().await {
            if frame.response_kind == ResponseKind::PlanApprovalRequired {
                if let Ok(ResponseBody::PlanApprovalRequired(b)) = frame.typed_body() {
                    let question = b.plan_content.unwrap_or_else(|| "The agent asks for approval".into());
                    pause = Some((b.input_kind.unwrap_or(PauseKind::Approval), question));
                }
            }
            let completes = frame.response_kind == ResponseKind::E2aComplete;
            if frame.is_final && completes {
                if let Some((kind, question)) = pause.take() {
                    if kind == PauseKind::Approval && !cancel.is_cancelled() {
                        return Turn::Approval(question);
                    }
                    if self.fills_forms() && !cancel.is_cancelled() {
                        return Turn::Question(question);
                    }
                    // input pause: show the question; the next prompt of the session answers it
                    session.paused_task.lock().clone_from(&request.task_id);
                    let mut s = ResponseStream::for_request(request);
                    let shown = s.text(&question);
                    self.project(peer, session, projector, &shown);
                }
            }
            // ACP: once the client cancelled, the turn ends with stopReason cancelled whatever
            // error the cancellation caused (an agent stopping without a final frame included)
            let frame = if frame.is_final && cancel.is_cancelled() && !completes {
                boundary::cutoff_frame(
                    request,
                    frame.sequence,
                    ErrorKind::Cancelled,
                    "the turn was cancelled",
                    Map::new(),
                )
            } else {
                frame
            };
            if let Some(done) = self.project(peer, session, projector, &frame) {
                return Turn::Done(done);
            }
            if frame.is_final {
                break;
            }
        }
        let frame = boundary::cutoff_frame(
            request,
            0,
            ErrorKind::AgentError,
            "the agent ended without an answer",
            Map::new(),
        );
        Turn::Done(
            self.project(peer, session, projector, &frame)
                .unwrap_or_else(|| json!({"jsonrpc": "2.0", "id": Value::Null, "result": {"stopReason": "end_turn"}})),
        )
    }

    /// True when the client declared form elicitation (`clientCapabilities.elicitation.form`).
    fn fills_forms(&self) -> bool {
        self.client
            .lock()
            .pointer("/elicitation/form")
            .is_some_and(Value::is_object)
    }

    /// Asks the question with `elicitation/create` (a form of one text field); `Some(answer)`
    /// when the user accepted, `None` when they declined or cancelled, or the turn was.
    async fn ask_form(&self, peer: &Peer, sid: &str, question: &str, cancel: &CancellationToken) -> Option<String> {
        let params = json!({
            "sessionId": sid,
            "mode": "form",
            "message": question,
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string", "title": "Answer"}},
                                "required": ["answer"]}
        });
        let (_, answer) = peer.request(Beyond::ElicitationCreate.as_str(), params);
        let outcome = tokio::select! {
            a = answer => a,
            _ = cancel.cancelled() => return None,
        };
        match outcome {
            Ok(r) if r["action"] == "accept" => match &r["content"]["answer"] {
                Value::String(s) => Some(s.clone()),
                Value::Null => Some(String::new()),
                other => Some(other.to_string()),
            },
            Ok(r) => {
                tracing::info!(action = %r["action"], "the question was not answered: the turn ends");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "elicitation/create failed: the turn ends");
                None
            }
        }
    }

    /// Sends `session/request_permission`; `Some("yes"|"no")` is the answer for the agent,
    /// `None` means the turn was cancelled.
    async fn ask_permission(
        &self,
        peer: &Peer,
        sid: &str,
        question: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let n = self.approvals.fetch_add(1, Ordering::SeqCst) + 1;
        let params = json!({
            "sessionId": sid,
            "toolCall": {"toolCallId": format!("approval-{n}"), "title": question, "kind": "other", "status": "pending",
                         "content": [{"type": "content", "content": {"type": "text", "text": question}}]},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
            ]
        });
        let (_, answer) = peer.request(AgentMethod::SessionRequestPermission.as_str(), params);
        let outcome = tokio::select! {
            a = answer => a,
            _ = cancel.cancelled() => return None,
        };
        match outcome {
            Ok(r) => {
                let o = &r["outcome"];
                match (o["outcome"].as_str(), o["optionId"].as_str()) {
                    (Some("selected"), Some("allow")) => Some("yes".into()),
                    (Some("selected"), Some(_)) => Some("no".into()),
                    _ => None,
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "session/request_permission failed: treated as a denial");
                Some("no".into())
            }
        }
    }
}

/// The follow-up of a paused run: same session, the answer as the prompt.
fn follow_up(request: &E2AEnvelope, answer: &str) -> E2AEnvelope {
    let mut next = request.clone();
    next.params = boundary::obj(json!({"prompt": [{"type": "text", "text": answer}]}));
    next.request_id = Some(e2a::stream::new_id());
    next
}

/// The E2A request of a `session/prompt` turn (its blocks recorded in the session's replay):
/// every turn is an E2A task, and a turn that ended in an input pause is continued by the next.
fn turn_request(session: &Session, sid: &str, id: &Value, p: Map<String, Value>) -> E2AEnvelope {
    for block in p.get("prompt").and_then(Value::as_array).into_iter().flatten() {
        session.record(&session_update(
            sid,
            json!({"sessionUpdate": "user_message_chunk", "content": block}),
        ));
    }
    let trace = crate::web::trace::TraceContext::from_meta(p.get("_meta"));
    let mut ingress = JsonRpcIngress::new(Method::SessionPrompt.as_str(), p);
    ingress.jsonrpc_id = e2a::acp::jsonrpc_id_from_value(id);
    ingress.session_id = Some(sid.to_string());
    ingress.channel = Some("acp".into());
    let mut request = envelope_from_jsonrpc(&ingress);
    if request.request_id.is_none() {
        request.request_id = Some(e2a::stream::new_id());
    }
    // the editor's trace (`_meta.traceparent` or `x-trace-id`) names the turn
    crate::web::trace::correlate(&mut request, trace.trace_id);
    let paused = session.paused_task.lock().take();
    request.task_id = Some(paused.unwrap_or_else(|| format!("task_{}", uuid::Uuid::new_v4().simple())));
    // what the editor set up for the session, for the agent to honour
    let mut state = Map::new();
    state.insert("cwd".into(), session.cwd.clone().into());
    state.insert("mcpServers".into(), Value::Array(session.mcp_servers.clone()));
    if let Some(mode) = session.mode.lock().clone() {
        state.insert("modeId".into(), mode.into());
    }
    let config: Map<String, Value> = session
        .config
        .lock()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    state.insert("configOptions".into(), Value::Object(config));
    request
        .channel_context
        .insert(SESSION_CONTEXT_KEY.into(), Value::Object(state));
    request
}
