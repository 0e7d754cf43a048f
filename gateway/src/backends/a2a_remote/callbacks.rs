//! The receiving side of delegation with callbacks ([`super::delegate`]): where an agent's
//! delegated tasks call back ([`Callbacks`]), what the store keeps of each delegation, the
//! callback checked and kept ([`Callbacks::deliver`]), and the run it answers finished — woken in
//! its own process, or written here when its gateway is gone.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use e2a::stream::ResponseStream;
use e2a::types::{A2aStreamResponse, A2aTask, A2aTaskState, A2aTaskStatusUpdateEvent};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::sync::Notify;

use super::claims::{claim, release};
use super::urls::origin;
use super::{A2aRemoteAgent, A2aRemoteError};
use crate::agent::PauseKeeper;
use crate::runs::{waiting_on, Orphan, Runs, Waiting, WAITING};
use crate::web::hmac::content_sha256;

/// How long a callback waits for its run to take the answer before it is answered `503` (the
/// run's gateway gone, its lease not run out yet: the child retries).
const HANDOFF: Duration = Duration::from_secs(5);

/// Most waiting runs a gateway looks through when it starts ([`Callbacks::recover`]).
const RECOVER_AT_MOST: usize = 10_000;

/// Most progress events a waiting run of this process holds before it relays them (the oldest
/// go first: a run that does not keep up shows the newest).
const PROGRESS_HELD: usize = 64;

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
    waiters: Mutex<HashMap<String, Arc<Wake>>>,
    /// The delegating agent without its callbacks: what reads a child's task and cancels it.
    agent: OnceLock<A2aRemoteAgent>,
    /// Whether unsigned callbacks are refused.
    signed_only: bool,
    /// Whether progress events are relayed to the waiting run.
    relay_progress: bool,
}

/// What wakes a run of this process waiting for its callback, and the progress events that
/// came for it meanwhile.
#[derive(Default)]
pub(super) struct Wake {
    notify: Notify,
    progress: Mutex<VecDeque<A2aStreamResponse>>,
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
pub(super) struct Record {
    /// The SHA-256 (hex) of the token the callback must present.
    pub(super) token_sha256: String,
    /// The store key of the run waiting for it (`None`: an A2A task's turn, or a run no store
    /// keeps: it is finished by its own process only).
    #[serde(default)]
    pub(super) run: Option<String>,
    /// The child's task, once it answered.
    #[serde(default)]
    pub(super) child_task: Option<String>,
}

/// The first terminal event a delegation received.
#[derive(Serialize, Deserialize)]
pub(super) struct Received {
    sha256: String,
    pub(super) event: Value,
}

/// What a callback did ([`Callbacks::deliver`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// A terminal event, kept (or the same one again): the waiting run goes on from it.
    Accepted,
    /// A progress event handed to the waiting run (`[delegation] relay_progress`).
    Relayed,
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
            relay_progress: false,
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

    /// These callbacks, relaying progress events to the waiting run (`[delegation]
    /// relay_progress`): a status update that does not end the task, with a message, becomes
    /// the frame a stream of the child would show. Call it before the callbacks are shared.
    pub fn relay_progress(mut self, yes: bool) -> Self {
        if let Some(hub) = Arc::get_mut(&mut self.0) {
            hub.relay_progress = yes;
        }
        self
    }

    /// Whether unsigned callbacks are refused ([`Callbacks::signed_only`]).
    pub fn requires_signatures(&self) -> bool {
        self.0.signed_only
    }

    /// The longest a run waits for its callback.
    pub(super) fn timeout(&self) -> Duration {
        self.0.timeout
    }

    /// The delegating agent's code (`sourceAgentCode`).
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// Gives the hub the agent that reads and cancels child tasks (its twin without callbacks).
    pub(super) fn serve(&self, agent: A2aRemoteAgent) {
        let _ = self.0.agent.set(agent);
    }

    pub(super) fn url(&self, id: &str) -> String {
        format!("{}/{}", self.0.base, crate::protocol::path_segment(id))
    }

    /// The store key of `what` of delegation `id` (the agent's code length-prefixed: whatever
    /// it holds, two agents' keys differ).
    pub(super) fn key(&self, what: &str, id: &str) -> String {
        format!("{what}:{}:{}:{id}", self.0.source.len(), self.0.source)
    }

    /// Registers a waiter for delegation `id` (gone when the returned guard is dropped).
    pub(super) fn wait_for(&self, id: &str) -> Waiter {
        let wake = Arc::new(Wake::default());
        self.0.waiters.lock().insert(id.to_string(), wake.clone());
        Waiter {
            hub: self.clone(),
            id: id.to_string(),
            wake,
        }
    }

    /// Wakes the run of this process waiting for delegation `id`; whether one does.
    fn wake(&self, id: &str) -> bool {
        match self.0.waiters.lock().get(id) {
            Some(w) => {
                w.notify.notify_one();
                true
            }
            None => false,
        }
    }

    /// Relays progress event `event` of delegation `id` to its waiting run: handed to it when
    /// it waits in this process, else kept in the store (the newest one), where its process
    /// reads it.
    async fn relay(
        &self,
        id: &str,
        event: A2aStreamResponse,
        value: Value,
        store: &dyn PauseKeeper,
    ) -> Result<(), CallbackError> {
        let local = self.0.waiters.lock().get(id).cloned();
        if let Some(w) = local {
            let mut held = w.progress.lock();
            if held.len() >= PROGRESS_HELD {
                held.pop_front();
            }
            held.push_back(event);
            drop(held);
            w.notify.notify_one();
            return Ok(());
        }
        let received = Received {
            sha256: content_sha256(value.to_string().as_bytes()),
            event: value,
        };
        let text = serde_json::to_string(&received).map_err(|e| CallbackError::BadEvent(e.to_string()))?;
        Ok(store.put_pause(&self.key("delegation-progress", id), text).await?)
    }

    /// The newest progress event of delegation `id` kept in the store ([`Callbacks::relay`]),
    /// with its SHA-256.
    pub(super) async fn stored_progress(
        &self,
        id: &str,
        store: &dyn PauseKeeper,
    ) -> Option<(String, A2aStreamResponse)> {
        if !self.0.relay_progress {
            return None;
        }
        let text = match store.get_pause(&self.key("delegation-progress", id)).await {
            Ok(text) => text?,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a delegated task's progress");
                return None;
            }
        };
        let received: Received = serde_json::from_str(&text).ok()?;
        let event = serde_json::from_value(received.event).ok()?;
        Some((received.sha256, event))
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
            return match progress(event) {
                Some(event) if self.0.relay_progress => {
                    self.relay(id, event, value, store.as_ref()).await?;
                    Ok(Delivered::Relayed)
                }
                _ => Ok(Delivered::Ignored),
            };
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
            match runs.waiting(run).await? {
                Waiting::Over => {
                    // the run has its answer (or gave up waiting, or is no longer kept)
                    tracing::debug!(delegation = id, run, "a callback came for a run that waits no more");
                    release(store.as_ref(), run).await?;
                    return Ok(Delivered::Accepted);
                }
                // its process takes it: woken here, or reading the store at its gateway
                Waiting::Going => {
                    self.wake(id);
                }
                // gone: the run is finished here
                Waiting::Orphan(orphan) => self.finish_orphan(run, orphan, &event, runs).await?,
            }
            if tokio::time::Instant::now() >= handed {
                return Err(CallbackError::Busy);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Finishes, when the gateway starts, the runs of this agent that wait for a delegated task
    /// and that no gateway runs any more: from the terminal event kept for it, else from the
    /// child's task when it has ended meanwhile (its callback may have found no gateway to
    /// take it: a push sender that does not retry). A run whose child still works goes on
    /// waiting for its callback.
    /// Only the runs still marked waiting are looked through (a run's marks go when it ends).
    pub(crate) async fn recover(&self, runs: &Runs) {
        let Some(store) = runs.pauses() else { return };
        let marks = match store.pauses_with_prefix(WAITING, RECOVER_AT_MOST).await {
            Ok(marks) => marks,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look for the delegated runs to recover");
                return;
            }
        };
        let mine = self.key("delegation", "");
        for (key, mark) in marks {
            let run = key.strip_prefix(WAITING).unwrap_or_default();
            let Some(id) = waiting_on(&mark).and_then(|by| by.strip_prefix(&mine).map(str::to_string)) else {
                continue;
            };
            if let Err(e) = self.recover_one(&id, run, runs).await {
                tracing::warn!(delegation = id, error = %e, "cannot recover a delegated run");
            }
        }
    }

    /// [`Callbacks::recover`] of delegation `id`, waited on by run `run`.
    async fn recover_one(&self, id: &str, run: &str, runs: &Runs) -> Result<(), CallbackError> {
        let (Some(agent), Some(store)) = (self.0.agent.get(), runs.pauses()) else {
            return Ok(());
        };
        let record = store.get_pause(&self.key("delegation", id)).await?;
        let child = record
            .and_then(|text| serde_json::from_str::<Record>(&text).ok())
            .and_then(|r| r.child_task);
        let orphan = match runs.waiting(run).await? {
            Waiting::Orphan(orphan) => orphan,
            Waiting::Going => return Ok(()),
            Waiting::Over => return Ok(release(store.as_ref(), run).await?),
        };
        let kept = store.get_pause(&self.key("delegation-event", id)).await?;
        let kept = kept.and_then(|t| serde_json::from_str::<Received>(&t).ok());
        let event = match (kept, child) {
            (Some(r), _) => serde_json::from_value::<A2aStreamResponse>(r.event).ok(),
            (None, Some(child)) => agent
                .read_task(&child)
                .await
                .map(A2aStreamResponse::Task)
                .filter(ends_wait),
            (None, None) => None,
        };
        if let Some(event) = event {
            tracing::info!(
                delegation = id,
                "finishing a run whose delegated task ended while no gateway ran it"
            );
            self.finish_orphan(run, orphan, &event, runs).await?;
        }
        Ok(())
    }

    /// Finishes `orphan`, run `run`, from `event` — once, by whoever claims it ([`claim`]). Its
    /// waiting mark goes only once its last frames are written, so that no reader settles it as
    /// failed meanwhile.
    async fn finish_orphan(
        &self,
        run: &str,
        orphan: Box<Orphan>,
        event: &A2aStreamResponse,
        runs: &Runs,
    ) -> Result<(), CallbackError> {
        let (Some(agent), Some(store)) = (self.0.agent.get(), runs.pauses()) else {
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
        runs.finish_orphan(*orphan, &frames).await?;
        release(store.as_ref(), run).await?;
        Ok(())
    }
}

/// A run's registration as waiting for its callback in this process.
pub(super) struct Waiter {
    hub: Callbacks,
    id: String,
    wake: Arc<Wake>,
}

impl Waiter {
    /// Until the run is woken (a callback came here) or `at_most` has passed.
    pub(super) async fn woken(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.wake.notify.notified()).await;
    }

    /// The progress events handed to the run since it last looked.
    pub(super) fn progress(&self) -> Vec<A2aStreamResponse> {
        self.wake.progress.lock().drain(..).collect()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.hub.0.waiters.lock().remove(&self.id);
    }
}

/// The event a callback body holds: an A2A `StreamResponse`, or a task alone (what some push
/// senders post; a 0.3 agent's, `kind`-tagged, read back as 1.0); with its JSON.
fn read_event(value: Value) -> Result<(A2aStreamResponse, Value), CallbackError> {
    let value = match value.get("kind") {
        Some(_) => e2a::a2a::v0_3::stream_response(value, e2a::a2a::v0_3::Wire::JsonRpc),
        None => value,
    };
    match A2aStreamResponse::deserialize(&value) {
        Ok(event) => Ok((event, value)),
        Err(e) => match A2aTask::deserialize(&value) {
            Ok(task) => Ok((A2aStreamResponse::Task(task), value)),
            Err(_) => Err(CallbackError::BadEvent(e.to_string())),
        },
    }
}

/// The progress a relayed event shows, as a status update: one that does not end the task,
/// with a message (a task posted whole shows its status). `None`: nothing to show (an artifact
/// piece, a status without a message).
fn progress(event: A2aStreamResponse) -> Option<A2aStreamResponse> {
    let update = match event {
        A2aStreamResponse::StatusUpdate(u) => u,
        A2aStreamResponse::Task(t) => A2aTaskStatusUpdateEvent {
            task_id: t.id,
            context_id: t.context_id,
            status: t.status,
            metadata: t.metadata,
        },
        A2aStreamResponse::ArtifactUpdate(_) | A2aStreamResponse::Message(_) => return None,
    };
    (update.status.message.is_some() && !ends(&update.status.state)).then_some(A2aStreamResponse::StatusUpdate(update))
}

/// Whether `event` ends a delegated task's wait: a message, or a task or status in a terminal
/// state, or one that asks for something (input, authentication).
pub(super) fn ends_wait(event: &A2aStreamResponse) -> bool {
    match event {
        A2aStreamResponse::Message(_) => true,
        A2aStreamResponse::Task(t) => ends(&t.status.state),
        A2aStreamResponse::StatusUpdate(u) => ends(&u.status.state),
        A2aStreamResponse::ArtifactUpdate(_) => false,
    }
}

/// Whether a task in `state` is done with, for its delegator: ended, or asking for something.
pub(super) fn ends(state: &A2aTaskState) -> bool {
    state.is_terminal()
        || matches!(
            state,
            A2aTaskState::TaskStateInputRequired | A2aTaskState::TaskStateAuthRequired
        )
}
