//! Tasks: an A2A message becomes an E2A envelope (`e2a::a2a::jsonrpc::envelope_from_request`),
//! the agent's frames pass the stream boundary and become A2A `StreamResponse` events
//! (`e2a::a2a::stream::A2aStreamProjector`), and every event is applied to the task's snapshot
//! and appended to its log in the [`TaskStore`] before any client sees it.
//!
//! Lifecycle: `SUBMITTED → WORKING → (INPUT_REQUIRED | AUTH_REQUIRED) → COMPLETED | FAILED |
//! CANCELED | REJECTED`. A message carrying the `taskId` of a paused task answers it (the same
//! task goes on, in the same context); an agent that answers with an `a2a.message` frame first
//! gets a direct `Message` reply and no task. A task found `SUBMITTED`/`WORKING` with no run
//! behind it (the gateway restarted) is settled as `FAILED`, so its log ends.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use e2a::a2a::jsonrpc::{envelope_from_request, normalize_task_state, A2aHeaders};
use e2a::a2a::stream::{proto_timestamp, A2aStreamProjector};
use e2a::{E2AResponse, ResponseKind};
use futures_util::{Stream, StreamExt};
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub mod error;

use self::error::{A2aError, A2aErrorKind};
use crate::agent::Caller;
use crate::bindings::a2a::card::A2aConfig;
use crate::pipeline::Pipeline;
use crate::store::{StoreNotice, StoredEvent, TaskQuery, TaskRecord, TaskStore};

/// A2A events with their log sequence numbers, as a binding streams them. An `Err` ends the
/// stream: the task could not go on (its store failed) and the binding answers it in its
/// protocol's error form; every `Ok` event was stored before it was yielded.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StoredEvent, A2aError>> + Send + 'static>>;

/// What a task's channel carries to its followers.
#[derive(Debug, Clone)]
enum Feed {
    /// An event, stored.
    Event(StoredEvent),
    /// The store failed while the task ran: the turn ended without a stored terminal event.
    Broken(Arc<str>),
}

/// What a client is told when the store fails under a task.
const STORE_FAILED: &str =
    "the gateway could not store the task's events (the task store failed): the task was stopped";

pub(crate) const WORKING: &str = "TASK_STATE_WORKING";
pub(crate) const SUBMITTED: &str = "TASK_STATE_SUBMITTED";
const FAILED: &str = "TASK_STATE_FAILED";
const CANCELED: &str = "TASK_STATE_CANCELED";
/// Most artifact chunks between two stored snapshots of a task.
const SNAPSHOT_EVERY: u64 = 64;
/// How long a follower of a task another gateway runs waits for a notice before it reads the
/// task's log itself.
const REMOTE_POLL: Duration = Duration::from_secs(1);
/// How often an answer to a paused task tries again (50 ms apart) for the lease the pausing
/// gateway is about to let go of.
const LEASE_RETRIES: usize = 10;

/// Whether `state` ends a task.
pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED"
    )
}

/// Whether `state` pauses a task until the client answers.
pub fn is_interrupted(state: &str) -> bool {
    matches!(state, "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED")
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn now_ts() -> String {
    proto_timestamp(&e2a::timestamp::utc_now_iso())
}

/// A run in progress: how to follow it and how to stop it.
#[derive(Clone)]
struct Live {
    cancel: CancellationToken,
    canceled_by_client: Arc<AtomicBool>,
}

/// The A2A side of a gateway: configuration, the task store and the runs in progress.
pub struct A2aState {
    pub(crate) shared: Arc<Pipeline>,
    pub(crate) config: A2aConfig,
    pub(crate) store: Arc<dyn TaskStore>,
    /// When the card was made (it is fixed for the life of the gateway): `Last-Modified`.
    pub(crate) card_modified: String,
    live: Mutex<HashMap<String, Live>>,
    /// One channel per task followed by someone (a run or a subscriber); it outlives runs, so
    /// a subscriber of a paused task sees the turn its answer starts. Events other gateways
    /// sharing the store append arrive on it too.
    channels: Mutex<HashMap<String, broadcast::Sender<Feed>>>,
    /// Tasks whose run the store failed under, and why (what `GetTask` says of them until the
    /// store takes their `FAILED` status).
    broken: Mutex<HashMap<String, Arc<str>>>,
    /// This gateway's name in task leases.
    holder: String,
}

/// Where a follower's stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// At a terminal or interrupted state (a send's stream: the turn is over).
    TurnEnd,
    /// At a terminal state (a subscription).
    Terminal,
}

/// Whether `event` ends a stream that runs `until`.
fn ends(event: &Value, until: Until) -> bool {
    let state = event
        .pointer("/statusUpdate/status/state")
        .or_else(|| event.pointer("/task/status/state"))
        .and_then(Value::as_str)
        .unwrap_or("");
    is_terminal(state) || (until == Until::TurnEnd && is_interrupted(state))
}

impl std::fmt::Debug for A2aState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aState")
            .field("config", &self.config)
            .field("store", &self.store.name())
            .field("live", &self.live())
            .finish()
    }
}

/// How a send was answered.
pub enum SendOutcome {
    /// A direct message reply (no task).
    Message(Value),
    /// A task: its id, and its events from this turn's first on.
    Task {
        /// Task id.
        id: String,
        /// The events of this turn, then live ones until the turn ends.
        events: EventStream,
    },
}

/// What a caller asked about a send.
pub struct SendParams {
    /// The JSON-RPC request (`method`, `params`) the ingress reads.
    pub request: Value,
    /// `A2A-Version` and extensions.
    pub headers: A2aHeaders,
    /// Who sent it.
    pub caller: Caller,
}

impl A2aState {
    /// The A2A state of a gateway.
    pub(crate) fn new(shared: Arc<Pipeline>, config: A2aConfig, store: Arc<dyn TaskStore>) -> Self {
        A2aState {
            shared,
            config,
            store,
            card_modified: crate::bindings::a2a::card::http_date(std::time::SystemTime::now()),
            live: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
            broken: Mutex::new(HashMap::new()),
            holder: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// Starts the background work of a gateway (within a Tokio runtime): renewing the leases of
    /// its runs, and, on a store several gateways share, passing on what the others do and
    /// failing the tasks of instances that died. Each loop ends when the state is dropped.
    pub(crate) fn start(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!("A2A background work not started: no Tokio runtime");
            return;
        }
        if self.store.shared() {
            let lease = self.config.lease.max(Duration::from_millis(150));
            tokio::spawn(renew_leases(Arc::downgrade(self), lease / 3));
            tokio::spawn(reap_orphans(Arc::downgrade(self), lease / 2));
        }
        if let Some(notices) = self.store.notices() {
            tokio::spawn(pass_on_notices(Arc::downgrade(self), notices));
        }
    }

    /// Drops task `id`'s channel when its task has ended (`done`) or nobody follows it (its
    /// followers catch up from the log).
    fn drop_channel(&self, id: &str, done: bool) {
        let mut c = self.channels.lock();
        let idle = c.get(id).is_some_and(|tx| tx.receiver_count() == 0);
        if done || idle {
            c.remove(id);
        }
    }

    /// An event another gateway appended: to this gateway's followers of the task, if any.
    async fn relay(&self, task_id: &str, seq: u64, event: Option<Value>) {
        let Some(tx) = self.channels.lock().get(task_id).cloned() else {
            return;
        };
        let event = match event {
            Some(e) => e,
            // too large for the notice: from the log
            None => match self.store.events_after(task_id, seq.saturating_sub(1)).await {
                Ok(events) => match events.into_iter().find(|e| e.seq == seq) {
                    Some(e) => e.event,
                    None => return,
                },
                Err(e) => {
                    tracing::warn!(task_id, error = %e, "cannot read a relayed event");
                    return;
                }
            },
        };
        let done = ends(&event, Until::Terminal);
        let _ = tx.send(Feed::Event(StoredEvent { seq, event }));
        self.drop_channel(task_id, done);
    }

    /// Runs in progress.
    pub fn live(&self) -> usize {
        self.live.lock().len()
    }

    /// Cancels every run in progress (shutdown).
    pub fn cancel_all(&self) {
        for live in self.live.lock().values() {
            live.cancel.cancel();
        }
    }

    /// A receiver of task `id`'s channel (made on first use). It subscribes while holding the
    /// table's lock, so a channel is never dropped as idle between its lookup and the
    /// subscription.
    fn channel(&self, id: &str) -> broadcast::Receiver<Feed> {
        self.channels
            .lock()
            .entry(id.to_string())
            .or_insert_with(|| broadcast::channel(1024).0)
            .subscribe()
    }

    fn live_of(&self, id: &str) -> Option<Live> {
        self.live.lock().get(id).cloned()
    }

    /// Writes an event: applies it to the snapshot, appends it to the log, then tells followers.
    /// An event the store does not take reaches nobody: the error is returned (and logged), and
    /// `rec` holds the event applied in memory only.
    async fn commit(&self, rec: &mut TaskRecord, event: Value) -> Result<(), A2aError> {
        apply(&mut rec.task, &event);
        if let Some(s) = rec.task.pointer("/status/state").and_then(Value::as_str) {
            rec.state = s.to_string();
        }
        rec.updated_ms = now_ms();
        // artifact chunks leave the stored snapshot alone (up to SNAPSHOT_EVERY of them): a
        // reader catches up from the log
        let snapshot = event.get("artifactUpdate").is_none()
            || rec.last_seq.saturating_sub(rec.snapshot_seq) + 1 >= SNAPSHOT_EVERY;
        let seq = self
            .store
            .append(rec.clone(), event.clone(), snapshot)
            .await
            .map_err(|e| {
                tracing::error!(task_id = %rec.id, error = %e, "cannot store a task event: nobody is told of it");
                A2aError::internal(STORE_FAILED)
            })?;
        rec.last_seq = seq;
        if snapshot {
            rec.snapshot_seq = seq;
        }
        let tx = {
            let mut c = self.channels.lock();
            if is_terminal(&rec.state) {
                // the last event: followers get it, then the channel closes
                c.remove(&rec.id)
            } else {
                c.get(&rec.id).cloned()
            }
        };
        if let Some(tx) = tx {
            let _ = tx.send(Feed::Event(StoredEvent { seq, event }));
        }
        Ok(())
    }

    /// The store failed under task `rec`'s run: the run is stopped, the task is failed (in the
    /// store if it takes that, else `GetTask` says so from memory) and its followers end with
    /// an error; nobody sees an event the store did not take.
    async fn store_failed(&self, rec: &mut TaskRecord) {
        let why: Arc<str> = Arc::from(STORE_FAILED);
        self.broken.lock().insert(rec.id.clone(), why.clone());
        if let Some(live) = self.live_of(&rec.id) {
            live.cancel.cancel();
        }
        let ev = status_event(rec, FAILED, Some(agent_message(rec, STORE_FAILED)));
        if self.commit(rec, ev).await.is_ok() {
            self.broken.lock().remove(&rec.id);
            return;
        }
        if let Some(tx) = self.channels.lock().remove(&rec.id) {
            let _ = tx.send(Feed::Broken(why));
        }
    }

    /// A stored record with its snapshot brought up to date from the log.
    async fn caught_up(&self, mut rec: TaskRecord) -> Result<TaskRecord, A2aError> {
        if rec.snapshot_seq < rec.last_seq {
            for e in self.store.events_after(&rec.id, rec.snapshot_seq).await? {
                apply(&mut rec.task, &e.event);
                rec.snapshot_seq = e.seq;
            }
        }
        Ok(rec)
    }

    /// Task `id` from the store, up to date.
    async fn stored(&self, id: &str) -> Result<Option<TaskRecord>, A2aError> {
        match self.store.get(id).await? {
            Some(rec) => Ok(Some(self.caught_up(rec).await?)),
            None => Ok(None),
        }
    }

    /// The caller's task `id`, settled if its run is gone.
    pub async fn load(&self, id: &str, caller: &Caller) -> Result<TaskRecord, A2aError> {
        let rec = self
            .stored(id)
            .await?
            .filter(|r| r.owner == caller.subject)
            .ok_or_else(|| A2aError::task_not_found(id))?;
        Ok(self.settle(rec).await)
    }

    /// A task left `SUBMITTED`/`WORKING` without a run (the gateway stopped) ends as `FAILED`.
    async fn settle(&self, rec: TaskRecord) -> TaskRecord {
        let active = |r: &TaskRecord| r.state == WORKING || r.state == SUBMITTED;
        if !active(&rec) || self.live_of(&rec.id).is_some() {
            return rec;
        }
        // a run commits its last event before it leaves the table: read again to see it
        let mut rec = match self.stored(&rec.id).await {
            Ok(Some(fresh)) => fresh,
            _ => rec,
        };
        if !active(&rec) || self.live_of(&rec.id).is_some() {
            return rec;
        }
        // on a shared store, another instance may run it: only a task whose lease has expired
        // (this gateway can take it) has no run anywhere
        match self.store.acquire(&rec.id, &self.holder, self.config.lease).await {
            Ok(true) => {}
            Ok(false) => return rec,
            Err(e) => {
                tracing::error!(task_id = %rec.id, error = %e, "cannot check a task's lease");
                return rec;
            }
        }
        // read again under the lease: the run may have ended meanwhile
        if let Ok(Some(fresh)) = self.stored(&rec.id).await {
            rec = fresh;
        }
        if active(&rec) && self.live_of(&rec.id).is_none() {
            let broken = self.broken.lock().get(&rec.id).cloned();
            let why = match &broken {
                Some(why) => why,
                None if self.store.shared() => {
                    "the gateway running the task stopped before it finished (its lease expired)"
                }
                None => "the gateway restarted before the task finished",
            };
            tracing::warn!(task_id = %rec.id, "task without a run: failed ({why})");
            let ev = status_event(&rec, FAILED, Some(agent_message(&rec, why)));
            // a store that still fails: the task reads FAILED from memory (commit applied it)
            if self.commit(&mut rec, ev).await.is_ok() && broken.is_some() {
                self.broken.lock().remove(&rec.id);
            }
        }
        if let Err(e) = self.store.release(&rec.id, &self.holder).await {
            tracing::warn!(task_id = %rec.id, error = %e, "cannot release a task's lease");
        }
        rec
    }

    /// Starts a turn: a new task, or the answer to a paused one.
    pub async fn send(self: &Arc<Self>, p: SendParams) -> Result<SendOutcome, A2aError> {
        let mut env =
            envelope_from_request(&p.request, &p.headers).map_err(|e| A2aError::invalid_params(e.to_string()))?;
        let message = env.params.get("message").cloned().unwrap_or(Value::Null);
        check_message(&message)?;
        self.check_input_modes(&message)?;
        self.check_output_modes(&env.expected_output_modes)?;
        let configuration = env
            .params
            .get("configuration")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let return_immediately = configuration
            .get("returnImmediately")
            .and_then(Value::as_bool)
            .unwrap_or(false);

        // an existing task (a paused one, answered) or a new one
        let existing = match env.task_id.clone() {
            Some(id) => {
                let rec = self.load(&id, &p.caller).await?;
                if env.context_id.as_ref().is_some_and(|c| *c != rec.context_id) {
                    return Err(A2aError::invalid_params(format!(
                        "message contextId does not match the context of task {id}"
                    )));
                }
                if is_terminal(&rec.state) {
                    return Err(A2aError::new(
                        A2aErrorKind::UnsupportedOperation,
                        format!("task {id} is in a terminal state ({})", rec.state),
                    ));
                }
                if self.live_of(&id).is_some() {
                    return Err(A2aError::new(
                        A2aErrorKind::UnsupportedOperation,
                        format!("task {id} is still working; wait for it to ask for input"),
                    ));
                }
                if env.context_id.as_ref().is_some_and(|c| *c != rec.context_id) {
                    return Err(A2aError::invalid_params(format!(
                        "message contextId does not match the context of task {id}"
                    )));
                }
                Some(rec)
            }
            None => None,
        };
        let admission = self
            .shared
            .admit(p.caller.clone())
            .map_err(|r| A2aError::internal(r.message()))?;

        let task_id = existing
            .as_ref()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let context_id = existing
            .as_ref()
            .map(|r| r.context_id.clone())
            .or_else(|| env.context_id.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        env.task_id = Some(task_id.clone());
        env.context_id = Some(context_id.clone());
        env.session_id.get_or_insert_with(|| context_id.clone());
        env.request_id.get_or_insert_with(|| uuid::Uuid::new_v4().to_string());

        let ctx = admission.ctx.clone();
        // claim the task: one run at a time (two answers to one pause race here)
        let live = Live {
            cancel: ctx.cancel.clone(),
            canceled_by_client: Arc::new(AtomicBool::new(false)),
        };
        {
            let mut l = self.live.lock();
            if l.contains_key(&task_id) {
                return Err(A2aError::new(
                    A2aErrorKind::UnsupportedOperation,
                    format!("task {task_id} is still working; wait for it to ask for input"),
                ));
            }
            l.insert(task_id.clone(), live.clone());
        }
        // and across the gateways sharing the store: the lease (the gateway that paused the
        // task lets go of it just after storing the pause: an answer that quick waits a little)
        let mut leased = self.store.acquire(&task_id, &self.holder, self.config.lease).await;
        for _ in 0..LEASE_RETRIES {
            if !matches!(leased, Ok(false)) || existing.is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            leased = self.store.acquire(&task_id, &self.holder, self.config.lease).await;
        }
        if !matches!(leased, Ok(true)) {
            self.live.lock().remove(&task_id);
            return Err(match leased {
                Err(e) => A2aError::from(e),
                Ok(_) => A2aError::new(
                    A2aErrorKind::UnsupportedOperation,
                    format!("task {task_id} is still working on another gateway; wait for it to ask for input"),
                ),
            });
        }
        let mut frames = admission.run(env.clone());
        let permit = admission.into_permit();

        // a new task whose agent answers with a message first: a direct reply, no task
        let mut first: Option<E2AResponse> = None;
        if existing.is_none() && !return_immediately {
            first = frames.next().await;
            if let Some(f) = first.as_ref().filter(|f| f.kind() == Some(ResponseKind::A2aMessage)) {
                let mut reply = f.body.clone();
                reply.remove("taskId");
                reply.insert("contextId".into(), context_id.clone().into());
                reply
                    .entry("messageId")
                    .or_insert_with(|| uuid::Uuid::new_v4().to_string().into());
                reply.entry("role").or_insert_with(|| "ROLE_AGENT".into());
                ctx.cancel.cancel();
                self.live.lock().remove(&task_id);
                let _ = self.store.release(&task_id, &self.holder).await;
                return Ok(SendOutcome::Message(Value::Object(reply)));
            }
        }

        let mut user_message = message.clone();
        if let Some(m) = user_message.as_object_mut() {
            m.insert("taskId".into(), task_id.clone().into());
            m.insert("contextId".into(), context_id.clone().into());
        }
        let (mut rec, turn) = match existing {
            Some(mut rec) => {
                if let Some(t) = rec.task.as_object_mut() {
                    let history = t.entry("history").or_insert_with(|| json!([]));
                    if let Some(h) = history.as_array_mut() {
                        h.push(user_message);
                    }
                    t.insert("status".into(), json!({"state": WORKING, "timestamp": now_ts()}));
                }
                let turn = user_turns(&rec.task);
                (rec, turn)
            }
            None => {
                let ms = now_ms();
                let task = json!({"id": task_id, "contextId": context_id,
                    "status": {"state": SUBMITTED, "timestamp": now_ts()},
                    "history": [user_message], "artifacts": []});
                let rec = TaskRecord {
                    id: task_id.clone(),
                    context_id: context_id.clone(),
                    owner: p.caller.subject.clone(),
                    state: SUBMITTED.into(),
                    task,
                    last_seq: 0,
                    snapshot_seq: 0,
                    created_ms: ms,
                    updated_ms: ms,
                };
                (rec, 1)
            }
        };
        let snapshot = json!({"task": rec.task.clone()});
        let before = rec.last_seq;
        let rx = self.channel(&task_id);
        if let Err(e) = self.commit(&mut rec, snapshot).await {
            // nothing of the task is stored: no task, and the agent's run stops here
            ctx.cancel.cancel();
            self.live.lock().remove(&task_id);
            self.drop_channel(&task_id, true);
            let _ = self.store.release(&task_id, &self.holder).await;
            return Err(e);
        }

        let mapper = TurnMapper::new(&task_id, &context_id, turn, live.canceled_by_client.clone());
        let this = self.clone();
        tokio::spawn(async move {
            let _permit = permit;
            this.pump(rec, first, frames, mapper).await;
        });
        Ok(SendOutcome::Task {
            id: task_id.clone(),
            events: self.follow(task_id, before, Some(rx), Until::TurnEnd),
        })
    }

    async fn pump(
        &self,
        mut rec: TaskRecord,
        first: Option<E2AResponse>,
        mut frames: crate::FrameStream,
        mut mapper: TurnMapper,
    ) {
        let mut next = first;
        loop {
            let frame = match next.take() {
                Some(f) => f,
                None => match frames.next().await {
                    Some(f) => f,
                    None => break,
                },
            };
            let mut stored = true;
            for ev in mapper.push(&frame) {
                if self.commit(&mut rec, ev).await.is_err() {
                    stored = false;
                    break;
                }
            }
            if !stored {
                self.store_failed(&mut rec).await;
                break;
            }
            if frame.is_final {
                break;
            }
        }
        if !is_terminal(&rec.state) && !is_interrupted(&rec.state) {
            let ev = status_event(
                &rec,
                FAILED,
                Some(agent_message(&rec, "the agent ended without a final state")),
            );
            if self.commit(&mut rec, ev).await.is_err() {
                self.store_failed(&mut rec).await;
            }
        }
        self.live.lock().remove(&rec.id);
        if let Err(e) = self.store.release(&rec.id, &self.holder).await {
            tracing::warn!(task_id = %rec.id, error = %e, "cannot release a task's lease");
        }
        self.drop_channel(&rec.id, is_terminal(&rec.state));
    }

    /// The events of task `id` after `after` from the log, then live ones, until an event ends
    /// the stream (`until`), the channel closes, or the gateway drains and no run is behind it.
    fn follow(
        self: &Arc<Self>,
        id: String,
        after: u64,
        rx: Option<broadcast::Receiver<Feed>>,
        until: Until,
    ) -> EventStream {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            let mut last = after;
            match this.store.events_after(&id, last).await {
                Ok(events) => for e in events {
                    last = e.seq;
                    let end = ends(&e.event, until);
                    yield Ok(e);
                    if end { return; }
                },
                Err(e) => {
                    yield Err(A2aError::from(e));
                    return;
                }
            }
            let Some(mut rx) = rx else { return };
            // a task another gateway runs: its events come as notices, and after a quiet
            // REMOTE_POLL from the log (a notice lost while the listener reconnected)
            let shared = this.store.shared();
            let mut quiet = Instant::now();
            loop {
                let got = tokio::select! {
                    r = rx.recv() => Some(r),
                    _ = tokio::time::sleep(Duration::from_millis(250)) => None,
                };
                let closed = match got {
                    None => {
                        if this.shared.runs.draining() && this.live_of(&id).is_none() {
                            return;
                        }
                        if !(shared && quiet.elapsed() >= REMOTE_POLL && this.live_of(&id).is_none()) {
                            continue;
                        }
                        quiet = Instant::now();
                        false
                    }
                    Some(Ok(Feed::Broken(why))) => {
                        yield Err(A2aError::internal(why.to_string()));
                        return;
                    }
                    Some(Ok(Feed::Event(e))) if e.seq == last.saturating_add(1) => {
                        quiet = Instant::now();
                        last = e.seq;
                        let end = ends(&e.event, until);
                        yield Ok(e);
                        if end { return; }
                        continue;
                    }
                    Some(Ok(Feed::Event(e))) if e.seq <= last => continue,
                    Some(Ok(_)) | Some(Err(broadcast::error::RecvError::Lagged(_))) => false,
                    Some(Err(broadcast::error::RecvError::Closed)) => true,
                };
                // a gap (lagged), a quiet spell or a closed channel: catch up from the log
                match this.store.events_after(&id, last).await {
                    Ok(events) => for e in events {
                        quiet = Instant::now();
                        last = e.seq;
                        let end = ends(&e.event, until);
                        yield Ok(e);
                        if end { return; }
                    },
                    Err(e) => {
                        yield Err(A2aError::from(e));
                        return;
                    }
                }
                if closed {
                    // a channel closes after its task's last event, which the log then holds;
                    // one that closed before the end (dropped as idle): follow a new one
                    rx = this.channel(&id);
                }
            }
        })
    }

    /// `SubscribeToTask`: with `last_seen` (an SSE `Last-Event-ID`), the events after it, then
    /// live ones; without, the task as it is, then live events. A task that has ended can only
    /// be replayed from a `last_seen`.
    pub async fn subscribe(
        self: &Arc<Self>,
        id: &str,
        caller: &Caller,
        last_seen: Option<u64>,
    ) -> Result<EventStream, A2aError> {
        let rec = self.load(id, caller).await?;
        if is_terminal(&rec.state) {
            return match last_seen {
                // the log of an ended task can still be replayed
                Some(after) => Ok(self.follow(rec.id, after, None, Until::Terminal)),
                None => Err(A2aError::new(
                    A2aErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is in a terminal state ({}); nothing to subscribe to",
                        rec.state
                    ),
                )),
            };
        }
        // follow first, then read the task: nothing falls between the two
        let rx = self.channel(id);
        let rec = self.load(id, caller).await?;
        match last_seen {
            Some(after) => Ok(self.follow(rec.id, after, Some(rx), Until::Terminal)),
            None => {
                let head = StoredEvent {
                    seq: rec.last_seq,
                    event: json!({"task": rec.task}),
                };
                if is_terminal(&rec.state) {
                    return Ok(Box::pin(futures_util::stream::iter([Ok(head)])));
                }
                let rest = self.follow(rec.id, rec.last_seq, Some(rx), Until::Terminal);
                Ok(Box::pin(futures_util::stream::iter([Ok(head)]).chain(rest)))
            }
        }
    }

    /// Waits (up to the blocking timeout) for the current turn of task `id` to end.
    pub async fn wait(self: &Arc<Self>, mut events: EventStream) {
        let timeout = self.config.blocking_timeout;
        let _ = tokio::time::timeout(timeout, async move { while events.next().await.is_some() {} }).await;
    }

    /// Waits (up to 10 s) for the current turn of task `id` to end, following it from `after`.
    async fn wait_turn_end(self: &Arc<Self>, id: &str, after: u64, rx: broadcast::Receiver<Feed>) {
        let mut events = self.follow(id.to_string(), after, Some(rx), Until::TurnEnd);
        let _ = tokio::time::timeout(Duration::from_secs(10), async move {
            while events.next().await.is_some() {}
        })
        .await;
    }

    /// `CancelTask`.
    pub async fn cancel(self: &Arc<Self>, id: &str, caller: &Caller) -> Result<Value, A2aError> {
        let mut rec = self.load(id, caller).await?;
        if is_terminal(&rec.state) {
            return Err(A2aError::new(
                A2aErrorKind::TaskNotCancelable,
                format!("task {id} is already {}", rec.state),
            ));
        }
        match self.live_of(id) {
            Some(live) => {
                let rx = self.channel(id);
                live.canceled_by_client.store(true, Ordering::SeqCst);
                live.cancel.cancel();
                self.wait_turn_end(id, rec.last_seq, rx).await;
                rec = self.load(id, caller).await?;
            }
            None => {
                let rx = self.channel(id);
                let free = self.store.acquire(id, &self.holder, self.config.lease).await?;
                if free {
                    // no run anywhere (a paused task, or one whose gateway died)
                    if let Some(fresh) = self.stored(id).await? {
                        rec = fresh;
                    }
                    let canceled = if is_terminal(&rec.state) {
                        Ok(())
                    } else {
                        let ev = status_event(&rec, CANCELED, Some(agent_message(&rec, "canceled by the client")));
                        self.commit(&mut rec, ev).await
                    };
                    self.store.release(id, &self.holder).await?;
                    canceled?;
                } else {
                    // another gateway runs it: ask it to stop, and wait for the turn to end
                    self.store.request_cancel(id).await?;
                    self.wait_turn_end(id, rec.last_seq, rx).await;
                    rec = self.load(id, caller).await?;
                }
            }
        }
        Ok(rec.task)
    }

    /// `ListTasks` for `caller` (params in the 1.0 camelCase names).
    pub async fn list(&self, params: &Map<String, Value>, caller: &Caller) -> Result<Value, A2aError> {
        let page_size = match params.get("pageSize") {
            None | Some(Value::Null) => 50,
            Some(v) => match int_of(v) {
                Some(n) if (1..=100).contains(&n) => usize::try_from(n).unwrap_or(50),
                Some(0) => 50,
                _ => return Err(A2aError::invalid_params("pageSize must be between 1 and 100")),
            },
        };
        let offset = match params
            .get("pageToken")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            None => 0,
            Some(t) => t
                .parse::<usize>()
                .map_err(|_| A2aError::invalid_params("pageToken is not a token this server issued"))?,
        };
        let history = history_length(params)?;
        let include_artifacts = match params.get("includeArtifacts") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
            Some(_) => return Err(A2aError::invalid_params("includeArtifacts must be a boolean")),
        };
        let state = match params.get("status") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() || s == "TASK_STATE_UNSPECIFIED" => None,
            Some(Value::String(s)) => Some(normalize_task_state(s)),
            Some(_) => return Err(A2aError::invalid_params("status must be a task state")),
        };
        let context_id = params
            .get("contextId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from);
        let updated_after_ms = match params.get("statusTimestampAfter").and_then(Value::as_str) {
            None => None,
            Some(t) => Some(
                e2a::timestamp::parse_rfc3339_ms(t)
                    .ok_or_else(|| A2aError::invalid_params("statusTimestampAfter must be an RFC 3339 timestamp"))?,
            ),
        };
        let query = TaskQuery {
            owner: caller.subject.clone(),
            context_id,
            state,
            updated_after_ms,
            offset,
            limit: page_size,
        };
        let page = self.store.list(query).await?;
        let mut tasks = Vec::new();
        for rec in page.tasks {
            let rec = self.caught_up(rec).await?;
            let rec = self.settle(rec).await;
            let mut task = trim_history(rec.task, history);
            if !include_artifacts {
                if let Some(t) = task.as_object_mut() {
                    t.remove("artifacts");
                }
            }
            tasks.push(task);
        }
        let next = offset.saturating_add(tasks.len());
        let next_token = if next < page.total {
            next.to_string()
        } else {
            String::new()
        };
        Ok(json!({"tasks": tasks, "nextPageToken": next_token, "pageSize": page_size, "totalSize": page.total}))
    }

    /// Every part's `mediaType` must be one the card accepts (`defaultInputModes`).
    fn check_input_modes(&self, message: &Value) -> Result<(), A2aError> {
        let ours = &self.config.card.default_input_modes;
        let parts = message
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, p) in parts.iter().enumerate() {
            if let Some(media) = p.get("mediaType").and_then(Value::as_str).filter(|m| !m.is_empty()) {
                if !media_fits(ours, media) {
                    return Err(A2aError::new(
                        A2aErrorKind::ContentTypeNotSupported,
                        format!(
                            "params.message.parts[{i}].mediaType {media} is not accepted (the agent takes {})",
                            ours.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_output_modes(&self, accepted: &[String]) -> Result<(), A2aError> {
        if accepted.is_empty() {
            return Ok(());
        }
        let ours = &self.config.card.default_output_modes;
        let fits = |a: &str| {
            let a = a.trim().to_ascii_lowercase();
            a == "*/*"
                || ours.iter().any(|o| {
                    let o = o.to_ascii_lowercase();
                    o == a || a.strip_suffix("/*").is_some_and(|t| o.starts_with(&format!("{t}/")))
                })
        };
        if accepted.iter().any(|a| fits(a)) {
            Ok(())
        } else {
            Err(A2aError::new(
                A2aErrorKind::ContentTypeNotSupported,
                format!(
                    "none of the accepted output modes is produced (the agent answers {})",
                    ours.join(", ")
                ),
            ))
        }
    }
}

/// Whether `media` (a part's type) is one of `modes` (`*/*`, `type/*` and parameters allowed).
/// Renews the leases of this gateway's runs every `period`; a run whose lease another
/// gateway took over (this one was presumed dead) is cancelled.
async fn renew_leases(state: std::sync::Weak<A2aState>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = state.upgrade() else { return };
        let ids: Vec<String> = this.live.lock().keys().cloned().collect();
        if ids.is_empty() {
            continue;
        }
        match this.store.renew(&this.holder, ids, this.config.lease).await {
            Ok(lost) => {
                for id in lost {
                    tracing::error!(task_id = %id, "lost the lease of a running task: stopping its run");
                    if let Some(live) = this.live_of(&id) {
                        live.cancel.cancel();
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot renew task leases"),
        }
    }
}

/// Fails, every `period`, the tasks whose gateway died (their lease expired).
async fn reap_orphans(state: std::sync::Weak<A2aState>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = state.upgrade() else { return };
        match this.store.orphans().await {
            Ok(ids) => {
                for id in ids {
                    if let Ok(Some(rec)) = this.stored(&id).await {
                        this.settle(rec).await;
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot look for orphaned tasks"),
        }
    }
}

/// Passes on what other gateways sharing the store do: their events to this gateway's
/// followers, their cancel requests to this gateway's runs.
async fn pass_on_notices(state: std::sync::Weak<A2aState>, mut notices: broadcast::Receiver<StoreNotice>) {
    loop {
        let notice = notices.recv().await;
        let Some(this) = state.upgrade() else { return };
        match notice {
            Ok(StoreNotice::Appended { task_id, seq, event }) => this.relay(&task_id, seq, event).await,
            Ok(StoreNotice::CancelRequested { task_id }) => {
                if let Some(live) = this.live_of(&task_id) {
                    live.canceled_by_client.store(true, Ordering::SeqCst);
                    live.cancel.cancel();
                }
            }
            // followers see the gap (or a quiet spell) and read the log
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "task store notices lagged");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

fn media_fits(modes: &[String], media: &str) -> bool {
    let base = |m: &str| m.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let media = base(media);
    modes
        .iter()
        .map(|m| base(m))
        .any(|m| m == "*/*" || m == media || m.strip_suffix("/*").is_some_and(|t| media.split('/').next() == Some(t)))
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// `historyLength` of a request: `None` for all of it.
pub fn history_length(params: &Map<String, Value>) -> Result<Option<usize>, A2aError> {
    match params.get("historyLength") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match int_of(v) {
            Some(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(A2aError::invalid_params("historyLength must be a non-negative integer")),
        },
    }
}

/// The task with only its last `n` history messages (all for `None`; none for 0).
pub fn trim_history(mut task: Value, n: Option<usize>) -> Value {
    if let (Some(n), Some(t)) = (n, task.as_object_mut()) {
        if n == 0 {
            t.remove("history");
        } else if let Some(Value::Array(h)) = t.get_mut("history") {
            let skip = h.len().saturating_sub(n);
            h.drain(..skip);
        }
    }
    task
}

fn check_message(message: &Value) -> Result<(), A2aError> {
    let m = message
        .as_object()
        .ok_or_else(|| A2aError::invalid_params("params.message must be an object"))?;
    if m.get("messageId").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(A2aError::invalid_params("params.message.messageId is required"));
    }
    if !matches!(m.get("role").and_then(Value::as_str), Some("ROLE_USER" | "ROLE_AGENT")) {
        return Err(A2aError::invalid_params(
            "params.message.role must be ROLE_USER or ROLE_AGENT",
        ));
    }
    match m.get("parts").and_then(Value::as_array) {
        Some(parts) if !parts.is_empty() => {
            for (i, p) in parts.iter().enumerate() {
                let known = p
                    .as_object()
                    .is_some_and(|p| ["text", "raw", "url", "data"].iter().any(|k| p.contains_key(*k)));
                if !known {
                    return Err(A2aError::invalid_params(format!(
                        "params.message.parts[{i}] has none of text, raw, url, data"
                    )));
                }
            }
            Ok(())
        }
        _ => Err(A2aError::invalid_params(
            "params.message.parts must be a non-empty array",
        )),
    }
}

fn user_turns(task: &Value) -> usize {
    task.get("history")
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("ROLE_USER"))
                .count()
        })
        .unwrap_or(1)
}

fn agent_message(rec: &TaskRecord, text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_AGENT",
        "taskId": rec.id, "contextId": rec.context_id, "parts": [{"text": text}]})
}

fn status_event(rec: &TaskRecord, state: &str, message: Option<Value>) -> Value {
    let mut status = json!({"state": state, "timestamp": now_ts()});
    if let Some(m) = message {
        status["message"] = m;
    }
    json!({"statusUpdate": {"taskId": rec.id, "contextId": rec.context_id, "status": status}})
}

/// Applies a `StreamResponse` to a task snapshot: a `task` replaces it, a status update sets the
/// status (its message joins the history), an artifact update adds or appends to an artifact.
pub fn apply(task: &mut Value, event: &Value) {
    if let Some(t) = event.get("task") {
        *task = t.clone();
        return;
    }
    let Some(obj) = task.as_object_mut() else { return };
    if let Some(u) = event.get("statusUpdate") {
        if let Some(status) = u.get("status") {
            if let Some(m) = status.get("message") {
                if let Some(Value::Array(h)) = obj.get_mut("history") {
                    h.push(m.clone());
                } else {
                    obj.insert("history".into(), json!([m]));
                }
            }
            obj.insert("status".into(), status.clone());
        }
    } else if let Some(u) = event.get("artifactUpdate") {
        let Some(artifact) = u.get("artifact") else { return };
        let id = artifact.get("artifactId").cloned();
        let append = u.get("append").and_then(Value::as_bool).unwrap_or(false);
        let list = obj.entry("artifacts").or_insert_with(|| json!([]));
        let Some(list) = list.as_array_mut() else { return };
        match list.iter_mut().find(|a| a.get("artifactId") == id.as_ref()) {
            Some(existing) if append => {
                let new_parts = artifact
                    .get("parts")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if let Some(Value::Array(parts)) = existing.get_mut("parts") {
                    // text pieces of one text part are joined; other parts are added
                    for p in new_parts {
                        match (parts.last_mut(), p.get("text").and_then(Value::as_str)) {
                            (Some(last), Some(more)) if last.get("text").is_some() => {
                                let joined =
                                    format!("{}{more}", last.get("text").and_then(Value::as_str).unwrap_or(""));
                                last["text"] = joined.into();
                            }
                            _ => parts.push(p),
                        }
                    }
                }
            }
            Some(existing) => *existing = artifact.clone(),
            None => list.push(artifact.clone()),
        }
    }
}

/// One turn's frames → A2A events: the e2a projector, with the gateway's task bookkeeping
/// around it (the task was already sent as `SUBMITTED`, so the projector's opening `task`
/// becomes a `WORKING` status update; artifact chunks of the agent go through the projector's
/// `a2a.stream_event` path; the final status carries the final text).
struct TurnMapper {
    projector: A2aStreamProjector,
    task_id: String,
    context_id: String,
    output: String,
    turn: usize,
    text: String,
    canceled_by_client: Arc<AtomicBool>,
}

impl TurnMapper {
    fn new(task_id: &str, context_id: &str, turn: usize, canceled_by_client: Arc<AtomicBool>) -> Self {
        TurnMapper {
            projector: A2aStreamProjector::new(task_id, context_id),
            task_id: task_id.into(),
            context_id: context_id.into(),
            output: format!("{task_id}-output"),
            turn,
            text: String::new(),
            canceled_by_client,
        }
    }

    /// An agent's artifact chunk (`delta_kind: custom`, `event_type: artifact`) as the
    /// `a2a.stream_event` frame the projector passes through.
    fn artifact_frame(&self, frame: &E2AResponse) -> Option<E2AResponse> {
        if frame.kind() != Some(ResponseKind::E2aChunk)
            || frame.body.get("event_type").and_then(Value::as_str) != Some("artifact")
        {
            return None;
        }
        let d = frame.body.get("delta")?;
        let mut artifact = json!({"artifactId": d.get("artifact_id").cloned().unwrap_or_else(|| "artifact".into()),
            "parts": d.get("parts").cloned().unwrap_or_else(|| json!([]))});
        if let Some(n) = d.get("name").filter(|n| n.is_string()) {
            artifact["name"] = n.clone();
        }
        let payload = json!({"taskId": self.task_id, "contextId": self.context_id, "artifact": artifact,
            "append": d.get("append").and_then(Value::as_bool).unwrap_or(false),
            "lastChunk": d.get("last_chunk").and_then(Value::as_bool).unwrap_or(true)});
        let mut f = E2AResponse::new(
            ResponseKind::A2aStreamEvent,
            json!({"branch": "artifact_update", "payload": payload}),
        );
        f.sequence = frame.sequence;
        f.request_id = frame.request_id.clone();
        f.timestamp = frame.timestamp.clone();
        Some(f)
    }

    fn push(&mut self, frame: &E2AResponse) -> Vec<Value> {
        let converted = self.artifact_frame(frame);
        let events = self.projector.push(converted.as_ref().unwrap_or(frame));
        let mut out = Vec::new();
        for mut ev in events {
            if let Some(t) = ev.get("task") {
                ev = json!({"statusUpdate": {"taskId": self.task_id, "contextId": self.context_id,
                    "status": {"state": t.pointer("/status/state").cloned().unwrap_or_else(|| WORKING.into()),
                               "timestamp": now_ts()}}});
            }
            if let Some(u) = ev.get_mut("artifactUpdate") {
                if u.pointer("/artifact/artifactId").and_then(Value::as_str) == Some(self.output.as_str()) {
                    if let Some(Value::Array(parts)) = u.pointer("/artifact/parts") {
                        for p in parts {
                            if let Some(t) = p.get("text").and_then(Value::as_str) {
                                self.text.push_str(t);
                            }
                        }
                    }
                    if self.turn > 1 {
                        u["artifact"]["artifactId"] = format!("{}-{}", self.output, self.turn).into();
                    }
                    u["artifact"]["name"] = "output".into();
                }
            }
            if let Some(status) = ev.pointer_mut("/statusUpdate/status") {
                self.finish_status(status, frame);
            }
            out.push(ev);
        }
        out
    }

    /// The final status carries the final text; a pause says what it asks; a cancel says who.
    fn finish_status(&self, status: &mut Value, frame: &E2AResponse) {
        let state = status.get("state").and_then(Value::as_str).unwrap_or("").to_string();
        let message = |text: &str| {
            json!({"messageId": frame.response_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                "role": "ROLE_AGENT", "taskId": self.task_id, "contextId": self.context_id,
                "parts": [{"text": text}]})
        };
        match state.as_str() {
            "TASK_STATE_COMPLETED" if status.get("message").is_none() => {
                let text = if self.text.is_empty() {
                    frame
                        .body
                        .get("result")
                        .and_then(|r| r.get("content"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                } else {
                    self.text.clone()
                };
                if !text.is_empty() {
                    status["message"] = message(&text);
                }
            }
            "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED" => {
                let prompt = frame.body.get("plan_content").and_then(Value::as_str).map(String::from);
                if let (Some(prompt), Some(Value::Array(parts))) = (prompt, status.pointer_mut("/message/parts")) {
                    parts.insert(0, json!({"text": prompt}));
                }
            }
            CANCELED if self.canceled_by_client.load(Ordering::SeqCst) => {
                status["message"] = message("canceled by the client");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_append() {
        let mut task = json!({"id": "t", "artifacts": []});
        apply(
            &mut task,
            &json!({"artifactUpdate": {"artifact": {"artifactId": "a", "parts": [{"text": "He"}]}}}),
        );
        apply(
            &mut task,
            &json!({"artifactUpdate": {"append": true, "artifact": {"artifactId": "a", "parts": [{"text": "llo"}]}}}),
        );
        assert_eq!(task["artifacts"][0]["parts"], json!([{"text": "Hello"}]));
        let t = trim_history(json!({"history": [1, 2, 3]}), Some(2));
        assert_eq!(t["history"], json!([2, 3]));
    }
}
