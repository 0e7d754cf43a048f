//! The task log side of the service: every event is applied to the task's snapshot and
//! appended to its log before any follower sees it; a store that fails fails the turn; a task
//! left without a run is settled as `FAILED` with the reason.

use std::collections::HashMap;
use std::sync::Arc;

use e2a::types::A2aStreamResponse;
use e2a::write::JsonWriter;
use parking_lot::Mutex;

use super::error::A2aError;
use super::feed::{ends_at, Followers};
use super::live::LiveRuns;
use super::snapshot::{agent_message, apply, status_event};
use super::FAILED;
use crate::agent::Caller;
use crate::store::{self, now_ms, StoreError, TaskAppend, TaskQuery, TaskRecord};
use crate::tasks::push::Pusher;

/// What a client is told when the store fails under a task.
pub(super) const STORE_FAILED: &str =
    "the gateway could not store the task's events (the task store failed): the task was stopped";

/// Room for the JSON text of a task or an event before its writer grows (a small task's).
const TEXT_ROOM: usize = 2048;

/// `v`'s JSON text, written in `w` (cleared first) and copied out at its size.
fn shared_text<T: e2a::write::WriteJson>(w: &mut JsonWriter, v: &T) -> Arc<str> {
    w.clear();
    w.value(v);
    w.to_shared()
}

/// Most artifact chunks between two stored snapshots of a task.
const SNAPSHOT_EVERY: u64 = 64;

/// The task log as the service keeps it: the store's records and events of tasks (`tasks`),
/// written before anyone hears of them (then the `followers` and the push outbox are told),
/// and the tasks whose run the store failed under (`broken`). A task found active with no run
/// behind it (`runs`) is settled here.
pub(crate) struct TaskLog {
    tasks: Arc<dyn store::TaskLog>,
    runs: Arc<LiveRuns>,
    followers: Arc<Followers>,
    /// Woken when events are appended (the outbox delivers them to the task's webhooks).
    push: Arc<Pusher>,
    /// Tasks whose run the store failed under, and why (what `GetTask` says of them until the
    /// store takes their `FAILED` status).
    broken: Mutex<HashMap<String, Arc<str>>>,
    /// How many tasks this log has ended since it began (what paces the prune of finished
    /// tasks: [`super::cluster::forget_finished`]).
    finished: std::sync::atomic::AtomicU64,
}

impl TaskLog {
    /// The log of `tasks`, telling `followers` and `push` of what it stores.
    pub(super) fn new(
        tasks: Arc<dyn store::TaskLog>,
        runs: Arc<LiveRuns>,
        followers: Arc<Followers>,
        push: Arc<Pusher>,
    ) -> Self {
        TaskLog {
            tasks,
            runs,
            followers,
            push,
            broken: Mutex::new(HashMap::new()),
            finished: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many tasks this log has ended since it began.
    pub(super) fn finished(&self) -> u64 {
        self.finished.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The store's short name (for logs).
    pub(super) fn name(&self) -> String {
        self.tasks.name()
    }

    /// Writes an event (see [`TaskLog::commit_all`]).
    pub(super) async fn commit(
        &self,
        rec: &mut TaskRecord,
        event: A2aStreamResponse,
    ) -> Result<Option<Arc<str>>, A2aError> {
        self.commit_all(rec, vec![event]).await
    }

    /// Writes events: applies them to the snapshot, appends them to the log in one step, then
    /// tells followers. Returns the task's JSON when the append rewrote the stored snapshot.
    /// Events the store does not take reach nobody: the error is returned (and logged), and
    /// `rec` holds the events applied in memory only.
    pub(super) async fn commit_all(
        &self,
        rec: &mut TaskRecord,
        events: Vec<A2aStreamResponse>,
    ) -> Result<Option<Arc<str>>, A2aError> {
        if events.is_empty() {
            return Ok(None);
        }
        let before = rec.state;
        // written first (by the generated writers, for whichever store keeps them), then
        // applied by value: what an event carries moves into the snapshot, uncopied
        // (one buffer for every text: it grows once, each text is copied out at its size)
        let mut w = JsonWriter::with_capacity(TEXT_ROOM);
        let texts: Vec<Arc<str>> = events.iter().map(|e| shared_text(&mut w, e)).collect();
        let states: Vec<_> = events.iter().map(ends_at).collect();
        for event in events {
            apply(&mut rec.task, event);
        }
        rec.state = rec.task.status.state;
        rec.updated_ms = now_ms();
        // the stored snapshot is written by the append that ends a
        // turn (a terminal or interrupted state: what a blocking send answers, what `GetTask`
        // reads most); events in between (WORKING, artifact chunks, messages of a working
        // task) leave it alone — a reader catches up from the log — until SNAPSHOT_EVERY of
        // them, and then as many as it already covers: a long answer costs its length in
        // snapshots, not its square
        // (counted before this append: one whose events come in a burst leaves the snapshot
        // stale, the next rewrites it)
        let since = rec.last_seq.saturating_sub(rec.snapshot_seq) + 1;
        let turn_ends = rec.state != before && (rec.state.is_terminal() || rec.state.is_interrupted());
        // (not on a task's first append unless it ends the turn: its first event is the whole
        // task, so a reader catches up from it at no cost)
        let snapshot = turn_ends || since >= SNAPSHOT_EVERY.max(rec.snapshot_seq);
        // serialized once, here, for whichever store keeps them
        let task: Option<Arc<str>> = snapshot.then(|| shared_text(&mut w, &rec.task));
        let write = TaskAppend {
            record: rec.without_task(),
            snapshot: task.clone(),
            events: texts.clone(),
        };
        let last = match self.tasks.append(write).await {
            Ok(last) => last,
            // (the rare ends boxed here and in a run: their futures are large, and a commit's
            // future is held by every run and by a streaming send's start)
            Err(StoreError::Ended(_)) => return Box::pin(self.ended_elsewhere(rec)).await,
            Err(e) => {
                tracing::error!(task_id = %rec.id, error = %e, "cannot store a task event: nobody is told of it");
                return Err(A2aError::internal(STORE_FAILED));
            }
        };
        rec.last_seq = last;
        if snapshot {
            rec.snapshot_seq = last;
        }
        if rec.state.is_terminal() && !before.is_terminal() {
            self.finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // the outbox delivers them to the task's webhooks (when some may exist)
        self.push.poke();
        self.followers
            .publish(&rec.id, rec.state.is_terminal(), last, texts, states);
        Ok(task)
    }

    /// `rec`'s task ended in the store before this write (the store takes no event after a
    /// terminal one): another writer ended it first — a gateway of the store that settled it
    /// as failed when its lease ran out, or its run, finishing as it was being settled. The
    /// write is dropped, a run of it here stops, `rec` becomes what the store holds, and its
    /// JSON is returned as the task's answer (followers here get the stored end from the store).
    async fn ended_elsewhere(&self, rec: &mut TaskRecord) -> Result<Option<Arc<str>>, A2aError> {
        tracing::warn!(
            task_id = %rec.id,
            "the task had already ended in the store (another writer ended it first): this write is dropped"
        );
        if let Some(live) = self.runs.get(&rec.id) {
            live.cancel();
        }
        let stored = self.stored(&rec.id).await?;
        *rec = stored.ok_or_else(|| A2aError::internal(STORE_FAILED))?;
        Ok(Some(e2a::write::to_json(&rec.task).into()))
    }

    /// The store failed under task `rec`'s run: the run is stopped, the task is failed (in the
    /// store if it takes that, else `GetTask` says so from memory) and its followers end with
    /// an error; nobody sees an event the store did not take.
    pub(super) async fn store_failed(&self, rec: &mut TaskRecord) {
        let why: Arc<str> = Arc::from(STORE_FAILED);
        self.broken.lock().insert(rec.id.clone(), why.clone());
        if let Some(live) = self.runs.get(&rec.id) {
            live.cancel();
        }
        let ev = status_event(rec, FAILED, Some(agent_message(rec, STORE_FAILED)));
        if self.commit(rec, ev).await.is_ok() {
            self.broken.lock().remove(&rec.id);
            return;
        }
        self.followers.break_off(&rec.id, why);
    }

    /// A stored record with its snapshot brought up to date from the log.
    async fn caught_up(&self, mut rec: TaskRecord) -> Result<TaskRecord, A2aError> {
        if rec.snapshot_seq < rec.last_seq {
            for e in self.tasks.events_after(&rec.id, rec.snapshot_seq).await? {
                match serde_json::from_str::<A2aStreamResponse>(&e.event) {
                    Ok(event) => apply(&mut rec.task, event),
                    Err(err) => {
                        tracing::warn!(task_id = %rec.id, seq = e.seq, error = %err, "a stored event is not an A2A event: skipped")
                    }
                }
                rec.snapshot_seq = e.seq;
            }
        }
        Ok(rec)
    }

    /// Task `id` from the store, up to date.
    /// What the inspector page shows of task `id`: its stored events (those a compaction left).
    pub(super) fn kept_events(&self, id: &str) -> crate::web::activity::KeptFrames {
        let (tasks, id) = (self.tasks.clone(), id.to_string());
        Arc::new(move || {
            let (tasks, id) = (tasks.clone(), id.clone());
            Box::pin(async move {
                let events = tasks.events_after(&id, 0).await.unwrap_or_default();
                crate::web::activity::Kept::A2aEvents(events.into_iter().map(|e| (e.seq, e.event)).collect())
            })
        })
    }

    pub(super) async fn stored(&self, id: &str) -> Result<Option<TaskRecord>, A2aError> {
        match self.tasks.get(id).await? {
            Some(rec) => Ok(Some(self.caught_up(rec).await?)),
            None => Ok(None),
        }
    }

    /// The caller's task `id`, settled if its run is gone.
    pub(super) async fn load(&self, id: &str, caller: &Caller) -> Result<TaskRecord, A2aError> {
        let rec = self
            .stored(id)
            .await?
            .filter(|r| r.owner == caller.owner())
            .ok_or_else(|| A2aError::task_not_found(id))?;
        Ok(self.settle(rec).await)
    }

    /// A task left `SUBMITTED`/`WORKING` without a run (the gateway stopped) ends as `FAILED`.
    pub(super) async fn settle(&self, rec: TaskRecord) -> TaskRecord {
        let active = |r: &TaskRecord| r.state.is_active();
        if !active(&rec) || self.runs.get(&rec.id).is_some() {
            return rec;
        }
        // a run commits its last event before it leaves the table: read again to see it
        let mut rec = match self.stored(&rec.id).await {
            Ok(Some(fresh)) => fresh,
            _ => rec,
        };
        if !active(&rec) || self.runs.get(&rec.id).is_some() {
            return rec;
        }
        // on a shared store, another instance may run it: only a task whose lease has expired
        // (this gateway can take it) has no run anywhere
        match self.runs.take_lease(&rec.id).await {
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
        if active(&rec) && self.runs.get(&rec.id).is_none() {
            let broken = self.broken.lock().get(&rec.id).cloned();
            let why = match &broken {
                Some(why) => why,
                None if self.runs.shared() => {
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
        if let Err(e) = self.runs.release_lease(&rec.id).await {
            tracing::warn!(task_id = %rec.id, error = %e, "cannot release a task's lease");
        }
        rec
    }

    /// A page of the tasks `query` asks for, each brought up to date and settled, then made
    /// into what the page lists (`each`), and how many tasks match in all.
    pub(super) async fn page<T>(
        &self,
        query: TaskQuery,
        mut each: impl FnMut(TaskRecord) -> T,
    ) -> Result<(Vec<T>, usize), A2aError> {
        let page = self.tasks.list(query).await?;
        let mut out = Vec::new();
        for rec in page.tasks {
            let rec = self.caught_up(rec).await?;
            let rec = self.settle(rec).await;
            out.push(each(rec));
        }
        Ok((out, page.total))
    }
}
