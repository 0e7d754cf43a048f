//! Stream invariants at the agent boundary.
//!
//! Every agent stream is watched by an [`e2a::stream::StreamValidator`] before a frame leaves
//! the gateway. A gap, a duplicate, a frame of another request, a second final frame, a frame
//! after the final one or a stream that ends without a final frame cuts the agent off: the
//! client gets an `e2a.error` final frame (`E2A.INVALID_AGENT_RESPONSE`) in place of the bad
//! frame, and a `warn` log line names the violation. Deadlines (idle and total), client
//! disconnects and shutdown end a run the same way, with `E2A.TIMEOUT` or `E2A.CANCELLED`; an
//! agent that panics gets `E2A.AGENT_ERROR` (the panic does not reach the server).

use std::sync::Arc;
use std::time::Duration;

use e2a::frame::{Frame, FrameBody};
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::taxonomy::ErrorKind;
use e2a::types::ErrorExposure;
use e2a::E2AEnvelope;
use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext};
/// A run's deadlines (part of the gateway's config).
pub use crate::config::Deadlines;
/// How a run stops from outside, and where the reason is recorded (kept with the agent's
/// request context).
pub use crate::stop::{StopCell, StopReason};

/// Guarded frames, each shared (the agent's, checked, and the gateway's cutoff frames).
pub use crate::agent::SharedFrames;

pub use crate::stop::cutoff_frame;
use crate::stop::cutoff_from;

/// An agent whose every stream passes the boundary ([`guard`]): what the pipeline runs, so
/// no binding can forget it.
pub struct Guarded {
    agent: Arc<dyn Agent>,
    deadlines: Deadlines,
    name: String,
    /// Whether a failed run's final error is told as the agent gave it.
    errors: ErrorExposure,
}

impl Guarded {
    /// `agent` behind the boundary, with `deadlines`; its errors told as it gives them.
    pub fn new(agent: Arc<dyn Agent>, deadlines: Deadlines) -> Self {
        let name = agent.name();
        Guarded {
            agent,
            deadlines,
            name,
            errors: ErrorExposure::Detail,
        }
    }

    /// The same boundary telling a failed run's callers what `errors` says ([`safe_error`]
    /// with `ErrorExposure::Safe`; `Auto` reads as `Detail` here: a config file resolves it by
    /// the address the gateway listens on).
    pub fn exposing(mut self, errors: ErrorExposure) -> Self {
        self.errors = errors;
        self
    }

    /// The agent's guarded frames on `request`, shared as the agent made them
    /// ([`Agent::run_shared`]): checked by reference, moved as pointers, kept by a run log as
    /// they are.
    pub(crate) fn run_guarded(&self, request: E2AEnvelope, mut ctx: RequestContext) -> SharedFrames {
        // the guard keeps what a cutoff frame echoes, not the request (which the agent takes)
        let template = ResponseStream::for_request(&request);
        // the agent's frames share the head (`RequestContext::frames_for`)
        ctx.head = Some(template.head().clone());
        let frames = self.agent.run_shared(request, ctx.clone());
        guarded(template, frames, ctx, self.deadlines, self.name.clone(), self.errors)
    }
}

/// A failed run's final frame as a caller is told it when details stay in the log: its code
/// and the fixed message of its kind (the error table's `safe_message`), no details. The agent's
/// or upstream's own text is logged (redacted) with the request and trace ids. A refusal keeps
/// its reason (the agent's words to the user); every other frame passes as it is.
pub fn safe_error(frame: Arc<Frame>, agent: &str) -> Arc<Frame> {
    if !frame.is_final {
        return frame;
    }
    let record = frame.to_record();
    let Some(kind) = ErrorKind::of_response(&record) else {
        return frame;
    };
    if e2a::stream::is_refusal(&record) {
        return frame;
    }
    let body = match record.typed_body() {
        Ok(e2a::ResponseBody::Error(b)) => Some(b),
        _ => None,
    };
    let said = body.as_ref().and_then(|b| b.message.as_deref()).unwrap_or_default();
    let details = body
        .as_ref()
        .and_then(|b| b.details.as_ref())
        .map(crate::json::text)
        .unwrap_or_default();
    tracing::warn!(
        request_id = frame.head.request_id.as_deref(),
        trace_id = frame.head.correlation_id.as_deref(),
        agent,
        code = kind.mapping().e2a_code,
        message = %e2a::redact::redact_tokens(said).unwrap_or_else(|| said.to_string()),
        details = %e2a::redact::redact_tokens(&details).unwrap_or(details),
        "run failed: the caller is told the safe message"
    );
    let code = body
        .as_ref()
        .and_then(|b| b.code.as_ref().and_then(Value::as_str))
        .unwrap_or(kind.mapping().e2a_code)
        .to_string();
    let mut told = Arc::unwrap_or_clone(frame);
    told.body = FrameBody::Error(e2a::types::ErrorBody::new(
        code,
        kind.mapping().safe_message,
        Map::new(),
    ));
    Arc::new(told)
}

impl Agent for Guarded {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        Box::pin(self.run_guarded(request, ctx).map(Arc::unwrap_or_clone))
    }

    fn run_shared(&self, request: E2AEnvelope, ctx: RequestContext) -> SharedFrames {
        self.run_guarded(request, ctx)
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn holds_pause(&self, key: &ConversationKey) -> Option<bool> {
        self.agent.holds_pause(key)
    }
}

enum Step {
    Frame(Option<Arc<Frame>>),
    Panicked,
    Stopped,
    Deadline,
    Idle,
}

/// Wraps an agent's stream (its shared frames, [`Agent::run_shared`]) so that what leaves the
/// gateway always keeps the stream invariants and always ends with exactly one final frame.
///
/// `ctx.stop` holds the reason when `ctx.cancel` is cancelled from outside (client gone,
/// shutdown).
pub fn guard(
    template: ResponseStream,
    agent: SharedFrames,
    ctx: RequestContext,
    deadlines: Deadlines,
    agent_name: String,
) -> SharedFrames {
    guarded(template, agent, ctx, deadlines, agent_name, ErrorExposure::Detail)
}

/// [`guard`], the agent's failures told as `errors` says ([`safe_error`] with `Safe`; the
/// guard's own cut-offs as they are).
fn guarded(
    template: ResponseStream,
    agent: SharedFrames,
    ctx: RequestContext,
    deadlines: Deadlines,
    agent_name: String,
    errors: ErrorExposure,
) -> SharedFrames {
    // boxed here: the guard moves with its stream as a pointer, not a kilobyte
    let template = Box::new(template);
    Box::pin(async_stream::stream! {
        let mut agent = agent;
        let mut g = Guard::new(template, ctx, deadlines, agent_name);
        g.safe_errors = errors == ErrorExposure::Safe;
        loop {
            let step = g.step(&mut agent).await;
            match g.handle(step) {
                Next::Send(f) => yield f,
                Next::Hold => {}
                Next::End(Some(f)) => {
                    yield f;
                    return;
                }
                Next::End(None) => return,
            }
        }
    })
}

/// What the guard does after a step.
enum Next {
    /// Forward the frame and go on.
    Send(Arc<Frame>),
    /// Go on (the final frame is held until the agent's stream ends).
    Hold,
    /// Forward the frame (if any) and end.
    End(Option<Arc<Frame>>),
}

/// The state of one guarded stream.
struct Guard {
    /// The frame template of the request (what a cutoff frame echoes).
    template: Box<ResponseStream>,
    request_id: Option<String>,
    ctx: RequestContext,
    deadlines: Deadlines,
    agent: String,
    validator: StreamValidator,
    /// The sequence the next frame should have.
    next: u64,
    held_final: Option<Arc<Frame>>,
    total: Instant,
    /// The agent's final error told as [`safe_error`] says.
    safe_errors: bool,
}

impl Guard {
    fn new(template: Box<ResponseStream>, ctx: RequestContext, deadlines: Deadlines, agent: String) -> Self {
        let total = ctx.deadline.unwrap_or_else(|| far_future(Instant::now()));
        Guard {
            request_id: template.request_id().map(str::to_string),
            template,
            ctx,
            deadlines,
            agent,
            validator: StreamValidator::new(),
            next: 0,
            held_final: None,
            total,
            safe_errors: false,
        }
    }

    /// Waits for the agent's next frame, or whatever comes first: a cancel, the total deadline,
    /// the idle deadline (or the grace after a held final frame).
    async fn step(&mut self, agent: &mut SharedFrames) -> Step {
        // one reading of the clock per frame
        let now = Instant::now();
        let idle_at = match (&self.held_final, self.deadlines.idle) {
            (Some(_), _) => now + self.deadlines.final_grace,
            (None, Some(idle)) => now + idle,
            (None, None) => far_future(now),
        };
        // Checked before every frame, so an agent that never waits is still stopped; the
        // timers are only armed while the agent is waiting (a ready frame costs none).
        let step = if self.ctx.cancel.is_cancelled() {
            Step::Stopped
        } else if now >= self.total {
            Step::Deadline
        } else {
            let wake = idle_at.min(self.total);
            tokio::select! {
                biased;
                f = std::panic::AssertUnwindSafe(agent.next()).catch_unwind() => match f {
                    Ok(f) => Step::Frame(f),
                    Err(_) => Step::Panicked,
                },
                _ = self.ctx.cancel.cancelled() => Step::Stopped,
                _ = tokio::time::sleep_until(wake) => if wake >= self.total { Step::Deadline } else { Step::Idle },
            }
        };
        // an agent that ends its stream because it was cancelled was stopped, not broken
        match step {
            Step::Frame(None) if self.held_final.is_none() && self.ctx.cancel.is_cancelled() => Step::Stopped,
            other => other,
        }
    }

    /// The cutoff frame of `kind` at the next sequence (where a held final frame would have
    /// been), logged.
    fn cut(&mut self, kind: ErrorKind, message: &str, details: Map<String, Value>) -> Next {
        if let Some(h) = self.held_final.take() {
            // the held final frame was never sent: the error frame replaces it
            self.next = h.sequence;
        }
        Next::End(Some(Arc::new(cutoff_from(
            (*self.template).clone(),
            self.next,
            kind,
            message,
            details,
        ))))
    }

    fn handle(&mut self, step: Step) -> Next {
        match step {
            // the common case first; the others log the request and the agent (borrowed only
            // for the log line)
            Step::Frame(Some(frame)) => self.frame(frame),
            // the agent kept its stream open after the final frame: forward the final
            Step::Stopped | Step::Idle if self.held_final.is_some() => Next::End(self.held_final.take()),
            Step::Panicked => {
                self.ctx.cancel.cancel();
                tracing::error!(request_id = self.request_id.as_deref(), agent = %self.agent, "agent panicked: cut off");
                self.cut(
                    ErrorKind::AgentError,
                    "the agent failed (it panicked)",
                    details(&[("panicked", true.into())]),
                )
            }
            Step::Stopped => {
                let (message, reason) = match self.ctx.stop.get() {
                    Some(StopReason::Shutdown) => ("the gateway is shutting down", "shutdown"),
                    Some(StopReason::Cancelled) => ("the run was cancelled by its caller", "cancelled"),
                    _ => ("the client went away", "client_gone"),
                };
                tracing::info!(request_id = self.request_id.as_deref(), agent = %self.agent, reason, "run cancelled");
                self.cut(ErrorKind::Cancelled, message, details(&[("reason", reason.into())]))
            }
            Step::Deadline => {
                self.ctx.cancel.cancel();
                tracing::warn!(request_id = self.request_id.as_deref(), agent = %self.agent, "run exceeded its total deadline");
                let d = details(&[("deadline", "total".into())]);
                self.cut(ErrorKind::Timeout, "the run exceeded its total deadline", d)
            }
            Step::Idle => {
                self.ctx.cancel.cancel();
                let secs = self.deadlines.idle.map(|d| d.as_secs_f64()).unwrap_or_default();
                tracing::warn!(request_id = self.request_id.as_deref(), agent = %self.agent, idle_secs = secs, "agent idle past its deadline");
                let d = details(&[("deadline", "idle".into()), ("seconds", secs.into())]);
                self.cut(
                    ErrorKind::Timeout,
                    "the agent sent no frame within the idle deadline",
                    d,
                )
            }
            Step::Frame(None) => match self.held_final.take() {
                Some(f) => Next::End(Some(f)),
                None => {
                    let violation = "stream ended without a final frame";
                    tracing::warn!(request_id = self.request_id.as_deref(), agent = %self.agent, violation, "agent cut off");
                    let message = format!("agent broke the stream invariants: {violation}");
                    let d = details(&[("violation", "missing_final".into())]);
                    self.cut(ErrorKind::InvalidAgentResponse, &message, d)
                }
            },
        }
    }

    /// A frame of the agent: checked; forwarded, held (a final one) or replaced by a cutoff.
    fn frame(&mut self, frame: Arc<Frame>) -> Next {
        let before = self.validator.violations().len();
        let foreign = frame.head.request_id != self.request_id;
        self.validator.observe(&*frame);
        let found: Vec<String> = if foreign {
            vec!["frame of another request".to_string()]
        } else {
            self.validator.violations()[before..]
                .iter()
                .map(|v| v.kind.to_string())
                .collect()
        };
        if !found.is_empty() {
            self.ctx.cancel.cancel();
            let violation = found.join("; ");
            tracing::warn!(request_id = self.request_id.as_deref(), agent = %self.agent,
                sequence = frame.sequence, violation = %violation, "agent cut off");
            let message = format!("agent broke the stream invariants: {violation}");
            let d = details(&[("violation", violation.into()), ("sequence", frame.sequence.into())]);
            return self.cut(ErrorKind::InvalidAgentResponse, &message, d);
        }
        self.next = frame.sequence.saturating_add(1);
        if frame.is_final {
            let frame = if self.safe_errors {
                safe_error(frame, &self.agent)
            } else {
                frame
            };
            self.held_final = Some(frame);
            Next::Hold
        } else {
            Next::Send(frame)
        }
    }
}

/// A time no run reaches (a year from `now`).
fn far_future(now: Instant) -> Instant {
    now + Duration::from_secs(86_400 * 365)
}

/// An error frame's `details`.
pub(crate) fn details(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect()
}
