//! Stream invariants at the agent boundary.
//!
//! Every agent stream is watched by an [`e2a::stream::StreamValidator`] before a frame leaves
//! the gateway. A gap, a duplicate, a frame of another request, a second final frame, a frame
//! after the final one or a stream that ends without a final frame cuts the agent off: the
//! client gets an `e2a.error` final frame (`E2A.INVALID_AGENT_RESPONSE`) in place of the bad
//! frame, and a `warn` log line names the violation. Deadlines (idle and total), client
//! disconnects and shutdown end a run the same way, with `E2A.TIMEOUT` or `E2A.CANCELLED`; an
//! agent that panics gets `E2A.AGENT_ERROR` (the panic does not reach the server).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use e2a::stream::{ResponseStream, StreamValidator};
use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, E2AResponse};
use futures_util::{FutureExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::agent::{Agent, FrameStream, RequestContext};

/// Why the gateway stopped a run from outside (the reason the `e2a.error` frame gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Every client of the run went away.
    ClientGone,
    /// The gateway is shutting down and the drain deadline passed.
    Shutdown,
}

/// Where the reason for a cancellation is recorded before the run's token is cancelled.
pub type StopCell = Arc<OnceLock<StopReason>>;

/// How long a run may take and how long it may stay silent.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// Longest time between two frames of the agent (`None`: no idle deadline).
    pub idle: Option<Duration>,
    /// How long the gateway waits, after a final frame, for the agent's stream to end before
    /// it forwards the final frame and drops the stream (a frame in that time is a second
    /// final or a frame after the final one, and cuts the agent off).
    pub final_grace: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            idle: Some(Duration::from_secs(120)),
            final_grace: Duration::from_millis(200),
        }
    }
}

/// The final frame a run gets when the gateway ends it: `e2a.error` with the taxonomy code of
/// `kind`, at sequence `sequence`, echoing the request's correlation fields.
pub fn cutoff_frame(
    request: &E2AEnvelope,
    sequence: u64,
    kind: ErrorKind,
    message: &str,
    details: Map<String, Value>,
) -> E2AResponse {
    let mut frame = ResponseStream::for_request(request).fail(kind.mapping().e2a_code, message, details);
    frame.sequence = sequence;
    frame
}

/// An agent whose every stream passes the boundary ([`guard`]): what the pipeline runs, so
/// no binding can forget it.
pub struct Guarded {
    agent: Arc<dyn Agent>,
    deadlines: Deadlines,
    name: String,
}

impl Guarded {
    /// `agent` behind the boundary, with `deadlines`.
    pub fn new(agent: Arc<dyn Agent>, deadlines: Deadlines) -> Self {
        let name = agent.name();
        Guarded { agent, deadlines, name }
    }
}

impl Agent for Guarded {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let frames = self.agent.run(request.clone(), ctx.clone());
        guard(request, frames, ctx, self.deadlines, self.name.clone())
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

enum Step {
    Frame(Option<Box<E2AResponse>>),
    Panicked,
    Stopped,
    Deadline,
    Idle,
}

/// Wraps an agent's stream so that what leaves the gateway always keeps the stream invariants
/// and always ends with exactly one final frame.
///
/// `ctx.stop` holds the reason when `ctx.cancel` is cancelled from outside (client gone,
/// shutdown).
pub fn guard(
    request: E2AEnvelope,
    agent: FrameStream,
    ctx: RequestContext,
    deadlines: Deadlines,
    agent_name: String,
) -> FrameStream {
    let stop = ctx.stop.clone();
    Box::pin(async_stream::stream! {
        let mut agent = agent;
        let mut validator = StreamValidator::new();
        let mut next: u64 = 0;
        let mut held_final: Option<E2AResponse> = None;
        let request_id = request.request_id.clone();
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let total = ctx.deadline.unwrap_or(far);
        loop {
            let idle_at = match (&held_final, deadlines.idle) {
                (Some(_), _) => Instant::now() + deadlines.final_grace,
                (None, Some(idle)) => Instant::now() + idle,
                (None, None) => far,
            };
            // Checked before every frame, so an agent that never waits is still stopped; the
            // timers are only armed while the agent is waiting (a ready frame costs none).
            let step = if ctx.cancel.is_cancelled() {
                Step::Stopped
            } else if Instant::now() >= total {
                Step::Deadline
            } else {
                let wake = idle_at.min(total);
                tokio::select! {
                    biased;
                    f = std::panic::AssertUnwindSafe(agent.next()).catch_unwind() => match f {
                        Ok(f) => Step::Frame(f.map(Box::new)),
                        Err(_) => Step::Panicked,
                    },
                    _ = ctx.cancel.cancelled() => Step::Stopped,
                    _ = tokio::time::sleep_until(wake) => if wake >= total { Step::Deadline } else { Step::Idle },
                }
            };
            // an agent that ends its stream because it was cancelled was stopped, not broken
            let step = match step {
                Step::Frame(None) if held_final.is_none() && ctx.cancel.is_cancelled() => Step::Stopped,
                other => other,
            };
            match step {
                Step::Stopped | Step::Idle if held_final.is_some() => {
                    // the agent kept its stream open after the final frame: forward the final
                    if let Some(f) = held_final.take() {
                        yield f;
                    }
                    return;
                }
                Step::Panicked => {
                    ctx.cancel.cancel();
                    tracing::error!(request_id = request_id.as_deref(), agent = %agent_name, "agent panicked: cut off");
                    if let Some(h) = held_final.take() {
                        next = h.sequence;
                    }
                    yield cutoff_frame(&request, next, ErrorKind::AgentError, "the agent failed (it panicked)", obj(json!({"panicked": true})));
                    return;
                }
                Step::Stopped => {
                    let (message, reason) = match stop.get() {
                        Some(StopReason::Shutdown) => ("the gateway is shutting down", "shutdown"),
                        _ => ("the client went away", "client_gone"),
                    };
                    tracing::info!(request_id = request_id.as_deref(), agent = %agent_name, reason, "run cancelled");
                    yield cutoff_frame(&request, next, ErrorKind::Cancelled, message, obj(json!({"reason": reason})));
                    return;
                }
                Step::Deadline => {
                    ctx.cancel.cancel();
                    tracing::warn!(request_id = request_id.as_deref(), agent = %agent_name, "run exceeded its total deadline");
                    yield cutoff_frame(&request, next, ErrorKind::Timeout, "the run exceeded its total deadline", obj(json!({"deadline": "total"})));
                    return;
                }
                Step::Idle => {
                    ctx.cancel.cancel();
                    let secs = deadlines.idle.map(|d| d.as_secs_f64()).unwrap_or_default();
                    tracing::warn!(request_id = request_id.as_deref(), agent = %agent_name, idle_secs = secs, "agent idle past its deadline");
                    yield cutoff_frame(&request, next, ErrorKind::Timeout, "the agent sent no frame within the idle deadline", obj(json!({"deadline": "idle", "seconds": secs})));
                    return;
                }
                Step::Frame(None) => {
                    if let Some(f) = held_final.take() {
                        yield f;
                    } else {
                        let violation = "stream ended without a final frame";
                        tracing::warn!(request_id = request_id.as_deref(), agent = %agent_name, violation, "agent cut off");
                        yield cutoff_frame(&request, next, ErrorKind::InvalidAgentResponse, &format!("agent broke the stream invariants: {violation}"), obj(json!({"violation": "missing_final"})));
                    }
                    return;
                }
                Step::Frame(Some(frame)) => {
                    let before = validator.violations().len();
                    let foreign = frame.request_id != request_id;
                    validator.push(&frame);
                    let found: Vec<String> = if foreign {
                        vec!["frame of another request".to_string()]
                    } else {
                        validator.violations()[before..].iter().map(|v| v.kind.to_string()).collect()
                    };
                    if !found.is_empty() {
                        ctx.cancel.cancel();
                        if let Some(h) = held_final.take() {
                            // the held final frame was never sent: the error frame replaces it
                            next = h.sequence;
                        }
                        let violation = found.join("; ");
                        tracing::warn!(request_id = request_id.as_deref(), agent = %agent_name, sequence = frame.sequence, violation = %violation, "agent cut off");
                        yield cutoff_frame(&request, next,
                            ErrorKind::InvalidAgentResponse,
                            &format!("agent broke the stream invariants: {violation}"),
                            obj(json!({"violation": violation, "sequence": frame.sequence})),
                        );
                        return;
                    }
                    next = frame.sequence.saturating_add(1);
                    if frame.is_final {
                        held_final = Some(*frame);
                    } else {
                        yield *frame;
                    }
                }
            }
        }
    })
}

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
