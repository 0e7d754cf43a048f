//! Delegation with callbacks (`[agents.NAME] delegate = "callback"`, GoAI's contract): the
//! parent run sends the child agent its task with `SendMessage` — `returnImmediately: true`, a
//! push config naming this gateway's callback route with a token bound to this one task, GoAI's
//! delegation extension metadata — and waits holding no connection. The child's terminal event
//! comes back to `POST {a2a prefix}/callbacks/tasks/{id}` ([`Callbacks::deliver`], served by the
//! A2A binding) on any gateway of the store, and the run goes on from it: in the process running
//! it (woken at once when the callback lands there, else by reading the store every second), or,
//! when that gateway has gone, written to the run's log by the gateway the callback reaches.
//!
//! What the store keeps (as pauses, [`crate::store::PauseStore`]; `{code}` is the delegating
//! agent's, `{id}` the delegation's):
//! - `delegation:{code}:{id}`: the delegation — the SHA-256 of its token, the waiting run's key,
//!   the child's task;
//! - `delegation-event:{code}:{id}`: the first terminal event received (its SHA-256 and JSON): the
//!   same event again is accepted, another one is a conflict;
//! - `waiting:{run key}` ([`crate::runs::waiting_key`]): the run waits — until its delegation's
//!   timeout, on this delegation — so no reader settles it as failed when its gateway goes away;
//!   it goes when the run ends (or gives up);
//! - `finishing:{generation}:{run key}`: who finishes the run (one, of every gateway) — its own
//!   process when it still runs it, else the gateway the callback reached; a claim a minute old
//!   is taken over by claiming its next generation (of several takers, one wins).
//!
//! A callback is answered `202` once the run it answers has ended; when the run's gateway is
//! gone but its lease has not run out yet (or the run's finisher died), `503` after a few
//! seconds: the child's push sender retries, and a retry finishes the run. A callback that found
//! no gateway at all is recovered when one starts ([`Callbacks::recover`]: from the kept event,
//! else from the child's task once it has ended).
//!
//! A child that answers at once (a message, a finished task) ends the run without a callback. A
//! terminal event without the task's content (a status update) is completed by reading the task
//! (`GetTask`). Progress events are acknowledged; with `[delegation] relay_progress`, a status
//! update with a message (the child's notes, an e2a child's tool calls) reaches the waiting run
//! as the frame a stream of the child would show — in order when it lands in the run's own
//! process, else through the store (`delegation-progress:{code}:{id}`: the newest one, read with
//! the terminal event every second).

use std::time::Duration;

use e2a::a2a::inbound::A2aStreamReader;
use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{A2aSendMessageResponse, A2aStreamResponse, A2aTask};
use e2a::E2AEnvelope;
use serde::Serialize;
use serde_json::{json, Map};

use super::callbacks::{ends, Callbacks, Received, Record, Waiter};
use super::cancel::CancelOnDrop;
use super::claims::{claim, release};
use super::exchange::Interface;
use super::{fail, A2aRemoteAgent};
use crate::agent::{FrameStream, PauseKeeper, RequestContext};
use crate::runs::{waiting_key, waiting_mark};
use crate::web::hmac::content_sha256;

/// GoAI's delegation extension: its metadata (`sourceAgentCode`, `parentRunId`) goes with every
/// delegated message, and the message activates it.
pub const DELEGATION_EXTENSION: &str = "https://goai.dev/extensions/delegation/v1";

/// How often a waiting run reads the store for its callback (one that lands in the same process
/// wakes it at once).
const POLL: Duration = Duration::from_secs(1);

/// How a delegation started ([`A2aRemoteAgent::send_delegated`]).
enum Sent {
    /// The child answered at once (a message, or a task already ended): no callback comes.
    Answered(Box<A2aStreamResponse>),
    /// The child took the task: its id.
    Working(String),
}

impl A2aRemoteAgent {
    /// A run delegated with a callback (see the module docs).
    pub(super) fn delegated(&self, hub: Callbacks, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            let mut s = ResponseStream::for_request(&request);
            let Some(store) = ctx.pauses().cloned() else {
                let why = "delegate = \"callback\" needs a store that keeps pauses (the memory, SQLite or PostgreSQL store)";
                yield fail(s, ErrorKind::Internal, why, Map::new());
                return;
            };
            let id = e2a::stream::new_ordered_id();
            let waiter = hub.wait_for(&id);
            let (interface, sent) = match this.send_delegated(&hub, &id, &request, &ctx, store.as_ref()).await {
                Ok(started) => started,
                Err((kind, message, details)) => {
                    forget(&ctx, store.as_ref()).await;
                    yield fail(s, kind, &message, details);
                    return;
                }
            };
            let event = match sent {
                Sent::Answered(event) => {
                    // no callback will come (should this process stop before the frames are
                    // stored, the run reads failed, as any run of a gone gateway)
                    forget(&ctx, store.as_ref()).await;
                    *event
                }
                Sent::Working(child) => {
                    let mut guard = CancelOnDrop { agent: this.clone(), interface: interface.clone(), task: Some(child.clone()), done: false, events: None };
                    yield s.reasoning(&format!("delegated as task {child}; waiting for its callback"));
                    let until = tokio::time::Instant::now() + hub.timeout();
                    // the SHA-256 of the progress event last relayed from the store
                    let mut shown = None;
                    let waited = loop {
                        // its progress, relayed (`[delegation] relay_progress`)
                        for event in progress(&hub, &id, &waiter, store.as_ref(), &mut shown).await {
                            let mut reader = A2aStreamReader::new(s);
                            for f in reader.push(&event) {
                                yield f;
                            }
                            let Some(back) = reader.take_stream() else { return };
                            s = back;
                        }
                        if let Some(event) = terminal(&hub, &id, store.as_ref()).await {
                            break Ok(event);
                        }
                        tokio::select! {
                            _ = ctx.cancel.cancelled() => break Err((ErrorKind::Cancelled, "the run was cancelled".to_string())),
                            _ = tokio::time::sleep_until(until) => break Err((ErrorKind::Timeout, format!("the delegated task did not answer within {} s", hub.timeout().as_secs()))),
                            _ = waiter.woken(POLL) => {}
                        }
                    };
                    match waited {
                        Ok(event) => {
                            guard.done = true;
                            event
                        }
                        Err((kind, message)) => {
                            // the guard cancels the child task
                            forget(&ctx, store.as_ref()).await;
                            yield fail(s, kind, &message, Map::new());
                            return;
                        }
                    }
                }
            };
            if !finishes_here(&ctx, store.as_ref(), &id).await {
                return;
            }
            this.remember(&event, &request, &ctx).await;
            for f in this.frames_of(&event, s).await {
                yield f;
            }
        })
    }

    /// Stores the delegation and sends the child its task: the interface it went to and what
    /// the child answered.
    async fn send_delegated(
        &self,
        hub: &Callbacks,
        id: &str,
        request: &E2AEnvelope,
        ctx: &RequestContext,
        store: &dyn PauseKeeper,
    ) -> Result<(Interface, Sent), super::exchange::OpenError> {
        let interface = self.interface().await?;
        self.recall(request, ctx).await;
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let mut record = Record {
            token_sha256: content_sha256(token.as_bytes()),
            run: ctx.run.as_deref().map(str::to_string),
            child_task: None,
        };
        let stored = |e: crate::agent::PauseError| {
            (
                ErrorKind::Internal,
                format!("cannot store the delegation: {e}"),
                Map::new(),
            )
        };
        let record_key = hub.key("delegation", id);
        store.put_pause(&record_key, to_json(&record)).await.map_err(stored)?;
        if let Some(run) = &record.run {
            // it waits as long as the delegation may take
            let wait = i64::try_from(hub.timeout().as_millis()).unwrap_or(i64::MAX);
            let until = e2a::timestamp::now_ms().saturating_add(wait);
            store
                .put_pause(&waiting_key(run), waiting_mark(until, &record_key))
                .await
                .map_err(stored)?;
        }
        let mut message = serde_json::to_value(self.message_for(request, ctx)).unwrap_or_default();
        message["extensions"] = json!([DELEGATION_EXTENSION]);
        message["metadata"][DELEGATION_EXTENSION] = json!({
            "sourceAgentCode": hub.source(),
            "parentRunId": request.request_id,
        });
        let params = json!({
            "message": message,
            "configuration": {
                "returnImmediately": true,
                "taskPushNotificationConfig": {"id": id, "url": hub.url(id), "token": token},
            },
        });
        let (url, body) = interface.send(&params);
        let answer = tokio::select! {
            _ = ctx.cancel.cancelled() => return Err((ErrorKind::Cancelled, "the run was cancelled".into(), Map::new())),
            a = self.call_json(&interface, &url, Some(body), request.correlation_id.as_deref()) => a,
        };
        let answer = answer.map_err(|e| (ErrorKind::AgentError, e, Map::new()))?;
        let answer: A2aSendMessageResponse = serde_json::from_value(interface.sent(answer)).map_err(|e| {
            let why = format!("the remote agent's SendMessage answer is neither a task nor a message: {e}");
            (ErrorKind::AgentError, why, Map::new())
        })?;
        let sent = match answer {
            A2aSendMessageResponse::Message(m) => Sent::Answered(Box::new(A2aStreamResponse::Message(m))),
            A2aSendMessageResponse::Task(t) if ends(&t.status.state) => {
                Sent::Answered(Box::new(A2aStreamResponse::Task(t)))
            }
            A2aSendMessageResponse::Task(t) => {
                record.child_task = Some(t.id.clone());
                store.put_pause(&record_key, to_json(&record)).await.map_err(stored)?;
                Sent::Working(t.id)
            }
        };
        Ok((interface, sent))
    }

    /// The frames that end a run from a delegated task's answer, made by `s`: a task's artifacts
    /// and status, a message as the reply; a status alone completed by reading the task.
    pub(super) async fn frames_of(&self, event: &A2aStreamResponse, s: ResponseStream) -> Vec<Frame> {
        let mut reader = A2aStreamReader::new(s);
        let mut frames = match event {
            A2aStreamResponse::Task(t) => reader.push_task(t),
            A2aStreamResponse::StatusUpdate(u) => match self.read_task(&u.task_id).await {
                Some(t) if t.status.state == u.status.state => reader.push_task(&t),
                _ => reader.push(event),
            },
            _ => reader.push(event),
        };
        if let Some(s) = reader.take_stream() {
            let why = "the delegated task's answer did not end it";
            frames.push(fail(s, ErrorKind::AgentError, why, Map::new()));
        }
        frames
    }

    /// The child's task `task`, read whole (`None`, logged, when it cannot be).
    pub(super) async fn read_task(&self, task: &str) -> Option<A2aTask> {
        let interface = self.interface().await.ok()?;
        let (url, body) = interface.get_task(task);
        match self.call_json(&interface, &url, body, None).await {
            Ok(v) => serde_json::from_value(interface.task(v))
                .inspect_err(|e| tracing::warn!(error = %e, "the delegated task read back is not a task"))
                .ok(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the delegated task");
                None
            }
        }
    }
}

/// The terminal event stored for delegation `id`, if one came (read when the run is woken, and
/// every [`POLL`] for a callback that landed at another gateway).
async fn terminal(hub: &Callbacks, id: &str, store: &dyn PauseKeeper) -> Option<A2aStreamResponse> {
    let key = hub.key("delegation-event", id);
    match store.get_pause(&key).await {
        Ok(Some(text)) => {
            let event = serde_json::from_str::<Received>(&text).map(|r| r.event);
            match event.and_then(serde_json::from_value::<A2aStreamResponse>) {
                Ok(event) => return Some(event),
                Err(e) => tracing::error!(error = %e, "a stored callback cannot be read"),
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read whether a callback came"),
    }
    None
}

/// The progress events of delegation `id` to relay now: those handed to the run in this
/// process, then the newest kept in the store when it is not the one last relayed from there
/// (`shown`: its SHA-256).
async fn progress(
    hub: &Callbacks,
    id: &str,
    waiter: &Waiter,
    store: &dyn PauseKeeper,
    shown: &mut Option<String>,
) -> Vec<A2aStreamResponse> {
    let mut events = waiter.progress();
    if let Some((sha256, event)) = hub.stored_progress(id, store).await {
        if shown.as_deref() != Some(sha256.as_str()) {
            *shown = Some(sha256);
            events.push(event);
        }
    }
    events
}

/// Whether this run writes its answer: one finisher of every gateway — this run, unless a
/// gateway that found it without one (its lease lapsed) claimed it first. Its marks stay: should
/// this process die before the frames are stored, the run still waits, the child (answered
/// `202` only once the run has ended) calls back again, and the gateway it reaches takes the
/// stale claim over.
async fn finishes_here(ctx: &RequestContext, store: &dyn PauseKeeper, id: &str) -> bool {
    let Some(run) = &ctx.run else { return true };
    match claim(store, run).await {
        Ok(true) => true,
        Ok(false) => {
            tracing::warn!(delegation = %id, "another gateway finishes this run");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot claim a run's answer; going on");
            true
        }
    }
}

/// A run that waits for no callback (it failed, was cancelled or timed out, or the child
/// answered at once): its marks go ([`release`]). The delegation stays (until the store's pause
/// retention): a late callback is acknowledged, and changes nothing.
async fn forget(ctx: &RequestContext, store: &dyn PauseKeeper) {
    if let Some(run) = &ctx.run {
        if let Err(e) = release(store, run).await {
            tracing::warn!(error = %e, "cannot forget that a run waits for a callback");
        }
    }
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
