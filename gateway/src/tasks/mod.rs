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
mod detach;
pub mod error;
mod feed;
mod live;
mod log;
mod mount;
pub(crate) mod params;
pub mod push;
pub mod request;
mod send;
pub(crate) mod sent;
mod snapshot;
mod turn;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use e2a::types::{
    A2aCancelTaskRequest, A2aCreateTaskPushNotificationConfigRequest, A2aGetTaskRequest,
    A2aListTaskPushNotificationConfigsRequest, A2aListTasksRequest, A2aSubscribeToTaskRequest,
    A2aTaskPushNotificationConfigRequest,
};
use e2a::types::{A2aListTaskPushNotificationConfigsResponse, A2aStreamResponse};
use e2a::types::{A2aListTasksResponse, A2aTask, A2aTaskPushNotificationConfig, A2aTaskState};
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use self::cluster::Cluster;
use self::config::A2aConfig;
use self::error::{A2aError, A2aErrorKind};
use self::feed::{Followers, Until};
use self::live::LiveRuns;
use self::log::TaskLog;
use self::mount::Mount;
use self::params::{history_length, ListParams, SendConfig};
use self::push::{PushConfigs, Pusher};
use self::request::required;
pub use self::request::CallContext;
use self::send::{SendOutcome, Turns};
use self::sent::PastSends;
pub use self::snapshot::trim_history;
use self::snapshot::{agent_message, status_event};
use crate::pipeline::Pipeline;
use crate::store::{StoredEvent, Stores, TaskQuery};

/// A2A events with their log sequence numbers, as a binding streams them. An `Err` ends the
/// stream: the task could not go on (its store failed) and the binding answers it in its
/// protocol's error form; every `Ok` event was stored before it was yielded.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StoredEvent, A2aError>> + Send + 'static>>;

const SUBMITTED: A2aTaskState = A2aTaskState::TaskStateSubmitted;
const WORKING: A2aTaskState = A2aTaskState::TaskStateWorking;
const FAILED: A2aTaskState = A2aTaskState::TaskStateFailed;
const CANCELED: A2aTaskState = A2aTaskState::TaskStateCanceled;

/// The A2A side of a gateway: a façade, one method per A2A operation, over the parts it owns
/// (each holding one thing, with its own methods): how it is mounted, the runs in progress
/// and their leases, the followers of tasks, the task log, the turns sends start, the push
/// configs and their delivery, and the duties towards a shared store.
pub struct TaskService {
    /// The run pipeline its turns go through (the gateway's config, auth, metrics).
    pipeline: Arc<Pipeline>,
    /// Its config, its card's date, its tenancy.
    mount: Mount,
    /// The runs in progress here, and the task leases.
    runs: Arc<LiveRuns>,
    /// The channels of the tasks followed by someone.
    followers: Arc<Followers>,
    /// The task log: every event stored before anyone sees it.
    log: Arc<TaskLog>,
    /// The turns sends start.
    turns: Arc<Turns>,
    /// The push configs of tasks.
    pushes: Arc<PushConfigs>,
    /// Push delivery (the outbox).
    pusher: Arc<Pusher>,
    /// The background duties towards the store and the gateways sharing it.
    cluster: Arc<Cluster>,
    /// Whether its background work was started ([`TaskService::start`]: once).
    started: AtomicBool,
    /// Whether it joins a gateway that already runs tasks (added by a reload): its start then
    /// leaves the stored tasks and waiting runs alone — they are the other agents' (and at the
    /// process's start, its own were settled).
    joins_running: AtomicBool,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService")
            .field("config", self.mount.config())
            .field("store", &self.log.name())
            .field("live", &self.runs.count())
            .finish()
    }
}

/// What a non-streaming send (`SendMessage`) is answered with.
pub enum Sent {
    /// The agent's direct `Message` reply (no task).
    Message(Value),
    /// The `Task` JSON as the gateway wrote it (as stored; trusted, so never parsed again).
    Task(Arc<str>),
}

/// A send answered with the agent's direct reply: a `SendMessageResponse` (or a stream's one
/// `StreamResponse`) with `message`, the message as the agent made it.
#[derive(serde::Serialize)]
pub struct Replied<'a> {
    /// The agent's `Message`.
    pub message: &'a Value,
}

/// The task (its `Task` JSON) as a run stored it when its turn ended: what a blocking send
/// answers with, without reading the store back; or why nothing of the turn was stored.
/// Nothing comes when the run's last write was not a snapshot (its store failed later).
pub struct TurnDone {
    /// The turn's run, when the send runs it in place (a blocking send: no task spawned for
    /// it, its answer no second pass through the request's layers). Dropped before its end
    /// (the client gone, the blocking timeout), it goes on as a task of its own.
    run: Option<detach::DetachOnDrop<dyn std::future::Future<Output = ()> + Send>>,
    told: oneshot::Receiver<Result<Arc<str>, A2aError>>,
}

impl TurnDone {
    /// Whether the turn's run goes on in the request's task.
    fn in_place(&self) -> bool {
        self.run.is_some()
    }

    /// How the turn ended, once it has: its run driven here first when it runs in place.
    /// (`Err`: the run ended without saying, its store failed or it panicked.)
    async fn told(self) -> Result<Result<Arc<str>, A2aError>, oneshot::error::RecvError> {
        let TurnDone { run, told } = self;
        if let Some(run) = run {
            // a run that panics drops its sender: the send reads its task back, as it would
            // from a run on a task of its own
            let _ = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run)).await;
        }
        told.await
    }
}

/// A send: the context of its call and its params (1.0 camelCase names), which the turn
/// consumes into its envelope.
pub struct SendParams {
    /// What the binding knows about the call.
    pub cx: CallContext,
    /// The request's params.
    pub params: Map<String, Value>,
}

impl TaskService {
    /// The A2A state of a gateway: its parts, over `store`.
    pub(crate) fn new(pipeline: Arc<Pipeline>, mut config: A2aConfig, store: Stores) -> Self {
        // a store that keeps no push configs: the card says so, the operations refuse
        config.push.enabled &= store.pushes.is_some();
        let config = Arc::new(config);
        // this gateway's name in task leases and push claims
        let holder = e2a::stream::new_id();
        let metrics = pipeline.metrics.clone();
        let pusher = Arc::new(Pusher::new(config.push.clone(), store.clone(), holder.clone(), metrics));
        let runs = Arc::new(LiveRuns::new(store.leases.clone(), holder, pipeline.config.lease));
        let followers = Arc::new(Followers::new(store.tasks.clone(), runs.clone(), pipeline.clone()));
        let log = Arc::new(TaskLog::new(
            store.tasks.clone(),
            runs.clone(),
            followers.clone(),
            pusher.clone(),
        ));
        let pushes = Arc::new(PushConfigs::new(store.clone(), log.clone(), pusher.clone()));
        let sent = PastSends::new(store.sends.clone(), store.tasks.clone());
        let turns = Arc::new(Turns {
            pipeline: pipeline.clone(),
            config: config.clone(),
            runs: runs.clone(),
            log: log.clone(),
            followers: followers.clone(),
            sent,
            pushes: pushes.clone(),
        });
        let cluster = Arc::new(Cluster::new(
            store,
            log.clone(),
            followers.clone(),
            runs.clone(),
            &config,
        ));
        TaskService {
            pipeline,
            mount: Mount::new(config),
            runs,
            followers,
            log,
            turns,
            pushes,
            pusher,
            cluster,
            started: AtomicBool::new(false),
            joins_running: AtomicBool::new(false),
        }
    }

    /// Starts the background work of a gateway (within a Tokio runtime): forgetting finished
    /// tasks past the retention, delivering push notifications, and, on a store several
    /// gateways share, renewing the leases of its runs, passing on what the others do and
    /// failing the tasks of instances that died. Each loop holds a `Weak` of the part it works
    /// on, and ends when that part is dropped with the service.
    pub(crate) fn start(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!("A2A background work not started: no Tokio runtime");
            return;
        }
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.runs.shared() {
            let lease = self.pipeline.config.lease.max(Duration::from_millis(150));
            tokio::spawn(live::renew_leases(Arc::downgrade(&self.runs), lease / 3));
            tokio::spawn(cluster::reap_orphans(Arc::downgrade(&self.cluster), lease / 2));
        } else if !self.joins_running.load(Ordering::SeqCst) {
            // what this gateway ran before it restarted has no run now
            let duties = self.cluster.clone();
            tokio::spawn(async move { duties.settle_orphans().await });
        }
        if let Some(notices) = self.cluster.notices() {
            tokio::spawn(cluster::pass_on_notices(Arc::downgrade(&self.cluster), notices));
        }
        let config = self.mount.config();
        let every = crate::store::prune_every(config.retention.max_age, Duration::from_secs(60));
        tokio::spawn(cluster::forget_finished(Arc::downgrade(&self.cluster), every));
        if config.push.enabled {
            tokio::spawn(push::run_outbox(Arc::downgrade(&self.pusher)));
        }
        // the runs its agent's delegations left waiting when a gateway stopped
        if let Some(callbacks) = config
            .callbacks
            .clone()
            .filter(|_| !self.joins_running.load(Ordering::SeqCst))
        {
            let runs = self.pipeline.runs.clone();
            tokio::spawn(async move { callbacks.recover(&runs).await });
        }
    }

    /// Marks it as joining a gateway that already runs (a reload added it), before its start.
    pub(crate) fn joins_running(&self) {
        self.joins_running.store(true, Ordering::SeqCst);
    }

    /// The run pipeline its turns go through (the gateway's config, auth, metrics).
    pub(crate) fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// How it is mounted: its config (paths, card), its card's date, its tenancy.
    pub(crate) fn mount(&self) -> &Mount {
        &self.mount
    }

    /// The runs in progress (how many; cancel them all at shutdown).
    pub(crate) fn runs(&self) -> &LiveRuns {
        &self.runs
    }

    /// `SendMessage`: starts a turn (a new task, or the answer to a paused one) and answers
    /// with the agent's direct reply, or the task — after the turn unless the client asked to
    /// return at once.
    pub async fn send_message(&self, p: SendParams) -> Result<Sent, A2aError> {
        let SendConfig { history, blocking, .. } = SendConfig::read(&p.params)?;
        let caller = p.cx.caller.clone();
        let turns = &self.turns;
        Ok(match turns.send(p, false).await? {
            SendOutcome::Message(m) => Sent::Message(m),
            SendOutcome::Task { id, done } => {
                Sent::Task(turns.sent_task(&id, Some(done), blocking, history, &caller).await?)
            }
            SendOutcome::Stream { id, .. } => Sent::Task(turns.sent_task(&id, None, false, history, &caller).await?),
            SendOutcome::Repeat { id } => {
                // a blocking repeat waits, as the first send did, for the turn to end
                if blocking {
                    let mut events = self.followers.follow(id.clone(), 0, None, Until::TurnEnd);
                    let drained = async { while events.next().await.is_some() {} };
                    let _ = tokio::time::timeout(self.mount.config().blocking_timeout, drained).await;
                }
                Sent::Task(turns.sent_task(&id, None, false, history, &caller).await?)
            }
        })
    }

    /// `SendStreamingMessage`: starts a turn and streams its events (the agent's direct
    /// reply as a single `message` event).
    pub async fn send_streaming(&self, p: SendParams) -> Result<EventStream, A2aError> {
        // its configuration is checked like a non-streaming send's
        SendConfig::read(&p.params)?;
        Ok(match self.turns.send(p, true).await? {
            SendOutcome::Message(m) => {
                let event = StoredEvent {
                    seq: 0,
                    event: crate::json::text(&Replied { message: &m }).into(),
                };
                Box::pin(futures_util::stream::iter([Ok(event)]))
            }
            SendOutcome::Stream { events, .. } => events,
            SendOutcome::Task { id, .. } | SendOutcome::Repeat { id } => {
                self.followers.follow(id, 0, None, Until::TurnEnd)
            }
        })
    }

    /// `GetTask`: the caller's task, settled if its run is gone, its history trimmed to the
    /// request's `historyLength`.
    pub async fn get_task(&self, cx: &CallContext, req: A2aGetTaskRequest) -> Result<A2aTask, A2aError> {
        let history = history_length(req.history_length, "historyLength")?;
        let task = self.log.load(required(Some(&req.id), "id")?, &cx.caller).await?.task;
        Ok(trim_history(task, history))
    }

    /// `ListTasks`: the caller's tasks, one page.
    pub async fn list(&self, cx: &CallContext, req: A2aListTasksRequest) -> Result<A2aListTasksResponse, A2aError> {
        let p = ListParams::of(req)?;
        let (history, include_artifacts, offset, page_size) = (p.history, p.include_artifacts, p.offset, p.page_size);
        let query = TaskQuery {
            owner: cx.caller.owner(),
            context_id: p.context_id,
            state: p.state,
            updated_after_ms: p.updated_after_ms,
            offset,
            limit: page_size,
        };
        let (tasks, total) = self
            .log
            .page(query, |rec| {
                let mut task = trim_history(rec.task, history);
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .await?;
        let next = offset.saturating_add(tasks.len());
        let next_token = if next < total { next.to_string() } else { String::new() };
        Ok(A2aListTasksResponse {
            tasks,
            next_page_token: next_token,
            page_size: u64::try_from(page_size).unwrap_or(u64::MAX),
            total_size: u64::try_from(total).unwrap_or(u64::MAX),
        })
    }

    /// `CancelTask`: a run here is stopped, one on another gateway asked to stop (and both
    /// waited for, up to 10 s); a task with no run anywhere is canceled in the log.
    pub async fn cancel(&self, cx: &CallContext, req: A2aCancelTaskRequest) -> Result<A2aTask, A2aError> {
        let (id, caller) = (required(Some(&req.id), "id")?, &cx.caller);
        let mut rec = self.log.load(id, caller).await?;
        let snapshot = self.mount().config().cancel_finished == e2a::types::CancelFinished::Snapshot;
        if rec.state.is_terminal() && snapshot {
            return Ok(rec.task);
        }
        if rec.state.is_terminal() {
            return Err(A2aError::new(
                A2aErrorKind::TaskNotCancelable,
                format!("task {id} is already {}", rec.state),
            ));
        }
        match self.runs.get(id) {
            Some(live) => {
                let rx = self.followers.channel(id);
                live.cancel_by_client();
                self.followers.wait_turn_end(id, rec.last_seq, rx).await;
                rec = self.log.load(id, caller).await?;
            }
            None => {
                let rx = self.followers.channel(id);
                let free = self.runs.take_lease(id).await?;
                if free {
                    // no run anywhere (a paused task, or one whose gateway died)
                    if let Some(fresh) = self.log.stored(id).await? {
                        rec = fresh;
                    }
                    let canceled = if rec.state.is_terminal() {
                        Ok(())
                    } else {
                        let ev = status_event(&rec, CANCELED, Some(agent_message(&rec, turn::CANCELED_BY_CLIENT)));
                        self.log.commit(&mut rec, ev).await.map(|_| ())
                    };
                    self.runs.release_lease(id).await?;
                    canceled?;
                } else {
                    // another gateway runs it: ask it to stop, and wait for the turn to end
                    self.runs.request_cancel(id).await?;
                    self.followers.wait_turn_end(id, rec.last_seq, rx).await;
                    rec = self.log.load(id, caller).await?;
                }
            }
        }
        Ok(rec.task)
    }

    /// `SubscribeToTask`: with `last_seen` (an SSE `Last-Event-ID`), the events after it, then
    /// live ones; without, the task as it is, then live events. A task that has ended can only
    /// be replayed from a `last_seen`. A subscriber holds a stream slot while it reads.
    pub async fn subscribe(
        &self,
        cx: &CallContext,
        req: A2aSubscribeToTaskRequest,
        last_seen: Option<u64>,
    ) -> Result<EventStream, A2aError> {
        let (id, caller) = (required(Some(&req.id), "id")?, &cx.caller);
        let permit = self
            .pipeline
            .stream_permit()
            .map_err(|r| A2aError::unavailable(r.message(), self.pipeline.retry_after()))?;
        let rec = self.log.load(id, caller).await?;
        let events: EventStream = if rec.state.is_terminal() {
            match last_seen {
                // the log of an ended task can still be replayed
                Some(after) => self.followers.follow(rec.id, after, None, Until::Terminal),
                None => {
                    return Err(A2aError::new(
                        A2aErrorKind::UnsupportedOperation,
                        format!(
                            "task {id} is in a terminal state ({}); nothing to subscribe to",
                            rec.state
                        ),
                    ))
                }
            }
        } else {
            // follow first, then read the task: nothing falls between the two
            let rx = self.followers.channel(id);
            let rec = self.log.load(id, caller).await?;
            match last_seen {
                Some(after) => self.followers.follow(rec.id, after, Some(rx), Until::Terminal),
                None => {
                    let head = StoredEvent {
                        seq: rec.last_seq,
                        event: e2a::write::to_json(&A2aStreamResponse::Task(rec.task)).into(),
                    };
                    let head = futures_util::stream::iter([Ok(head)]);
                    if rec.state.is_terminal() {
                        Box::pin(head) as EventStream
                    } else {
                        let rest = self.followers.follow(rec.id, rec.last_seq, Some(rx), Until::Terminal);
                        Box::pin(head.chain(rest))
                    }
                }
            }
        };
        Ok(Box::pin(events.map(move |e| {
            let _slot = &permit;
            e
        })))
    }

    /// `CreateTaskPushNotificationConfig`: a config under an id the task already has
    /// replaces it. The events from the next one on are delivered.
    pub async fn create_push_config(
        &self,
        cx: &CallContext,
        req: A2aCreateTaskPushNotificationConfigRequest,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.pushes.create(req, &cx.caller).await
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        cx: &CallContext,
        req: A2aTaskPushNotificationConfigRequest,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.pushes.get(req, &cx.caller).await
    }

    /// `ListTaskPushNotificationConfigs`, oldest first.
    pub async fn list_push_configs(
        &self,
        cx: &CallContext,
        req: A2aListTaskPushNotificationConfigsRequest,
    ) -> Result<A2aListTaskPushNotificationConfigsResponse, A2aError> {
        self.pushes.list(req, &cx.caller).await
    }

    /// `DeleteTaskPushNotificationConfig`: idempotent — a config already gone is not an error
    /// (its task must still be the caller's).
    pub async fn delete_push_config(
        &self,
        cx: &CallContext,
        req: A2aTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        self.pushes.delete(req, &cx.caller).await
    }
}
