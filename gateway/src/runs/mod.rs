//! Runs: one agent run per accepted E2A or AG-UI request, pumped by its own task into a frame
//! log that any number of clients read from a position. The log is what makes `Last-Event-ID`
//! resumption work (a reconnecting client reads from after the last id it saw), and a run
//! whose every client went away is cancelled after a grace period.
//!
//! With a store that keeps runs ([`crate::store::Stores::runs`]: SQLite, PostgreSQL) every frame
//! is stored before a client sees it, so a run can be resumed after a restart, or on another
//! gateway sharing the store ([`subscription`] follows it there); the gateway's own memory
//! keeps recent runs for fast resumes, bounded by count, bytes and time.

mod frames;
mod housekeeping;
mod inline;
mod resource;
mod subscription;
mod waiting;
mod wakes;

use std::collections::VecDeque;

use crate::maps::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

use e2a::frame::Frame;
use e2a::E2AEnvelope;
use parking_lot::Mutex;
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{Caller, ConversationKey, RequestContext};
use crate::config::GatewayConfig;
use crate::stop::{StopCell, StopReason};
use crate::store::{PauseStore, RunStore, Sends, SentRecord, StoreError, Stores};
use frames::Frames;

pub(crate) use housekeeping::Pump;
pub(crate) use resource::{Cancel, RunList, RunPageAsk, RunView};
pub(crate) use subscription::Subscription;
pub(crate) use waiting::{waiting_key, waiting_mark, waiting_on, Orphan, Waiting, WAITING};

/// The key of the run answering E2A request `request_id` of `caller`.
pub(crate) fn e2a_key(caller: &Caller, request_id: &str) -> ConversationKey {
    ConversationKey::new(caller.owner(), format!("e2a:{request_id}"))
}

/// The key of AG-UI run `run_id` of thread `thread_id` of `caller`.
pub(crate) fn agui_key(caller: &Caller, thread_id: &str, run_id: &str) -> ConversationKey {
    ConversationKey::new(caller.owner(), format!("agui:{}:{thread_id}:{run_id}", thread_id.len()))
}

/// Why a run cannot be read from where a client asked ([`Runs::resume`]).
#[derive(Debug)]
pub(crate) enum ResumeError {
    /// The store that keeps runs failed.
    Store(StoreError),
    /// The frames the reader asked for include some the run no longer holds (it went past its
    /// memory budget, `max_run_bytes`): `oldest` is the first sequence still held.
    Forgotten {
        /// The sequence of the oldest frame still held.
        oldest: u64,
    },
}

impl From<StoreError> for ResumeError {
    fn from(e: StoreError) -> Self {
        ResumeError::Store(e)
    }
}

impl ResumeError {
    /// The problem a client is told: the store's failure, or `404` naming the oldest frame
    /// still held.
    pub(crate) fn problem(&self) -> crate::web::problem::Problem {
        match self {
            ResumeError::Store(e) => crate::web::problem::Problem::store_failed(e),
            ResumeError::Forgotten { oldest } => crate::web::problem::Problem::new(
                e2a::taxonomy::ErrorKind::NotFound,
                format!(
                    "the frames before sequence {oldest} of this stream are no longer held (a run keeps at \
                     most max_run_bytes of its frames in memory); resume from Last-Event-ID {} or later",
                    oldest.saturating_sub(1)
                ),
            ),
        }
    }
}

/// One run: its frames so far, whether it ended, and how to stop it.
pub(crate) struct Run {
    /// The request it answers.
    request: Arc<E2AEnvelope>,
    frames: Mutex<Frames>,
    /// (frames so far, ended)
    progress: watch::Sender<(usize, bool)>,
    /// Whether the run has ended (changes once: readers of the final frame only wake then).
    done: watch::Sender<bool>,
    cancel: CancellationToken,
    stop: StopCell,
    subscribers: AtomicUsize,
    /// How long the run waits for a client to come back once every one went away, before it
    /// is cancelled; `None`: detached, it runs on without clients.
    grace: Option<Duration>,
    /// The whole answer's JSON, gathered as the frames came when a reader wanted it from the
    /// start ([`Run::want_whole`]), once the run has ended.
    whole: OnceLock<Option<String>>,
    /// Where each reader reading frame by frame is: the index of the next frame it reads.
    /// Past the run's memory budget only frames every reader has read are forgotten.
    readers: Mutex<Vec<Arc<AtomicUsize>>>,
    /// Set while the run waits for its readers (over its budget); readers then wake it.
    waiting: AtomicBool,
    read: tokio::sync::Notify,
}

impl Run {
    fn push(&self, f: Arc<Frame>) {
        self.push_all(vec![f]);
    }

    /// Appends frames and wakes the readers once for all of them. Returns whether the frames
    /// are over the run's budget with readers still to read them ([`Run::wait_for_readers`]).
    fn push_all(&self, frames: Vec<Arc<Frame>>) -> bool {
        self.stage(&frames);
        self.publish(frames)
    }

    /// Writes the text of `frames` (once: what readers and the store then share) without
    /// showing them to readers ([`frames::Frames::stage`]).
    fn stage(&self, frames: &[Arc<Frame>]) {
        let mut v = self.frames.lock();
        for f in frames {
            v.stage(f);
        }
    }

    /// The staged frames' text, for the store.
    fn staged(&self) -> Vec<(u64, String, bool)> {
        self.frames.lock().staged()
    }

    /// Takes the staged frames back (the store did not take them).
    fn unstage(&self) {
        self.frames.lock().unstage();
    }

    /// Shows the staged `frames` to readers, waking them once for all of them; see
    /// [`Run::push_all`].
    fn publish(&self, frames: Vec<Arc<Frame>>) -> bool {
        let (n, over) = {
            let mut v = self.frames.lock();
            v.publish(frames);
            (v.len(), v.over_budget())
        };
        self.progress.send_replace((n, false));
        over && self.forget_read()
    }

    /// Forgets what every reader has read, past the budget; whether the frames are still over it.
    fn forget_read(&self) -> bool {
        let floor = {
            let readers = self.readers.lock();
            readers.iter().map(|r| r.load(Ordering::SeqCst)).min()
        };
        let mut frames = self.frames.lock();
        let floor = floor.unwrap_or(frames.len());
        frames.forget_read(floor)
    }

    /// Over its budget, the run waits until its readers have read enough for the oldest
    /// frames to go (a reader that goes away no longer holds them), or until it is stopped.
    async fn wait_for_readers(&self) {
        while !self.cancel.is_cancelled() {
            let read = self.read.notified();
            self.waiting.store(true, Ordering::SeqCst);
            if !self.forget_read() {
                break;
            }
            tokio::select! {
                _ = read => {}
                _ = self.cancel.cancelled() => {}
            }
        }
        self.waiting.store(false, Ordering::SeqCst);
    }

    /// A reader moved on: the run waiting for its readers looks again.
    fn reader_moved(&self) {
        if self.waiting.load(Ordering::Relaxed) {
            self.read.notify_one();
        }
    }

    /// Ends the run: the answer gathered for a reader is made, then its readers are told.
    fn end(&self) {
        let whole = self.frames.lock().take_whole();
        if let Some(whole) = whole {
            let _ = self.whole.set(whole.finish());
        }
        self.progress.send_modify(|p| p.1 = true);
        self.done.send_replace(true);
    }

    /// A reader will want the answer as one frame ([`Subscription::whole_json`]): it is
    /// gathered from the frames as they come (when they are kept as made and none was
    /// forgotten yet), not read back from their text when the run ends.
    pub(crate) fn want_whole(&self) {
        self.frames.lock().gather();
    }

    /// Whether the run has ended (its final frame is in the log).
    pub(crate) fn ended(&self) -> bool {
        self.progress.borrow().1
    }

    /// Stops the run from outside, recording why.
    pub(crate) fn stop(&self, reason: StopReason) {
        let _ = self.stop.set(reason);
        self.cancel.cancel();
    }

    /// The sequence the next frame gets, and whether the last one was final.
    fn next_sequence(&self) -> (u64, bool) {
        self.frames.lock().last().map_or((0, false), |(sequence, is_final)| {
            (sequence.saturating_add(1), is_final)
        })
    }

    /// How many frames it has.
    fn len(&self) -> usize {
        self.frames.lock().len()
    }

    /// Ends the run's frames: only their JSON text is kept (see [`frames`]); returns about how
    /// many bytes they take now (what the retention bound counts). The frames as made are freed
    /// outside the lock.
    fn compact(&self) -> usize {
        let (made, bytes) = {
            let mut frames = self.frames.lock();
            if frames.is_compact() {
                return frames.bytes();
            }
            (frames.end(), frames.bytes())
        };
        drop(made);
        bytes
    }

    /// A reader of the frames with a sequence greater than `after` (all frames for `None`).
    pub(crate) fn subscribe(self: &Arc<Self>, after: Option<u64>) -> Subscription {
        Subscription::local(self.clone(), after)
    }
}

/// How long, how many and how much of the ended runs the gateway keeps in memory, how long and
/// how many a store that keeps runs keeps, and the leases of the live ones there.
#[derive(Debug, Clone, Copy)]
struct Retention {
    time: Duration,
    count: usize,
    bytes: usize,
    stored_time: Duration,
    stored_count: usize,
    lease: Duration,
}

/// The roles of a store that keeps runs: the frame logs, the E2A requests' `Idempotency-Key`s
/// (kept with the runs), and whether other gateways share it (a stored run may still go on
/// there).
#[derive(Clone)]
pub(crate) struct RunKeeping {
    pub(crate) runs: Arc<dyn RunStore>,
    pub(crate) sends: Arc<dyn Sends>,
    pub(crate) shared: bool,
    /// What wakes the readers of runs going on at other gateways (`None`: the store sends
    /// no notices, and they read the log on a timer).
    pub(crate) wakes: Option<Arc<wakes::Wakes>>,
    /// Where runs waiting for an answer from outside are marked ([`waiting_key`]).
    pub(crate) pauses: Option<Arc<dyn PauseStore>>,
}

impl RunKeeping {
    /// Whether a stored run that has not `ended` runs nowhere any more: no gateway shares the
    /// store (this one would be running it in its memory), or its lease ran out.
    pub(crate) fn orphaned(&self, ended: bool, leased: bool) -> bool {
        !(ended || (leased && self.shared))
    }
}

/// Live and retained runs.
pub(crate) struct Runs {
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    draining: AtomicBool,
    /// `true` once the gateway drains: what idle followers wait on instead of a timer.
    drain_started: tokio::sync::watch::Sender<bool>,
    retention: Retention,
    /// The store that keeps the runs' frames, when it does.
    store: OnceLock<RunKeeping>,
    /// The store that keeps pauses, when one does.
    pauses: OnceLock<Arc<dyn PauseStore>>,
    /// This gateway's name in run leases.
    holder: String,
    /// The bytes one live run's frames may take in memory (`max_run_bytes`).
    max_run_bytes: usize,
    /// Runs answered inline ([`inline`]), going on now.
    inline: AtomicUsize,
    /// Cancelled when the gateway cuts its streams off: what runs outside the registry
    /// ([`inline`]) wait on.
    cutting: CancellationToken,
    housekeeping: Once,
}

#[derive(Default)]
struct Inner {
    /// Requests sent under an `Idempotency-Key`, by owner and key, when no store keeps runs
    /// (else the store keeps them): kept as long as ended runs are, and no more of them than
    /// of runs (ended and live).
    sent: HashMap<(String, String), SentRecord>,
    /// The keys of `sent`, oldest first: forgotten from the front.
    sent_order: VecDeque<(Instant, (String, String))>,
    /// (Each run's key is allocated once and shared by these three.)
    by_key: HashMap<Arc<ConversationKey>, (u64, Arc<Run>)>,
    live: HashMap<u64, (Arc<ConversationKey>, Arc<Run>)>,
    ended: VecDeque<(u64, Arc<ConversationKey>, Instant, usize)>,
    /// Bytes of the runs in `ended`.
    ended_bytes: usize,
}

impl Runs {
    /// A registry keeping ended runs as `config` says (`retention`, `max_retained`,
    /// `max_retained_bytes`).
    pub(crate) fn new(config: &GatewayConfig) -> Self {
        Runs {
            inner: Mutex::default(),
            next_id: AtomicU64::new(1),
            draining: AtomicBool::new(false),
            drain_started: tokio::sync::watch::Sender::new(false),
            retention: Retention {
                time: config.retention,
                count: config.max_retained,
                bytes: config.max_retained_bytes,
                stored_time: config.stored_retention,
                stored_count: config.max_stored,
                lease: config.lease,
            },
            store: OnceLock::new(),
            pauses: OnceLock::new(),
            holder: e2a::stream::new_id(),
            max_run_bytes: config.max_run_bytes,
            inline: AtomicUsize::new(0),
            cutting: CancellationToken::new(),
            housekeeping: Once::new(),
        }
    }

    /// Keeps the runs' frames in `stores` too, when they keep runs, and pauses when they keep
    /// them (the first given wins).
    pub(crate) fn keep_in(self: &Arc<Self>, stores: &Stores) {
        if let Some(pauses) = &stores.pauses {
            let _ = self.pauses.set(pauses.clone());
        }
        if let Some(runs) = &stores.runs {
            let _ = self.store.set(RunKeeping {
                runs: runs.clone(),
                sends: stores.sends.clone(),
                shared: stores.leases.shared(),
                pauses: stores.pauses.clone(),
                wakes: stores.leases.notices().and_then(|notices| {
                    let runs = Arc::downgrade(self);
                    wakes::Wakes::start(notices, move |key| {
                        if let Some(runs) = runs.upgrade() {
                            runs.cancel_asked(key);
                        }
                    })
                }),
            });
        }
    }

    /// Opens a run under `key` answering `request`: it is findable (for `Last-Event-ID`) and
    /// live until the returned [`Pump`] has pumped its frames, or is dropped. `permit` (a
    /// stream slot) is held until then. `typed`: whether its readers want the frames as made
    /// (AG-UI projects them, an E2A JSON answer gathers them); otherwise only their JSON text
    /// is kept, and a reader that wants a frame reads it back. `grace`: how long the run
    /// outlives its last client ([`GatewayConfig::cancel_after`]; `None`: to its end).
    pub(crate) fn open(
        self: &Arc<Self>,
        key: ConversationKey,
        request: E2AEnvelope,
        ctx: &RequestContext,
        grace: Option<Duration>,
        permit: OwnedSemaphorePermit,
        typed: bool,
    ) -> (Arc<Run>, Pump) {
        let (progress, _) = watch::channel((0, false));
        let run = Arc::new(Run {
            request: Arc::new(request),
            frames: Mutex::new(Frames::new(typed, self.max_run_bytes)),
            progress,
            done: watch::channel(false).0,
            cancel: ctx.cancel.clone(),
            stop: ctx.stop.clone(),
            subscribers: AtomicUsize::new(0),
            grace,
            whole: OnceLock::new(),
            readers: Mutex::new(Vec::new()),
            waiting: AtomicBool::new(false),
            read: tokio::sync::Notify::new(),
        });
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let key = Arc::new(key);
        {
            let mut inner = self.inner.lock();
            inner.by_key.insert(key.clone(), (id, run.clone()));
            inner.live.insert(id, (key.clone(), run.clone()));
        }
        if self.store.get().is_some() {
            self.housekeeping
                .call_once(|| housekeeping::start(Arc::downgrade(self), self.retention));
        }
        let pump = Pump::new(self.clone(), run.clone(), id, key, permit);
        (run, pump)
    }

    fn ended(&self, id: u64, key: Arc<ConversationKey>, bytes: usize) {
        let forgotten = {
            let mut inner = self.inner.lock();
            inner.live.remove(&id);
            inner.ended.push_back((id, key, Instant::now(), bytes));
            inner.ended_bytes = inner.ended_bytes.saturating_add(bytes);
            self.prune(&mut inner)
        };
        // freed outside the lock
        drop(forgotten);
    }

    /// Forgets ended runs past the retention window, beyond the count or beyond the bytes
    /// (oldest first); returns them, to be freed once the lock is released. Runs end in order,
    /// so the queue is sorted by end time: no timer per run is needed.
    fn prune(&self, inner: &mut Inner) -> Vec<Arc<Run>> {
        let r = self.retention;
        let mut forgotten = Vec::new();
        while let Some((id, _, at, bytes)) = inner.ended.front() {
            if inner.ended.len() <= r.count && inner.ended_bytes <= r.bytes && at.elapsed() < r.time {
                break;
            }
            let (id, bytes) = (*id, *bytes);
            let Some((_, key, _, _)) = inner.ended.pop_front() else {
                break;
            };
            inner.ended_bytes = inner.ended_bytes.saturating_sub(bytes);
            if inner.by_key.get(&key).is_some_and(|(i, _)| *i == id) {
                if let Some((_, run)) = inner.by_key.remove(&key) {
                    forgotten.push(run);
                }
            }
        }
        forgotten
    }

    /// Remembers that `record.owner` sent a request under `record.key` (an `Idempotency-Key`;
    /// `record.task_id` holds the request's `request_id`) unless the same owner already did:
    /// then that first record. In the store when one keeps runs (so a restart, or another
    /// gateway sharing it, sees it), else in memory for as long as ended runs are kept.
    pub(crate) async fn remember_request(&self, record: SentRecord) -> Result<Option<SentRecord>, StoreError> {
        if let Some(store) = self.store.get() {
            return store.sends.remember_send(record).await;
        }
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        // the oldest records go first (they are in the order they were made): past the
        // retention window, or beyond the count of runs kept
        let most = self.retention.count.saturating_add(inner.live.len());
        while let Some((at, _)) = inner.sent_order.front() {
            if at.elapsed() < self.retention.time && inner.sent_order.len() <= most {
                break;
            }
            if let Some((_, key)) = inner.sent_order.pop_front() {
                inner.sent.remove(&key);
            }
        }
        let key = (record.owner.clone(), record.key.clone());
        if let Some(first) = inner.sent.get(&key) {
            return Ok(Some(first.clone()));
        }
        inner.sent_order.push_back((Instant::now(), key.clone()));
        inner.sent.insert(key, record);
        Ok(None)
    }

    /// A reader of run `key` from after `after`: the run in this gateway's memory (live, or
    /// ended within the retention window), else the run's log in the store (kept by an earlier
    /// process or another gateway). `None` when neither has it.
    pub(crate) async fn resume(
        &self,
        key: &ConversationKey,
        after: Option<u64>,
    ) -> Result<Option<Subscription>, ResumeError> {
        if let Some(run) = self.local(key) {
            if let Some(oldest) = run.frames.lock().missing_after(after) {
                return Err(ResumeError::Forgotten { oldest });
            }
            return Ok(Some(run.subscribe(after)));
        }
        let Some(store) = self.store.get() else {
            return Ok(None);
        };
        let stored_key = key.scoped_id();
        let Some(log) = store.runs.run_after(&stored_key, after).await? else {
            return Ok(None);
        };
        Ok(Some(Subscription::stored(store.clone(), stored_key, log, after)))
    }

    /// Another gateway of the store asked for the cancel of the run stored under `key`
    /// ([`RunStore::request_run_cancel`]): stopped when this gateway runs it.
    fn cancel_asked(&self, key: &str) {
        let run = {
            let inner = self.inner.lock();
            inner
                .live
                .values()
                .find(|(k, _)| k.scoped_id() == key)
                .map(|(_, r)| r.clone())
        };
        if let Some(run) = run {
            tracing::info!("a cancel asked at another gateway: cancelling the run");
            run.stop(StopReason::Cancelled);
        }
    }

    /// The store that keeps runs, when one does.
    pub(crate) fn store(&self) -> Option<&RunKeeping> {
        self.store.get()
    }

    /// The store that keeps pauses, when one does.
    pub(crate) fn pauses(&self) -> Option<&Arc<dyn PauseStore>> {
        self.pauses.get()
    }

    /// The store keys of the runs still going (what their leases are renewed under).
    fn live_keys(&self) -> Vec<String> {
        self.inner.lock().live.values().map(|(k, _)| k.scoped_id()).collect()
    }

    /// Runs still going (those answered inline too).
    pub(crate) fn live(&self) -> usize {
        self.inner.lock().live.len() + self.inline.load(Ordering::SeqCst)
    }

    /// Marks the gateway as draining (new runs are refused).
    pub(crate) fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.drain_started.send_replace(true);
    }

    /// Whether the gateway is draining.
    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Completes when the gateway starts draining (at once if it has).
    pub(crate) async fn drain_started(&self) {
        let _ = self.drain_started.subscribe().wait_for(|d| *d).await;
    }

    /// Stops every live run (each gets its final frame).
    pub(crate) fn stop_all(&self, reason: StopReason) {
        let live: Vec<Arc<Run>> = self.inner.lock().live.values().map(|(_, r)| r.clone()).collect();
        for r in live {
            r.stop(reason);
        }
        if reason == StopReason::Shutdown {
            self.cutting.cancel();
        }
    }
}
