//! Tasks: an A2A message becomes an E2A envelope (`e2a::a2a::jsonrpc::envelope_from_call`),
//! the agent's frames pass the stream boundary and become A2A `StreamResponse` events
//! (`e2a::a2a::stream::A2aStreamProjector`), and every event is applied to the task's snapshot
//! and appended to its log in the [`crate::store::TaskLog`] before any client sees it.
//!
//! Lifecycle: `SUBMITTED → WORKING → (INPUT_REQUIRED | AUTH_REQUIRED) → COMPLETED | FAILED |
//! CANCELED | REJECTED`. A message carrying the `taskId` of a paused task answers it (the same
//! task goes on, in the same context); an agent that answers with an `a2a.message` frame first
//! gets a direct `Message` reply and no task. A task found `SUBMITTED`/`WORKING` with no run
//! behind it (the gateway restarted) is settled as `FAILED`, so its log ends.

mod cluster;
pub mod config;
pub mod error;
mod feed;
mod log;
pub(crate) mod params;
pub mod push;
mod send;
pub(crate) mod sent;
mod snapshot;
mod turn;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use e2a::a2a::jsonrpc::A2aHeaders;
use e2a::types::{A2aListTasksResponse, A2aStreamResponse, A2aTask, A2aTaskState};
use e2a::E2AResponse;
use futures_util::{FutureExt, Stream, StreamExt};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use self::error::{A2aError, A2aErrorKind};
use self::feed::{Feed, Until};
pub use self::params::history_length;
use self::params::ListParams;
pub use self::snapshot::trim_history;
use self::snapshot::{agent_message, status_event};
use self::turn::TurnMapper;
use crate::agent::Caller;
use crate::pipeline::boundary::SharedFrames;
use crate::pipeline::Pipeline;
use crate::store::{StoredEvent, Stores, TaskQuery, TaskRecord};
use crate::tasks::config::A2aConfig;

/// A2A events with their log sequence numbers, as a binding streams them. An `Err` ends the
/// stream: the task could not go on (its store failed) and the binding answers it in its
/// protocol's error form; every `Ok` event was stored before it was yielded.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StoredEvent, A2aError>> + Send + 'static>>;

/// What a client is told when the store fails under a task.
const STORE_FAILED: &str =
    "the gateway could not store the task's events (the task store failed): the task was stopped";

const SUBMITTED: A2aTaskState = A2aTaskState::TaskStateSubmitted;
const WORKING: A2aTaskState = A2aTaskState::TaskStateWorking;
const FAILED: A2aTaskState = A2aTaskState::TaskStateFailed;
const CANCELED: A2aTaskState = A2aTaskState::TaskStateCanceled;
/// Most events a run stores in one append (what its agent had ready at once).
const READY_EVENTS: usize = 256;
/// Most artifact chunks between two stored snapshots of a task.
const SNAPSHOT_EVERY: u64 = 64;
/// How often an answer to a paused task tries again (50 ms apart) for the lease the pausing
/// gateway is about to let go of.
const LEASE_RETRIES: usize = 10;

/// What a run pumps into its task: the frame already read (the first, when the agent's answer
/// was looked at before the task was made), the rest of the agent's frames, and their mapping
/// to A2A events.
struct Turn {
    /// The turn's opening event (the task, `SUBMITTED` or answered), when the run stores it:
    /// with the agent's first ready frames, or alone when none is ready.
    opening: Option<A2aStreamResponse>,
    next: Option<Arc<E2AResponse>>,
    frames: SharedFrames,
    mapper: TurnMapper,
}

/// A run in progress: how to follow it and how to stop it.
#[derive(Clone)]
struct Live {
    cancel: CancellationToken,
    /// Why the gateway cancels the run, set before `cancel` fires (the final frame's reason).
    stop: crate::pipeline::boundary::StopCell,
    canceled_by_client: Arc<AtomicBool>,
}

/// The A2A side of a gateway: configuration, the task store and the runs in progress.
pub struct TaskService {
    shared: Arc<Pipeline>,
    config: A2aConfig,
    store: Stores,
    /// When the card was made (it is fixed for the life of the gateway): `Last-Modified`.
    card_modified: String,
    live: Mutex<HashMap<String, Live>>,
    /// One channel per task followed by someone (a run or a subscriber); it outlives runs, so
    /// a subscriber of a paused task sees the turn its answer starts. Events other gateways
    /// sharing the store append arrive on it too.
    channels: Mutex<HashMap<String, broadcast::Sender<Feed>>>,
    /// Tasks whose run the store failed under, and why (what `GetTask` says of them until the
    /// store takes their `FAILED` status).
    broken: Mutex<HashMap<String, Arc<str>>>,
    /// This gateway's name in task leases (and push claims).
    holder: String,
    /// Push notifications: the policy, the delivery client, the outbox's wake-up.
    push: Arc<crate::tasks::push::Pusher>,
    /// The named agents' services, by name: a request whose `tenant` names one goes there
    /// (A2A 1.0's multi-tenant form). Set when the gateway's routes are built.
    tenants: std::sync::OnceLock<HashMap<String, Arc<TaskService>>>,
    /// A named agent reached over the root agent's gRPC service: its `tenant` there (its card
    /// declares that interface). Set when the gateway's routes are built.
    grpc_tenant: std::sync::OnceLock<String>,
    /// Whether its background work was started ([`TaskService::start`]: once).
    started: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService")
            .field("config", &self.config)
            .field("store", &self.store.tasks.name())
            .field("live", &self.live())
            .finish()
    }
}

/// How the service started a send (see [`TaskService::send_message`] and
/// [`TaskService::send_streaming`] for what a binding gets).
enum SendOutcome {
    /// A direct message reply (no task).
    Message(Value),
    /// A task, to a streaming send: its id, and its events from this turn's first on.
    Stream { id: String, events: EventStream },
    /// A task, to a non-streaming send: its id, and the task when the turn ends.
    Task { id: String, done: TurnDone },
    /// The same send made before (same key, same content): its task, the agent not run again.
    Repeat { id: String },
}

/// What a non-streaming send (`SendMessage`) is answered with.
pub enum Sent {
    /// The agent's direct `Message` reply (no task).
    Message(Value),
    /// The `Task` JSON as the gateway wrote it (as stored; trusted, so never parsed again).
    Task(Arc<str>),
}

/// The task (its `Task` JSON) as a run stored it when its turn ended: what a blocking send
/// answers with, without reading the store back; or why nothing of the turn was stored.
/// Nothing comes when the run's last write was not a snapshot (its store failed later).
pub struct TurnDone(oneshot::Receiver<Result<Arc<str>, A2aError>>);

/// What a caller asked about a send.
pub struct SendParams {
    /// The JSON-RPC request id (null on HTTP+JSON).
    pub id: Value,
    /// The request's params (1.0 camelCase names).
    pub params: Map<String, Value>,
    /// `A2A-Version` and extensions.
    pub headers: A2aHeaders,
    /// Who sent it.
    pub caller: Caller,
    /// The trace the request belongs to (its `traceparent` or `X-Trace-ID`): the envelope's
    /// `correlation_id` when the message names none.
    pub trace_id: Option<String>,
    /// The request's `Idempotency-Key` (HTTP bindings): a retry with the same key and the
    /// same request gets the first one's task; another request under it is refused (`409`).
    pub idempotency_key: Option<String>,
}

impl TaskService {
    /// The A2A state of a gateway.
    pub(crate) fn new(shared: Arc<Pipeline>, mut config: A2aConfig, store: Stores) -> Self {
        // a store that keeps no push configs: the card says so, the operations refuse
        config.push.enabled &= store.pushes.is_some();
        TaskService {
            push: Arc::new(crate::tasks::push::Pusher::new(config.push.clone())),
            shared,
            config,
            store,
            card_modified: httpdate::fmt_http_date(std::time::SystemTime::now()),
            live: Mutex::new(HashMap::new()),
            channels: Mutex::new(HashMap::new()),
            broken: Mutex::new(HashMap::new()),
            holder: e2a::stream::new_id(),
            tenants: std::sync::OnceLock::new(),
            grpc_tenant: std::sync::OnceLock::new(),
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Starts the background work of a gateway (within a Tokio runtime): forgetting finished
    /// tasks past the retention, delivering push notifications, and, on a store several
    /// gateways share, renewing the leases of its runs, passing on what the others do and
    /// failing the tasks of instances that died. Each loop ends when the state is dropped.
    pub(crate) fn start(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!("A2A background work not started: no Tokio runtime");
            return;
        }
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if self.store.leases.shared() {
            let lease = self.shared.config.lease.max(Duration::from_millis(150));
            tokio::spawn(cluster::renew_leases(Arc::downgrade(self), lease / 3));
            tokio::spawn(cluster::reap_orphans(Arc::downgrade(self), lease / 2));
        } else {
            // what this gateway ran before it restarted has no run now
            let this = self.clone();
            tokio::spawn(async move { cluster::settle_orphans(&this).await });
        }
        if let Some(notices) = self.store.leases.notices() {
            tokio::spawn(cluster::pass_on_notices(Arc::downgrade(self), notices));
        }
        let every = (self.config.task_retention / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        tokio::spawn(cluster::forget_finished(Arc::downgrade(self), every));
        if self.config.push.enabled {
            tokio::spawn(crate::tasks::push::run_outbox(Arc::downgrade(self), self.push.clone()));
        }
    }

    /// The run pipeline its turns go through (the gateway's config, auth, metrics).
    pub(crate) fn pipeline(&self) -> &Arc<Pipeline> {
        &self.shared
    }

    /// Where its bindings are mounted and what its card says.
    pub(crate) fn config(&self) -> &A2aConfig {
        &self.config
    }

    /// When its card was made (`Last-Modified`).
    pub(crate) fn card_modified(&self) -> &str {
        &self.card_modified
    }

    /// The named agents' services a request's `tenant` may name (set once the routes are
    /// built), by name.
    pub(crate) fn tenants(&self) -> Option<&HashMap<String, Arc<TaskService>>> {
        self.tenants.get()
    }

    /// Sets the named agents' services a `tenant` names (the first call wins).
    pub(crate) fn set_tenants(&self, named: HashMap<String, Arc<TaskService>>) {
        let _ = self.tenants.set(named);
    }

    /// This named agent's `tenant` on the root agent's gRPC service, when it is reached there.
    pub(crate) fn grpc_tenant(&self) -> Option<&str> {
        self.grpc_tenant.get().map(String::as_str)
    }

    /// Sets this named agent's gRPC `tenant` (the first call wins).
    pub(crate) fn set_grpc_tenant(&self, name: &str) {
        let _ = self.grpc_tenant.set(name.to_string());
    }

    /// Runs in progress.
    pub fn live(&self) -> usize {
        self.live.lock().len()
    }

    /// Cancels every run in progress (shutdown).
    pub fn cancel_all(&self) {
        for live in self.live.lock().values() {
            // the run ends with `reason: "shutdown"`, not as if its client went away
            let _ = live.stop.set(crate::pipeline::boundary::StopReason::Shutdown);
            live.cancel.cancel();
        }
    }

    fn live_of(&self, id: &str) -> Option<Live> {
        self.live.lock().get(id).cloned()
    }

    async fn pump(&self, mut rec: TaskRecord, turn: Turn, done: oneshot::Sender<Result<Arc<str>, A2aError>>) {
        let Turn {
            opening,
            mut next,
            mut frames,
            mut mapper,
        } = turn;
        // the stored snapshot, while it is the task's latest
        let mut task: Option<Arc<str>> = None;
        let mut batch: Vec<A2aStreamResponse> = opening.into_iter().collect();
        let mut opened = batch.is_empty();
        let mut more = true;
        while more {
            let frame = match next.take() {
                Some(f) => Some(f),
                // the opening waits for no agent: stored alone when nothing is ready
                None if !opened => match frames.next().now_or_never() {
                    Some(f) => {
                        more = f.is_some();
                        f
                    }
                    None => None,
                },
                None => match frames.next().await {
                    Some(f) => Some(f),
                    None => break,
                },
            };
            if let Some(frame) = frame {
                // the events of every frame the agent has ready, stored in one append
                let (events, m) = Self::ready_events(frame, &mut frames, &mut mapper);
                batch.extend(events);
                more = m;
            }
            if batch.is_empty() {
                continue;
            }
            match self.commit_all(&mut rec, std::mem::take(&mut batch)).await {
                Ok(t) => {
                    task = t;
                    opened = true;
                }
                Err(e) if !opened => {
                    self.abandon(&rec.id, e, done).await;
                    return;
                }
                Err(_) => {
                    task = None;
                    self.store_failed(&mut rec).await;
                    break;
                }
            }
        }
        if !rec.state.is_terminal() && !rec.state.is_interrupted() {
            let ev = status_event(
                &rec,
                FAILED,
                Some(agent_message(&rec, "the agent ended without a final state")),
            );
            match self.commit(&mut rec, ev).await {
                Ok(t) => task = t,
                Err(_) => {
                    task = None;
                    self.store_failed(&mut rec).await;
                }
            }
        }
        self.live.lock().remove(&rec.id);
        if let Err(e) = self.store.leases.release(&rec.id, &self.holder).await {
            tracing::warn!(task_id = %rec.id, error = %e, "cannot release a task's lease");
        }
        self.drop_channel(&rec.id, rec.state.is_terminal());
        // told last: a client answering a pause at once finds the task free
        if let Some(t) = task {
            let _ = done.send(Ok(t));
        }
    }

    /// The opening event of task `id`'s turn could not be stored, so nothing of the turn is:
    /// the run stops, its followers end with the error, the claim goes, and a waiting send
    /// gets the error.
    async fn abandon(&self, id: &str, e: A2aError, done: oneshot::Sender<Result<Arc<str>, A2aError>>) {
        if let Some(live) = self.live_of(id) {
            live.cancel.cancel();
        }
        if let Some(tx) = self.channels.lock().remove(id) {
            let _ = tx.send(Feed::Broken(Arc::from(STORE_FAILED)));
        }
        self.unclaim(id).await;
        let _ = done.send(Err(e));
    }

    /// The A2A events of `frame` and of the frames after it the agent already has ready (up
    /// to `READY_EVENTS` events), and whether more may follow (no final frame, the stream
    /// not ended).
    fn ready_events(
        frame: Arc<E2AResponse>,
        frames: &mut SharedFrames,
        mapper: &mut TurnMapper,
    ) -> (Vec<A2aStreamResponse>, bool) {
        let mut events = Vec::new();
        let mut frame = frame;
        loop {
            events.extend(mapper.push(&frame));
            if frame.is_final {
                return (events, false);
            }
            if events.len() >= READY_EVENTS {
                return (events, true);
            }
            match frames.next().now_or_never() {
                Some(Some(f)) => frame = f,
                Some(None) => return (events, false),
                None => return (events, true),
            }
        }
    }

    /// The task a send started, as its binding answers it (`Task` JSON): when `blocking`, as
    /// its run stored it at the turn's end (waiting up to the blocking timeout), else as it is
    /// now; its history trimmed to `history` messages.
    async fn sent_task(
        &self,
        id: &str,
        done: Option<TurnDone>,
        blocking: bool,
        history: Option<usize>,
        caller: &Caller,
    ) -> Result<Arc<str>, A2aError> {
        if let Some(done) = done.filter(|_| blocking) {
            if let Ok(Ok(task)) = tokio::time::timeout(self.config.blocking_timeout, done.0).await {
                let task = task?;
                if history.is_none() {
                    return Ok(task);
                }
                let task: A2aTask = serde_json::from_str(&task)
                    .map_err(|e| A2aError::internal(format!("a stored task is not an A2A task: {e}")))?;
                return Ok(e2a::write::to_json(&trim_history(task, history)).into());
            }
        }
        // (boxed: reading a task back is a large future, rarely needed after a blocking send)
        let rec = Box::pin(self.load(id, caller)).await?;
        Ok(e2a::write::to_json(&trim_history(rec.task, history)).into())
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
        let permit = self
            .shared
            .stream_permit()
            .map_err(|r| A2aError::unavailable(r.message(), self.shared.retry_after()))?;
        let events = self.subscription(id, caller, last_seen).await?;
        // a subscriber holds a stream slot while it reads, like a run
        Ok(Box::pin(events.map(move |e| {
            let _slot = &permit;
            e
        })))
    }

    async fn subscription(
        self: &Arc<Self>,
        id: &str,
        caller: &Caller,
        last_seen: Option<u64>,
    ) -> Result<EventStream, A2aError> {
        let rec = self.load(id, caller).await?;
        if rec.state.is_terminal() {
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
                    event: e2a::write::to_json(&A2aStreamResponse::Task(rec.task)).into(),
                };
                if rec.state.is_terminal() {
                    return Ok(Box::pin(futures_util::stream::iter([Ok(head)])));
                }
                let rest = self.follow(rec.id, rec.last_seq, Some(rx), Until::Terminal);
                Ok(Box::pin(futures_util::stream::iter([Ok(head)]).chain(rest)))
            }
        }
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
    pub async fn cancel(self: &Arc<Self>, id: &str, caller: &Caller) -> Result<A2aTask, A2aError> {
        let mut rec = self.load(id, caller).await?;
        if rec.state.is_terminal() {
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
                let free = self
                    .store
                    .leases
                    .acquire(id, &self.holder, self.shared.config.lease)
                    .await?;
                if free {
                    // no run anywhere (a paused task, or one whose gateway died)
                    if let Some(fresh) = self.stored(id).await? {
                        rec = fresh;
                    }
                    let canceled = if rec.state.is_terminal() {
                        Ok(())
                    } else {
                        let ev = status_event(&rec, CANCELED, Some(agent_message(&rec, turn::CANCELED_BY_CLIENT)));
                        self.commit(&mut rec, ev).await.map(|_| ())
                    };
                    self.store.leases.release(id, &self.holder).await?;
                    canceled?;
                } else {
                    // another gateway runs it: ask it to stop, and wait for the turn to end
                    self.store.leases.request_cancel(id).await?;
                    self.wait_turn_end(id, rec.last_seq, rx).await;
                    rec = self.load(id, caller).await?;
                }
            }
        }
        Ok(rec.task)
    }

    /// `ListTasks` for `caller` (params in the 1.0 camelCase names).
    pub async fn list(&self, params: &Map<String, Value>, caller: &Caller) -> Result<A2aListTasksResponse, A2aError> {
        let p = ListParams::read(params)?;
        let (history, include_artifacts, offset, page_size) = (p.history, p.include_artifacts, p.offset, p.page_size);
        let query = TaskQuery {
            owner: caller.owner(),
            context_id: p.context_id,
            state: p.state,
            updated_after_ms: p.updated_after_ms,
            offset,
            limit: page_size,
        };
        let page = self.store.tasks.list(query).await?;
        let mut tasks = Vec::new();
        for rec in page.tasks {
            let rec = self.caught_up(rec).await?;
            let rec = self.settle(rec).await;
            let mut task = trim_history(rec.task, history);
            if !include_artifacts {
                task.artifacts.clear();
            }
            tasks.push(task);
        }
        let next = offset.saturating_add(tasks.len());
        let next_token = if next < page.total {
            next.to_string()
        } else {
            String::new()
        };
        Ok(A2aListTasksResponse {
            tasks,
            next_page_token: next_token,
            page_size: u64::try_from(page_size).unwrap_or(u64::MAX),
            total_size: u64::try_from(page.total).unwrap_or(u64::MAX),
        })
    }
}
