//! The ACP agent side: `e2a acp` answers an ACP client (an editor) over stdio in front of any
//! gateway [`Agent`].
//!
//! Every request is read once into the official ACP type of its method
//! (`agent-client-protocol-schema`), a bad one answered with `-32602` naming the field (a JSON
//! pointer in the error's `data`). Session requests are answered in [`super::lifecycle`];
//! every `session/prompt` is a turn ([`super::turn`]) run through the gateway's one
//! [`Pipeline`] — admission, a stream permit, the boundary, metrics and the frame log, as on
//! every other binding.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use e2a::types::{AcpClientToAgentMethod as Method, AcpMethodBeyondReference as Beyond, AcpNotificationName};

use super::answer::{answer, Answer};
use super::config::AcpServerConfig;
use super::lifecycle::Sessions;
use crate::agent::Agent;
use crate::pipeline::Pipeline;
use crate::protocol::acp::{cancelled_request, codes, read_params, Incoming, Peer, RpcError};
use crate::store::{MemoryStore, SessionStore, Stores};

/// The ACP protocol version this agent speaks.
pub use crate::protocol::acp::PROTOCOL_VERSION;

/// An ACP agent (JSON-RPC over a byte stream, usually stdio) in front of a gateway agent.
pub struct AcpServer {
    /// The run pipeline every turn goes through.
    pub(super) pipeline: Pipeline,
    pub(super) config: Arc<AcpServerConfig>,
    /// The sessions, live and stored.
    pub(super) sessions: Sessions,
    /// Cancellation of each request in flight, by JSON-RPC id (`$/cancel_request`).
    requests: Mutex<HashMap<String, CancellationToken>>,
    pub(super) approvals: AtomicU64,
    /// The client's `clientCapabilities` (from `initialize`).
    pub(super) client: Mutex<acp::ClientCapabilities>,
}

impl std::fmt::Debug for AcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpServer")
            .field("agent", &self.pipeline.agent().name())
            .field("config", &self.config)
            .finish()
    }
}

/// `initialize` params with a `protocolVersion` the official type reads: clients send `"1"`
/// (acplint) or nothing usable; the agent answers its own latest version whatever was asked
/// (ACP version negotiation), so an unreadable one is read as that.
fn lenient_version(params: &Value) -> Value {
    let mut params = params.clone();
    if let Some(p) = params.as_object_mut() {
        let version = p.get("protocolVersion").map(|v| match v {
            Value::String(s) => s.trim().parse::<u16>().ok(),
            v => v.as_u64().and_then(|n| u16::try_from(n).ok()),
        });
        let version = version.flatten().map_or(PROTOCOL_VERSION, u64::from);
        p.insert("protocolVersion".into(), version.into());
    }
    params
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
        let config = Arc::new(config);
        Arc::new(AcpServer {
            // every turn is admitted and passes the stream boundary
            pipeline: Pipeline::new(agent, config.gateway.clone()),
            // where sessions and their histories are kept (a `MemoryStore` unless one was given)
            sessions: Sessions::new(config.clone(), store),
            config,
            requests: Mutex::new(HashMap::new()),
            approvals: AtomicU64::new(0),
            client: Mutex::new(acp::ClientCapabilities::default()),
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
                Incoming::Request { id, method, params } => self.start_request(&peer, &mut tasks, id, method, params),
                Incoming::Notification { method, params } => self.notification(&method, &params),
            }
            while tasks.try_join_next().is_some() {}
        }
        tracing::info!("client closed the connection: cancelling running turns");
        self.sessions.cancel_all();
        let drain = async { while tasks.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
        peer.close().await;
    }

    /// Starts answering one request on its own task, cancellable by `$/cancel_request`.
    fn start_request(self: &Arc<Self>, peer: &Peer, tasks: &mut JoinSet<()>, id: Value, method: String, params: Value) {
        let token = CancellationToken::new();
        let key = id.to_string();
        self.requests.lock().insert(key.clone(), token.clone());
        // the session's cancel count when the prompt arrived, read before the task runs
        let epoch = match method.parse() {
            Ok(Method::SessionPrompt) => params
                .get("sessionId")
                .and_then(Value::as_str)
                .and_then(|sid| self.sessions.get(sid))
                .map(|s| s.cancels.load(Ordering::SeqCst)),
            _ => None,
        };
        let (this, peer) = (self.clone(), peer.clone());
        tasks.spawn(async move {
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

    fn notification(&self, method: &str, params: &Value) {
        if method == Beyond::CancelRequest.as_str() {
            let Some(id) = cancelled_request(params).map(|id| id.to_string()) else {
                return tracing::debug!("$/cancel_request without a requestId");
            };
            if let Some(t) = self.requests.lock().get(&id).cloned() {
                tracing::info!(request = %id, "$/cancel_request");
                t.cancel();
            }
            return;
        }
        match method.parse() {
            Ok(AcpNotificationName::SessionCancel) => {
                let Ok(cancel) = read_params::<acp::CancelNotification>(params) else {
                    return tracing::debug!("session/cancel without a sessionId");
                };
                let sid = cancel.session_id.0.as_ref();
                match self.sessions.get(sid) {
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

    /// Answers one request: its params read into the official type of its method.
    async fn request(
        &self,
        peer: &Peer,
        id: Value,
        method: &str,
        params: &Value,
        cancel: CancellationToken,
        epoch: Option<u64>,
    ) -> Answer {
        if !matches!(params, Value::Object(_) | Value::Null) {
            return Err(RpcError::new(codes::INVALID_PARAMS, "params must be an object"));
        }
        if method == Beyond::SessionDelete.as_str() {
            return self.sessions.delete_session(read_params(params)?).await;
        }
        let Ok(known) = method.parse::<Method>() else {
            return Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ));
        };
        match known {
            Method::Initialize => self.initialize(read_params(&lenient_version(params))?),
            Method::Authenticate => {
                let req: acp::AuthenticateRequest = read_params(params)?;
                Err(RpcError::new(
                    codes::INVALID_PARAMS,
                    format!("unknown auth method `{}`: this agent declares none", req.method_id.0),
                ))
            }
            Method::SessionNew => self.sessions.new_session(peer, id, read_params(params)?).await,
            Method::SessionLoad => {
                let req: acp::LoadSessionRequest = read_params(params)?;
                self.sessions.reopen_session(peer, &req.session_id.0, true).await
            }
            Method::SessionResume => {
                let req: acp::ResumeSessionRequest = read_params(params)?;
                self.sessions.reopen_session(peer, &req.session_id.0, false).await
            }
            Method::SessionClose => self.sessions.close_session(read_params(params)?).await,
            Method::SessionList => self.sessions.list_sessions(read_params(params)?).await,
            Method::SessionPrompt => {
                let req: acp::PromptRequest = read_params(params)?;
                let response = self.prompt(peer, id, req, params, cancel, epoch).await?;
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
                self.sessions.set_mode(peer, read_params(params)?).await
            }
            Method::SessionSetConfigOption => self.sessions.set_config_option(read_params(params)?).await,
            _ => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    /// `initialize`: the reference's result ([`e2a::acp::results::initialize_result`]) with
    /// this agent's version and its session capabilities; the client's capabilities kept.
    fn initialize(&self, req: acp::InitializeRequest) -> Answer {
        tracing::info!(client_version = ?req.protocol_version, "initialize");
        *self.client.lock() = req.client_capabilities;
        let c = &self.config;
        let reference = e2a::acp::results::initialize_result(&c.name, &c.title, &c.version);
        let mut r: acp::InitializeResponse = serde_json::from_value(reference)
            .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("the initialize result: {e}")))?;
        // the latest version this agent supports (the client disconnects if it cannot speak it)
        r.protocol_version = agent_client_protocol_schema::ProtocolVersion::V1;
        r.agent_capabilities.session_capabilities = acp::SessionCapabilities::new()
            .list(acp::SessionListCapabilities::new())
            .resume(acp::SessionResumeCapabilities::new())
            .close(acp::SessionCloseCapabilities::new())
            .delete(acp::SessionDeleteCapabilities::new());
        answer(r)
    }
}
