//! The run pipeline every binding uses: admission — the drain check, a stream permit, the
//! run's deadline, its caller and cancellation — then the agent behind the stream
//! [`boundary`] ([`boundary::Guarded`]), so no binding can run an agent unguarded.
//!
//! ```text
//! binding ── decode ──> Pipeline::admit(caller) ──> Admission::run(request) ──> guarded frames
//!    ^                        │ Refusal (draining, busy)                              │
//!    └──── encode (the protocol's own form) <─────────────────────────────────────────┘
//! ```

pub mod boundary;

use std::sync::Arc;

use e2a::E2AEnvelope;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::agent::{Agent, Caller, RequestContext};
use crate::config::GatewayConfig;
use crate::runs::Runs;
use boundary::SharedFrames;

/// What the bindings of one gateway share: the guarded agent, the configuration, the runs.
pub(crate) struct Pipeline {
    /// The agent new runs start on (swapped by a reload, [`Pipeline::set_agent`]).
    agent: parking_lot::RwLock<Arc<boundary::Guarded>>,
    pub(crate) config: GatewayConfig,
    pub(crate) runs: Arc<Runs>,
    streams: Arc<Semaphore>,
    /// Where its requests, frames and store operations are counted.
    pub(crate) metrics: Arc<crate::web::metrics::MetricsHandle>,
}

/// The binding a run came through (its name in metrics and on the inspector page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// The E2A HTTP binding.
    E2a,
    /// A2A (JSON-RPC, HTTP+JSON, gRPC).
    A2a,
    /// AG-UI.
    Agui,
    /// ACP (`e2a acp`).
    Acp,
}

impl Via {
    /// Its name: `e2a`, `a2a`, `agui`, `acp`.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Via::E2a => "e2a",
            Via::A2a => "a2a",
            Via::Agui => "agui",
            Via::Acp => "acp",
        }
    }
}

/// Why a run was not admitted; a binding answers it in its protocol's form (`503` with
/// `Retry-After` on HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The gateway is shutting down.
    Draining,
    /// Every stream permit is taken.
    Busy,
}

impl Refusal {
    /// What a client is told.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Refusal::Draining => "the gateway is shutting down; retry later",
            Refusal::Busy => "too many open streams; retry later",
        }
    }
}

/// An admitted run, before its agent starts: its context (cancellation, deadline, caller) and
/// the stream permit it holds until it ends.
pub(crate) struct Admission {
    /// The run's context.
    pub(crate) ctx: RequestContext,
    agent: Arc<boundary::Guarded>,
    permit: OwnedSemaphorePermit,
    counted: Arc<crate::web::metrics::AgentMetrics>,
    frame_log: Option<crate::frame_log::FrameLog>,
    /// The binding it came through (what the inspector page shows).
    binding: &'static str,
    /// Where the inspector reads what the gateway keeps of the run: its frames once it is
    /// named ([`Admission::for_run`]), its task's events ([`Admission::keep_in`]).
    kept: Option<crate::web::activity::KeptFrames>,
    runs: Arc<Runs>,
    /// The trace of the request that asked for it (an A2A task's turn runs outside it).
    trace_id: Option<Arc<str>>,
}

impl Admission {
    /// Starts the agent on `request`, with who asked written into it ([`Caller::stamp`]): its
    /// guarded frames.
    pub(crate) fn run(&self, mut request: E2AEnvelope) -> SharedFrames {
        self.ctx.caller.stamp(&mut request);
        let span = tracing::debug_span!(
            "agent.run",
            e2a.agent = self.counted.agent(),
            e2a.request_id = request.request_id.as_deref(),
            e2a.correlation_id = request.correlation_id.as_deref(),
            e2a.session_id = request.session_id.as_deref(),
            e2a.caller = self.ctx.caller.subject.as_deref(),
        );
        let watched = self.watched(&request);
        let frames = span.in_scope(|| self.agent.run_guarded(request, self.ctx.clone()));
        let frames = crate::web::trace::InSpan { inner: frames, span };
        let mut counter = crate::web::metrics::FrameCounter::new(self.counted.clone());
        let log = self.frame_log.clone();
        let frames = futures_util::StreamExt::inspect(frames, move |f| {
            counter.count(f);
            if let Some(log) = &log {
                log.write(f);
            }
        });
        match watched {
            None => Box::pin(frames),
            Some(watched) => Box::pin(watched.around(frames)),
        }
    }

    /// The run's record on the inspector page, when it is served.
    fn watched(&self, request: &E2AEnvelope) -> Option<crate::web::activity::Recorded> {
        let activity = self.counted.metrics().activity.clone();
        if !activity.is_on() {
            return None;
        }
        let run = activity.start(crate::web::activity::Started {
            agent: self.counted.agent().into(),
            binding: self.binding,
            caller: self.ctx.caller.subject.clone(),
            request_id: request.request_id.clone(),
            session_id: request.session_id.clone(),
            trace_id: self.trace_id.clone(),
            kept: self.kept.clone(),
        })?;
        Some(crate::web::activity::Recorded { activity, run })
    }

    /// Names the run this admission starts (its key in the run registry): what the agent's
    /// context says ([`RequestContext`]'s run), before [`Admission::run`].
    pub(crate) fn for_run(&mut self, key: &crate::agent::ConversationKey) {
        self.ctx.run = Some(key.scoped_id().into());
        if self.counted.metrics().activity.is_on() {
            let (runs, key) = (self.runs.clone(), key.clone());
            self.kept = Some(Arc::new(move || {
                let (runs, key) = (runs.clone(), key.clone());
                Box::pin(async move {
                    let held = match runs.resume(&key, None).await {
                        Ok(Some(mut sub)) => sub.held_now().await,
                        _ => Vec::new(),
                    };
                    crate::web::activity::Kept::Frames(held)
                })
            }));
        }
    }

    /// Where the inspector page reads what the gateway keeps of this run besides its frames
    /// (an A2A turn: its task's events), before [`Admission::run`].
    pub(crate) fn keep_in(&mut self, kept: crate::web::activity::KeptFrames) {
        if self.counted.metrics().activity.is_on() {
            self.kept = Some(kept);
        }
    }

    /// The stream permit, to hold until the run ends.
    pub(crate) fn into_permit(self) -> OwnedSemaphorePermit {
        self.permit
    }
}

impl Pipeline {
    /// The pipeline of `agent` (put behind the boundary here) with `config`.
    pub(crate) fn new(agent: Arc<dyn Agent>, config: GatewayConfig) -> Self {
        let guarded = boundary::Guarded::new(agent, config.deadlines).exposing(config.errors);
        Pipeline {
            agent: parking_lot::RwLock::new(Arc::new(guarded)),
            runs: Arc::new(Runs::new(&config)),
            streams: Arc::new(Semaphore::new(config.max_streams)),
            metrics: Default::default(),
            config,
        }
    }

    /// The agent new runs start on.
    pub(crate) fn agent(&self) -> Arc<boundary::Guarded> {
        self.agent.read().clone()
    }

    /// Starts new runs on `agent` (a reload's build): the runs going on keep theirs.
    pub(crate) fn set_agent(&self, agent: Arc<boundary::Guarded>) {
        *self.agent.write() = agent;
    }

    /// Admits a run of `caller` (come through `via`): refused while the gateway drains or when every stream permit
    /// is taken; the run's deadline is `max_run` from now.
    pub(crate) fn admit(&self, caller: Caller, via: Via) -> Result<Admission, Refusal> {
        let permit = self.stream_permit()?;
        let deadline = self.config.max_run.map(|d| Instant::now() + d);
        let mut ctx = RequestContext::new(caller, deadline);
        ctx.pauses = self
            .runs
            .pauses()
            .map(|p| p.clone() as Arc<dyn crate::agent::PauseKeeper>);
        Ok(Admission {
            ctx,
            agent: self.agent(),
            permit,
            counted: self.metrics.get(),
            frame_log: self.config.frame_log.clone(),
            binding: via.name(),
            kept: None,
            runs: self.runs.clone(),
            trace_id: crate::web::trace::current_trace_id(),
        })
    }

    /// Whether the store keeps the pause of conversation `key` (an agent stored it there: the
    /// answer can be honoured whichever process paused it). `false` without a store keeping
    /// pauses, or when it cannot be read (logged).
    pub(crate) async fn pause_kept(&self, key: &crate::agent::ConversationKey) -> bool {
        let Some(store) = self.runs.pauses() else {
            return false;
        };
        match store.get_pause(&key.pause_key()).await {
            Ok(kept) => kept.is_some(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read a stored pause");
                false
            }
        }
    }

    /// A stream slot for a reader that runs no agent (an A2A subscriber): refused like a run.
    pub(crate) fn stream_permit(&self) -> Result<OwnedSemaphorePermit, Refusal> {
        if self.runs.draining() {
            return Err(Refusal::Draining);
        }
        self.streams.clone().try_acquire_owned().map_err(|_| Refusal::Busy)
    }

    /// Streams open now on every binding: runs (E2A, AG-UI, A2A, detached ones too) and A2A
    /// subscribers — the stream slots taken.
    pub(crate) fn open_streams(&self) -> usize {
        self.config.max_streams.saturating_sub(self.streams.available_permits())
    }

    /// A refusal on the E2A and AG-UI bindings: `503` with `Retry-After`.
    pub(crate) fn refused(&self, refusal: Refusal) -> crate::web::problem::Problem {
        crate::web::problem::Problem::unavailable(refusal.message(), self.retry_after())
    }

    /// `Retry-After` seconds of a refusal.
    pub(crate) fn retry_after(&self) -> u64 {
        self.config.retry_after_secs
    }
}
