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
//! - `waiting:{run key}` ([`crate::runs::waiting_key`]): the run waits, so no reader settles it as
//!   failed when its gateway goes away; it goes once the run has its answer;
//! - `finishing:{run key}`: who finishes the run (one, of every gateway) — its own process when
//!   it still runs it, else the gateway the callback reached; a claim a minute old is taken over.
//!
//! A callback is answered `202` once the run has been handed its answer (the mark taken); when
//! the run's gateway is gone but its lease has not run out yet, `503` after a few seconds: the
//! child's push sender retries, and a retry after the lease finishes the run.
//!
//! A child that answers at once (a message, a finished task) ends the run without a callback. A
//! terminal event without the task's content (a status update) is completed by reading the task
//! (`GetTask`). Progress events are acknowledged and not relayed.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use e2a::a2a::inbound::A2aStreamReader;
use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{A2aSendMessageResponse, A2aStreamResponse, A2aTask, A2aTaskState};
use e2a::E2AEnvelope;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;
use tokio::sync::Notify;

use super::cancel::CancelOnDrop;
use super::exchange::Interface;
use super::urls::origin;
use super::{fail, A2aRemoteAgent, A2aRemoteError};
use crate::agent::{FrameStream, PauseKeeper, RequestContext};
use crate::runs::{waiting_key, Runs};
use crate::web::hmac::content_sha256;

/// GoAI's delegation extension: its metadata (`sourceAgentCode`, `parentRunId`) goes with every
/// delegated message, and the message activates it.
pub const DELEGATION_EXTENSION: &str = "https://goai.dev/extensions/delegation/v1";

/// How often a waiting run reads the store for its callback (one that lands in the same process
/// wakes it at once).
const POLL: Duration = Duration::from_secs(1);

/// How long a callback waits for its run to take the answer before it is answered `503` (the
/// run's gateway gone, its lease not run out yet: the child retries).
const HANDOFF: Duration = Duration::from_secs(5);

/// After how long a claim to finish a run ([`claim`]) is taken to be its dead finisher's.
const CLAIM_TTL_MS: i64 = 60_000;

/// Where the answers of an agent's delegated tasks come back, and the runs of this process
/// waiting for them. Made per delegating agent; the same one is given to the agent
/// ([`super::A2aRemoteConfig::callbacks`]) and to its A2A routes (which serve the callbacks).
#[derive(Clone)]
pub struct Callbacks(Arc<Hub>);

struct Hub {
    /// The callback URL of delegation `id` is `{base}/{id}`.
    base: String,
    /// The delegating agent's code: `sourceAgentCode`, and the keys' scope.
    source: String,
    /// The longest a run waits for its callback.
    timeout: Duration,
    /// The runs of this process waiting, by delegation id.
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    /// The delegating agent without its callbacks: what reads a child's task and cancels it.
    agent: OnceLock<A2aRemoteAgent>,
    /// Whether unsigned callbacks are refused.
    signed_only: bool,
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks")
            .field("base", &self.0.base)
            .field("source", &self.0.source)
            .field("timeout", &self.0.timeout)
            .finish()
    }
}

/// What the store keeps of one delegation.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The SHA-256 (hex) of the token the callback must present.
    token_sha256: String,
    /// The store key of the run waiting for it (`None`: an A2A task's turn, or a run no store
    /// keeps: it is finished by its own process only).
    #[serde(default)]
    run: Option<String>,
    /// The child's task, once it answered.
    #[serde(default)]
    child_task: Option<String>,
}

/// The first terminal event a delegation received.
#[derive(Serialize, Deserialize)]
struct Received {
    sha256: String,
    event: Value,
}

/// What a callback did ([`Callbacks::deliver`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// A terminal event, kept (or the same one again): the waiting run goes on from it.
    Accepted,
    /// A progress event: acknowledged, not relayed.
    Ignored,
}

/// Why a callback is refused ([`Callbacks::deliver`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CallbackError {
    /// No delegation of this agent has this id (or no store keeps delegations).
    #[error("no delegated task {0:?} of this agent")]
    NotFound(String),
    /// The token is missing or is not the one bound to the delegation.
    #[error("the notification token is missing or wrong")]
    Unauthorized,
    /// The body is not an A2A `StreamResponse` (or task).
    #[error("the callback is not an A2A StreamResponse: {0}")]
    BadEvent(String),
    /// Another terminal event was received for this task before.
    #[error("another terminal event was received for this task")]
    Conflict,
    /// The run waiting for it did not take it in time (its gateway is gone and its lease has
    /// not run out yet): to be sent again later.
    #[error("the run waiting for this task's answer is not reachable now; retry later")]
    Busy,
    /// The store failed.
    #[error("store: {0}")]
    Store(String),
}

impl From<crate::agent::PauseError> for CallbackError {
    fn from(e: crate::agent::PauseError) -> Self {
        CallbackError::Store(e.0)
    }
}

impl From<crate::store::StoreError> for CallbackError {
    fn from(e: crate::store::StoreError) -> Self {
        CallbackError::Store(e.to_string())
    }
}

impl Callbacks {
    /// The callbacks of agent `source`, each at `{base}/{id}` (`base`: the URL of the callback
    /// collection, `https://gw.example/a2a/agents/planner/callbacks/tasks`; plain `http` only on
    /// loopback, since the URL is where the task's token is posted), a run waiting at most
    /// `timeout` for its callback.
    pub fn new(base: &str, source: &str, timeout: Duration) -> Result<Self, A2aRemoteError> {
        let base = base.trim().trim_end_matches('/');
        let Some(o) = origin(base) else {
            return Err(A2aRemoteError::BadUrl);
        };
        if crate::backends::token_in_clear(&o) {
            return Err(A2aRemoteError::CallbackInClear);
        }
        Ok(Callbacks(Arc::new(Hub {
            base: base.to_string(),
            source: source.to_string(),
            timeout,
            waiters: Mutex::default(),
            agent: OnceLock::new(),
            signed_only: false,
        })))
    }

    /// These callbacks, refusing those not signed (GoAI-HMAC-SHA256, by a caller of the
    /// gateway): `[delegation] signed_callbacks`. Call it before the callbacks are shared.
    pub fn signed_only(mut self, yes: bool) -> Self {
        if let Some(hub) = Arc::get_mut(&mut self.0) {
            hub.signed_only = yes;
        }
        self
    }

    /// Whether unsigned callbacks are refused ([`Callbacks::signed_only`]).
    pub fn signs_required(&self) -> bool {
        self.0.signed_only
    }

    /// The delegating agent's code (`sourceAgentCode`).
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// Gives the hub the agent that reads and cancels child tasks (its twin without callbacks).
    pub(super) fn serve(&self, agent: A2aRemoteAgent) {
        let _ = self.0.agent.set(agent);
    }

    fn url(&self, id: &str) -> String {
        format!("{}/{}", self.0.base, crate::protocol::path_segment(id))
    }

    /// The store key of `what` of delegation `id` (the agent's code length-prefixed: whatever
    /// it holds, two agents' keys differ).
    fn key(&self, what: &str, id: &str) -> String {
        format!("{what}:{}:{}:{id}", self.0.source.len(), self.0.source)
    }

    /// Registers a waiter for delegation `id` (gone when the returned guard is dropped).
    fn wait_for(&self, id: &str) -> Waiter {
        let notify = Arc::new(Notify::new());
        self.0.waiters.lock().insert(id.to_string(), notify.clone());
        Waiter {
            hub: self.clone(),
            id: id.to_string(),
            notify,
        }
    }

    /// Wakes the run of this process waiting for delegation `id`; whether one does.
    fn wake(&self, id: &str) -> bool {
        match self.0.waiters.lock().get(id) {
            Some(n) => {
                n.notify_one();
                true
            }
            None => false,
        }
    }

    /// A callback of delegation `id`, presenting `token`, carrying `body` (its JSON): checked against the
    /// stored delegation (the token bound to it, in constant time), its terminal event kept once
    /// (the same again is accepted, another is a [`CallbackError::Conflict`]), then the waiting
    /// run woken — here, or at its gateway through the store; when no gateway runs it any more,
    /// it is finished here.
    pub(crate) async fn deliver(
        &self,
        id: &str,
        token: Option<&str>,
        body: Value,
        runs: &Runs,
    ) -> Result<Delivered, CallbackError> {
        let Some(store) = runs.pauses() else {
            return Err(CallbackError::NotFound(id.to_string()));
        };
        let record = store
            .get_pause(&self.key("delegation", id))
            .await?
            .and_then(|text| serde_json::from_str::<Record>(&text).ok())
            .ok_or_else(|| CallbackError::NotFound(id.to_string()))?;
        let presented = content_sha256(token.unwrap_or_default().as_bytes());
        if token.is_none() || !bool::from(presented.as_bytes().ct_eq(record.token_sha256.as_bytes())) {
            return Err(CallbackError::Unauthorized);
        }
        let (event, value) = read_event(body)?;
        if !ends_wait(&event) {
            return Ok(Delivered::Ignored);
        }
        let received = Received {
            sha256: content_sha256(value.to_string().as_bytes()),
            event: value,
        };
        let text = serde_json::to_string(&received).map_err(|e| CallbackError::BadEvent(e.to_string()))?;
        if let Some(first) = store.keep_first_pause(&self.key("delegation-event", id), text).await? {
            let first: Option<Received> = serde_json::from_str(&first).ok();
            if first.is_none_or(|f| f.sha256 != received.sha256) {
                return Err(CallbackError::Conflict);
            }
        }
        let Some(run) = &record.run else {
            // a run no store keeps: only its own process finishes it
            self.wake(id);
            return Ok(Delivered::Accepted);
        };
        let handed = tokio::time::Instant::now() + HANDOFF;
        loop {
            if store.get_pause(&waiting_key(run)).await?.is_none() {
                // taken: the run has its answer (or gave up waiting)
                return Ok(Delivered::Accepted);
            }
            // its process takes it when it runs here; else, gone, the run is finished here
            if !self.wake(id) {
                self.finish_orphan(run, &event, runs).await?;
            }
            if tokio::time::Instant::now() >= handed {
                return Err(CallbackError::Busy);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Finishes run `run` from `event` when no gateway runs it any more — once, by whoever
    /// claims it ([`claim`]). Its waiting mark goes only once its last frames are written, so
    /// that no reader settles it as failed meanwhile.
    async fn finish_orphan(&self, run: &str, event: &A2aStreamResponse, runs: &Runs) -> Result<(), CallbackError> {
        let (Some(agent), Some(store)) = (self.0.agent.get(), runs.pauses()) else {
            return Ok(());
        };
        let Some(orphan) = runs.orphan(run).await? else {
            return Ok(());
        };
        if !claim(store.as_ref(), run).await? {
            return Ok(());
        }
        tracing::info!(
            run,
            "the run waiting for this callback has no gateway: finishing it here"
        );
        let s = ResponseStream::for_request(&orphan.request).starting_at(orphan.next);
        let frames = agent.frames_of(event, s).await;
        runs.finish_orphan(orphan, &frames).await?;
        store.take_pause(&waiting_key(run)).await?;
        store.take_pause(&finishing_key(run)).await?;
        Ok(())
    }
}

/// The pause key of the claim to finish run `run` (what time it was claimed, in ms).
fn finishing_key(run: &str) -> String {
    format!("finishing:{run}")
}

/// Claims the finishing of run `run`: whether this caller won (of every gateway, one does). A
/// claim older than [`CLAIM_TTL_MS`] is taken over: its finisher died before it was done (the
/// run still waits, and the child, which had no `202`, sends its callback again).
async fn claim(store: &dyn PauseKeeper, run: &str) -> Result<bool, crate::agent::PauseError> {
    let key = finishing_key(run);
    let now = e2a::timestamp::now_ms();
    let Some(at) = store.keep_first_pause(&key, now.to_string()).await? else {
        return Ok(true);
    };
    let stale = at.parse::<i64>().map_or(true, |t| now.saturating_sub(t) > CLAIM_TTL_MS);
    if !stale {
        return Ok(false);
    }
    store.take_pause(&key).await?;
    Ok(store.keep_first_pause(&key, now.to_string()).await?.is_none())
}

/// A run's registration as waiting for its callback in this process.
struct Waiter {
    hub: Callbacks,
    id: String,
    notify: Arc<Notify>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.hub.0.waiters.lock().remove(&self.id);
    }
}

/// The event a callback body holds: an A2A `StreamResponse`, or a task alone (what some push
/// senders post); with its JSON.
fn read_event(value: Value) -> Result<(A2aStreamResponse, Value), CallbackError> {
    match serde_json::from_value::<A2aStreamResponse>(value.clone()) {
        Ok(event) => Ok((event, value)),
        Err(e) => match serde_json::from_value::<A2aTask>(value.clone()) {
            Ok(task) => Ok((A2aStreamResponse::Task(task), value)),
            Err(_) => Err(CallbackError::BadEvent(e.to_string())),
        },
    }
}

/// Whether `event` ends a delegated task's wait: a message, or a task or status in a terminal
/// state, or one that asks for something (input, authentication).
fn ends_wait(event: &A2aStreamResponse) -> bool {
    match event {
        A2aStreamResponse::Message(_) => true,
        A2aStreamResponse::Task(t) => ends(&t.status.state),
        A2aStreamResponse::StatusUpdate(u) => ends(&u.status.state),
        A2aStreamResponse::ArtifactUpdate(_) => false,
    }
}

/// Whether a task in `state` is done with, for its delegator: ended, or asking for something.
fn ends(state: &A2aTaskState) -> bool {
    state.is_terminal()
        || matches!(
            state,
            A2aTaskState::TaskStateInputRequired | A2aTaskState::TaskStateAuthRequired
        )
}

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
                Sent::Answered(event) => *event,
                Sent::Working(child) => {
                    let mut guard = CancelOnDrop { agent: this.clone(), interface: interface.clone(), task: Some(child.clone()), done: false, events: None };
                    yield s.reasoning(&format!("delegated as task {child}; waiting for its callback"));
                    let waited = tokio::select! {
                        _ = ctx.cancel.cancelled() => Err((ErrorKind::Cancelled, "the run was cancelled".to_string())),
                        _ = tokio::time::sleep(hub.0.timeout) => Err((ErrorKind::Timeout, format!("the delegated task did not answer within {} s", hub.0.timeout.as_secs()))),
                        e = callback(&hub, &id, store.as_ref(), &waiter.notify) => Ok(e),
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
            // one finisher: this run, unless a gateway that found it without one (its lease
            // lapsed) claimed it first; its lease keeps readers from settling it from here on
            if let Some(run) = &ctx.run {
                match claim(store.as_ref(), run).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(delegation = %id, "another gateway finishes this run");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot claim a run's answer; going on"),
                }
                let _ = store.take_pause(&waiting_key(run)).await;
                let _ = store.take_pause(&finishing_key(run)).await;
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
            store
                .put_pause(&waiting_key(run), record_key.clone())
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
        let answer: A2aSendMessageResponse = serde_json::from_value(answer).map_err(|e| {
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
    async fn read_task(&self, task: &str) -> Option<A2aTask> {
        let interface = self.interface().await.ok()?;
        let (url, body) = interface.get_task(task);
        match self.call_json(&interface, &url, body, None).await {
            Ok(v) => serde_json::from_value(v)
                .inspect_err(|e| tracing::warn!(error = %e, "the delegated task read back is not a task"))
                .ok(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the delegated task");
                None
            }
        }
    }
}

/// The terminal event stored for delegation `id`, once it is (read when woken, and every
/// [`POLL`] for a callback that landed at another gateway).
async fn callback(hub: &Callbacks, id: &str, store: &dyn PauseKeeper, woken: &Notify) -> A2aStreamResponse {
    let key = hub.key("delegation-event", id);
    loop {
        match store.get_pause(&key).await {
            Ok(Some(text)) => {
                let event = serde_json::from_str::<Received>(&text).map(|r| r.event);
                match event.and_then(serde_json::from_value::<A2aStreamResponse>) {
                    Ok(event) => return event,
                    Err(e) => tracing::error!(error = %e, "a stored callback cannot be read"),
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read whether a callback came"),
        }
        let _ = tokio::time::timeout(POLL, woken.notified()).await;
    }
}

/// A delegation given up (the run failed, was cancelled or timed out): its run waits no more.
/// The delegation stays (until the store's pause retention): a late callback is acknowledged,
/// and changes nothing.
async fn forget(ctx: &RequestContext, store: &dyn PauseKeeper) {
    if let Some(run) = &ctx.run {
        let _ = store.take_pause(&waiting_key(run)).await;
    }
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
