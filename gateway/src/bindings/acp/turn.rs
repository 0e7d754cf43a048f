//! A `session/prompt` turn of `e2a acp`: protocol → E2A → agent → E2A → protocol.
//!
//! The request becomes an envelope through [`e2a::acp::envelope_from_jsonrpc`] (the
//! reference's reading of a prompt), the turn is admitted by the gateway's [`Pipeline`]
//! (a stream permit held for the turn, the boundary, metrics, the frame log) and
//! [`AcpStreamProjector`] turns the agent's frames into the `session/update` notifications and
//! the `session/prompt` response that are sent, unchanged.
//!
//! A pause of the agent for approval (`plan.approval_required` with `input_kind: approval`)
//! becomes a `session/request_permission` request to the client; its answer is sent to the
//! agent as the follow-up of the same session (`yes` / `no`) and the turn goes on. A pause for
//! input is asked with `elicitation/create` when the client fills forms; otherwise it ends the
//! turn after showing the question, and the next prompt of the session answers it.
//!
//! [`Pipeline`]: crate::pipeline::Pipeline

use std::sync::atomic::Ordering;

use agent_client_protocol_schema::v1 as acp;
use e2a::acp::stream::AcpStreamProjector;
use e2a::acp::{envelope_from_jsonrpc, JsonRpcIngress};
use e2a::frame::{Frame, Projector};
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{
    AcpAgentToClientMethod as AgentMethod, AcpClientToAgentMethod as Method, AcpMethodBeyondReference as Beyond,
    PauseKind, ResponseKind,
};
use e2a::{E2AEnvelope, ResponseBody};
use futures_util::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::lifecycle::session_update;
use super::server::AcpServer;
use super::session::Session;
use crate::agent::Caller;
use crate::pipeline::{boundary, Admission};
use crate::protocol::acp::{codes, Peer, RpcError};

/// The `channel_context` key under which every turn's envelope carries the session's set-up:
/// `{cwd, mcpServers, modeId?, configOptions: {id: value}}`.
pub const SESSION_CONTEXT_KEY: &str = "acp_session";

/// What every turn's envelope carries under [`SESSION_CONTEXT_KEY`].
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionContext<'a> {
    cwd: &'a str,
    mcp_servers: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    mode_id: Option<String>,
    config_options: Map<String, Value>,
}

/// How one run of a turn ended.
enum Turn {
    /// The projector's `session/prompt` response: send it as is.
    Done(Value),
    /// The agent paused for approval: ask the client, then resume with the answer.
    Approval(String),
    /// The agent paused with a question and the client fills forms: ask it with
    /// `elicitation/create`, then resume with the answer.
    Question(String),
}

/// What a turn sends to the editor: the session, its projector, its cancellation.
struct Turning<'a> {
    peer: &'a Peer,
    session: &'a Session,
    projector: AcpStreamProjector,
    cancel: CancellationToken,
}

impl Turning<'_> {
    /// Pushes a frame through the projector, sends the updates; returns the final response.
    fn project(&mut self, frame: &Frame) -> Option<Value> {
        let mut last = None;
        for mut msg in self.projector.push(frame) {
            // what the agent said may carry a credential: never to the editor as is
            e2a::redact::redact_outbound(&mut msg);
            match msg
                .get("method")
                .map(|m| m.as_str() == Some(AgentMethod::SessionUpdate.as_str()))
            {
                Some(update) => {
                    if update {
                        self.session.record(&msg);
                    }
                    self.peer.send(msg);
                }
                None => last = Some(msg),
            }
        }
        last
    }

    /// The turn ends with `kind`: the cut-off frame projected, its response returned.
    fn cut_off(&mut self, request: &E2AEnvelope, sequence: u64, kind: ErrorKind, message: &str) -> Option<Value> {
        let frame = boundary::cutoff_frame(request, sequence, kind, message, Map::new());
        self.project(&frame)
    }
}

impl AcpServer {
    /// Runs one `session/prompt` turn (`req` read from `params`); returns the JSON-RPC
    /// response to send.
    pub(super) async fn prompt(
        &self,
        peer: &Peer,
        id: Value,
        req: acp::PromptRequest,
        params: &Value,
        request_cancel: CancellationToken,
        epoch: Option<u64>,
    ) -> Result<Value, RpcError> {
        let sid = req.session_id.0.to_string();
        let session = self.sessions.open_session(&sid)?;
        let _turn = session.turn.lock().await;
        let mut admission = self
            .pipeline
            .admit(Caller::named("acp-client"), crate::pipeline::Via::Acp)
            .map_err(|refusal| {
                let mut e = RpcError::new(codes::INTERNAL_ERROR, refusal.message());
                e.data = serde_json::to_value(std::collections::BTreeMap::from([(
                    "retryAfterSecs",
                    self.pipeline.retry_after(),
                )]))
                .ok();
                e
            })?;
        let turn_cancel = CancellationToken::new();
        admission.ctx.cancel = turn_cancel.child_token();
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
        let mut request = turn_request(&session, &sid, &id, &req, params, self.config.workspace_dir.as_deref());
        let mut turning = Turning {
            peer,
            session: &session,
            projector: AcpStreamProjector::new(sid.clone(), request.jsonrpc_id.clone()),
            cancel: turn_cancel,
        };
        let result = loop {
            let answer = match self.run(&admission, &mut turning, &request).await {
                Turn::Done(response) => break response,
                Turn::Approval(question) => self.ask_permission(peer, &sid, &question, &turning.cancel).await,
                Turn::Question(question) => ask_form(peer, &sid, &question, &turning.cancel).await,
            };
            match answer {
                Some(text) => request = follow_up(&request, &text),
                None => {
                    break turning
                        .cut_off(&request, 0, ErrorKind::Cancelled, "the turn was cancelled")
                        .unwrap_or(Value::Null)
                }
            }
        };
        link.abort();
        drop(admission);
        *session.running.lock() = None;
        if let Err(e) = self.sessions.persist(&sid, &session).await {
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

    /// One run of the turn's agent on `request`, through the pipeline.
    async fn run(&self, admission: &Admission, turning: &mut Turning<'_>, request: &E2AEnvelope) -> Turn {
        let mut frames = admission.run(request.clone());
        // the pause's questions (one per `plan.approval_required` frame), asked together
        let mut pause: Option<(PauseKind, String)> = None;
        let cancelled = |t: &Turning<'_>| t.cancel.is_cancelled();
        while let Some(frame) = frames.next().await {
            if frame.response_kind == ResponseKind::PlanApprovalRequired {
                if let Ok(ResponseBody::PlanApprovalRequired(b)) = frame.to_record().typed_body() {
                    let question = b.plan_content.unwrap_or_else(|| "The agent asks for approval".into());
                    let kind = b.input_kind.unwrap_or(PauseKind::Approval);
                    pause = Some(match pause.take() {
                        // an approval among the questions asks for approval of them all
                        Some((k, asked)) => (
                            if k == PauseKind::Approval { k } else { kind },
                            format!("{asked}\n{question}"),
                        ),
                        None => (kind, question),
                    });
                }
            }
            let completes = frame.response_kind == ResponseKind::E2aComplete;
            if frame.is_final && completes {
                if let Some((kind, question)) = pause.take() {
                    if kind == PauseKind::Approval && !cancelled(turning) {
                        return Turn::Approval(question);
                    }
                    if self.fills_forms() && !cancelled(turning) {
                        return Turn::Question(question);
                    }
                    // input pause: show the question; the next prompt of the session answers it
                    turning.session.paused_task.lock().clone_from(&request.task_id);
                    let shown = ResponseStream::for_request(request).text(&question);
                    turning.project(&shown);
                }
            }
            // ACP: once the client cancelled, the turn ends with stopReason cancelled whatever
            // error the cancellation caused (an agent stopping without a final frame included)
            let done = if frame.is_final && cancelled(turning) && !completes {
                turning.cut_off(request, frame.sequence, ErrorKind::Cancelled, "the turn was cancelled")
            } else {
                turning.project(&frame)
            };
            if let Some(done) = done {
                return Turn::Done(done);
            }
            if frame.is_final {
                break;
            }
        }
        let done = turning.cut_off(request, 0, ErrorKind::AgentError, "the agent ended without an answer");
        Turn::Done(done.unwrap_or_else(|| {
            let end = acp::PromptResponse::new(acp::StopReason::EndTurn);
            let result = serde_json::to_value(end).unwrap_or_default();
            Value::Object(Map::from_iter([
                ("jsonrpc".into(), "2.0".into()),
                ("id".into(), Value::Null),
                ("result".into(), result),
            ]))
        }))
    }

    /// True when the client declared form elicitation (`clientCapabilities.elicitation.form`).
    fn fills_forms(&self) -> bool {
        self.client
            .lock()
            .elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some())
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
        let tool_call = acp::ToolCallUpdate::new(
            format!("approval-{n}"),
            acp::ToolCallUpdateFields::new()
                .title(question.to_string())
                .kind(acp::ToolKind::Other)
                .status(acp::ToolCallStatus::Pending)
                .content(vec![acp::ToolCallContent::from(question.to_string())]),
        );
        let options = vec![
            acp::PermissionOption::new("allow", "Allow", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new("reject", "Reject", acp::PermissionOptionKind::RejectOnce),
        ];
        let params = acp::RequestPermissionRequest::new(sid.to_string(), tool_call, options);
        let response: Result<acp::RequestPermissionResponse, _> =
            ask(peer, AgentMethod::SessionRequestPermission.as_str(), params, cancel).await?;
        match response.map(|r| r.outcome) {
            Ok(acp::RequestPermissionOutcome::Selected(s)) if &*s.option_id.0 == "allow" => Some("yes".into()),
            Ok(acp::RequestPermissionOutcome::Selected(_)) => Some("no".into()),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "session/request_permission failed: treated as a denial");
                Some("no".into())
            }
        }
    }
}

/// Sends the request `method` with `params` to the editor and reads its answer as `T`; `None`
/// when the turn is cancelled before the answer comes.
async fn ask<T: serde::de::DeserializeOwned>(
    peer: &Peer,
    method: &str,
    params: impl serde::Serialize,
    cancel: &CancellationToken,
) -> Option<Result<T, RpcError>> {
    let (_, answer) = peer.request(method, serde_json::to_value(params).unwrap_or_default());
    let outcome = tokio::select! {
        a = answer => a,
        _ = cancel.cancelled() => return None,
    };
    Some(
        outcome
            .and_then(|r| serde_json::from_value(r).map_err(|e| RpcError::new(codes::INVALID_PARAMS, e.to_string()))),
    )
}

/// Asks the question with `elicitation/create` (a form of one text field); `Some(answer)`
/// when the user accepted, `None` when they declined or cancelled, or the turn was.
async fn ask_form(peer: &Peer, sid: &str, question: &str, cancel: &CancellationToken) -> Option<String> {
    let schema = acp::ElicitationSchema::new().property(
        "answer",
        acp::StringPropertySchema::new().title("Answer".to_string()),
        true,
    );
    let mode = acp::ElicitationFormMode::new(acp::ElicitationSessionScope::new(sid.to_string()), schema);
    let params = acp::CreateElicitationRequest::new(acp::ElicitationMode::Form(mode), question);
    let response: Result<acp::CreateElicitationResponse, _> =
        ask(peer, Beyond::ElicitationCreate.as_str(), params, cancel).await?;
    match response.map(|r| r.action) {
        Ok(acp::ElicitationAction::Accept(accepted)) => {
            let value = accepted.content.and_then(|mut c| c.remove("answer"));
            Some(match value {
                None => String::new(),
                Some(acp::ElicitationContentValue::String(s)) => s,
                Some(other) => serde_json::to_value(other).map(|v| v.to_string()).unwrap_or_default(),
            })
        }
        Ok(action) => {
            tracing::info!(action = ?action, "the question was not answered: the turn ends");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "elicitation/create failed: the turn ends");
            None
        }
    }
}

/// The follow-up of a paused run: same session, the answer as the prompt.
fn follow_up(request: &E2AEnvelope, answer: &str) -> E2AEnvelope {
    let mut next = request.clone();
    let prompt = vec![acp::ContentBlock::from(answer.to_string())];
    next.params = Map::from_iter([("prompt".into(), serde_json::to_value(prompt).unwrap_or_default())]);
    next.request_id = Some(e2a::stream::new_id());
    next
}

/// The E2A request of a `session/prompt` turn (its blocks recorded in the session's replay):
/// every turn is an E2A task, and a turn that ended in an input pause is continued by the next.
/// The envelope is the reference's reading of the request's `params` as they came, with
/// `workspace_dir` when they name none.
fn turn_request(
    session: &Session,
    sid: &str,
    id: &Value,
    req: &acp::PromptRequest,
    params: &Value,
    workspace_dir: Option<&str>,
) -> E2AEnvelope {
    for block in &req.prompt {
        let chunk = acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(block.clone()));
        session.record(&session_update(sid, chunk));
    }
    let meta = req.meta.clone().map(Value::Object);
    let trace = crate::web::trace::TraceContext::from_meta(meta.as_ref());
    let mut params = params.as_object().cloned().unwrap_or_default();
    if let Some(dir) = workspace_dir {
        params.entry("workspace_dir").or_insert_with(|| dir.into());
    }
    let mut ingress = JsonRpcIngress::new(Method::SessionPrompt.as_str(), params);
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
    let state = SessionContext {
        cwd: &session.cwd,
        mcp_servers: &session.mcp_servers,
        mode_id: session.mode.lock().clone(),
        config_options: session
            .config
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect(),
    };
    let state = serde_json::to_value(state).unwrap_or_default();
    request.channel_context.insert(SESSION_CONTEXT_KEY.into(), state);
    request
}
