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

use e2a::acp::stream::AcpStreamProjector;
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

use e2a::types::{AcpAgentToClientMethod as AgentMethod, AcpClientToAgentMethod as Method, AcpNotificationName};

use super::session::Session;
use crate::agent::{Agent, Caller, RequestContext};
use crate::jsonrpc::{codes, Incoming, Peer, RpcError};
use crate::pipeline::boundary::{self, Deadlines};

/// The ACP protocol version this agent speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The JSON-RPC extension notification that cancels one request (not an ACP method).
const CANCEL_REQUEST: &str = "$/cancel_request";

/// Most `session/update`s a session keeps for `session/load` (the oldest go first).
pub const MAX_HISTORY: usize = 10_000;

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
}

impl Default for AcpServerConfig {
    fn default() -> Self {
        AcpServerConfig {
            name: "e2a".into(),
            title: "E2A gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            deadlines: Deadlines::default(),
        }
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
    match <Cwd as serde::Deserialize>::deserialize(crate::object_deserializer(p)) {
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

enum Turn {
    /// The projector's `session/prompt` response: send it as is.
    Done(Value),
    /// The agent paused for approval: ask the client, then resume with the answer.
    Approval(String),
}

impl AcpServer {
    /// An ACP agent in front of `agent`.
    pub fn new(agent: Arc<dyn Agent>, config: AcpServerConfig) -> Arc<Self> {
        Arc::new(AcpServer {
            // every turn passes the stream boundary
            agent: Arc::new(boundary::Guarded::new(agent, config.deadlines)),
            config,
            sessions: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            approvals: AtomicU64::new(0),
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
        if method == CANCEL_REQUEST {
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

    fn add_session(&self, id: &str, cwd: String) -> Arc<Session> {
        let s = Session::new(cwd);
        self.sessions.lock().insert(id.to_string(), s.clone());
        s
    }

    /// `session/list`: the sessions (of `cwd`, when given), most recently updated first.
    fn list_sessions(&self, p: &Map<String, Value>) -> Value {
        let want_cwd = p.get("cwd").and_then(Value::as_str);
        let all: Vec<(String, Arc<Session>)> = self
            .sessions
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut listed: Vec<(String, String, String)> = all
            .into_iter()
            .filter(|(_, s)| want_cwd.is_none_or(|c| c == s.cwd))
            .map(|(k, s)| {
                let at = s.updated_at.lock().clone();
                (k, s.cwd.clone(), at)
            })
            .collect();
        listed.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        let mut result =
            e2a::acp::results::session_list_result_v1(listed.iter().map(|(k, c, _)| (k.as_str(), c.as_str())));
        if let Some(items) = result.get_mut("sessions").and_then(Value::as_array_mut) {
            for (item, (_, _, at)) in items.iter_mut().zip(&listed) {
                item["updatedAt"] = at.clone().into();
            }
        }
        result
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
                let sid = format!("sess_{}", uuid::Uuid::new_v4().simple());
                self.add_session(&sid, cwd);
                tracing::info!(session = %sid, "session/new");
                simple(e2a::acp::session_new_result(&sid))
            }
            Method::SessionLoad => {
                let sid = session_id_param(&p)?;
                let s = self
                    .session(&sid)
                    .ok_or_else(|| RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}")))?;
                let history = s.history.lock().clone();
                for update in history {
                    peer.send(update);
                }
                simple(json!({}))
            }
            Method::SessionResume => {
                let sid = session_id_param(&p)?;
                // an unknown id is refused: resuming must not make a session appear
                self.session(&sid)
                    .ok_or_else(|| RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}")))?;
                simple(json!({}))
            }
            Method::SessionClose => {
                let sid = session_id_param(&p)?;
                let removed = self.sessions.lock().remove(&sid);
                let s = removed
                    .ok_or_else(|| RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}")))?;
                s.cancel();
                simple(json!({}))
            }
            Method::SessionList => simple(self.list_sessions(&p)),
            Method::SessionPrompt => {
                let response = self.prompt(peer, id, p, cancel, epoch).await?;
                peer.send(response);
                Ok(None)
            }
            Method::SessionSetMode | Method::SessionSetConfigOption => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("{method}: the agent declares no modes or config options"),
            )),
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
        let c = &self.config;
        let mut r = e2a::acp::results::initialize_result(&c.name, &c.title, &c.version);
        // the latest version this agent supports (the client disconnects if it cannot speak it)
        r["protocolVersion"] = PROTOCOL_VERSION.into();
        r["agentCapabilities"]["sessionCapabilities"] = json!({"list": {}, "resume": {}, "close": {}});
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
        let session = self
            .session(&sid)
            .ok_or_else(|| RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}")))?;
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
            match self.run(peer, &session, &request, &mut projector, &turn_cancel).await {
                Turn::Done(response) => break response,
                Turn::Approval(question) => {
                    let answer = self.ask_permission(peer, &sid, &question, &turn_cancel).await;
                    match answer {
                        Some(text) => request = follow_up(&request, &text),
                        None => {
                            let frame = boundary::cutoff_frame(
                                &request,
                                0,
                                ErrorKind::Cancelled,
                                "the turn was cancelled",
                                Map::new(),
                            );
                            break self
                                .project(peer, &session, &mut projector, &frame)
                                .unwrap_or(Value::Null);
                        }
                    }
                }
            }
        };
        link.abort();
        *session.running.lock() = None;
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
        session.record(
            &json!({"jsonrpc": "2.0", "method": AgentMethod::SessionUpdate.as_str(), "params": {"sessionId": sid,
            "update": {"sessionUpdate": "user_message_chunk", "content": block}}}),
        );
    }
    let mut ingress = JsonRpcIngress::new(Method::SessionPrompt.as_str(), p);
    ingress.jsonrpc_id = e2a::acp::jsonrpc_id_from_value(id);
    ingress.session_id = Some(sid.to_string());
    ingress.channel = Some("acp".into());
    let mut request = envelope_from_jsonrpc(&ingress);
    if request.request_id.is_none() {
        request.request_id = Some(e2a::stream::new_id());
    }
    let paused = session.paused_task.lock().take();
    request.task_id = Some(paused.unwrap_or_else(|| format!("task_{}", uuid::Uuid::new_v4().simple())));
    request
}
