//! Runs: one agent run per accepted request, pumped by its own task into a frame log that any
//! number of clients read from a position. The log is what makes `Last-Event-ID` resumption
//! work (a reconnecting client reads from after the last id it saw), and a run whose every
//! client went away is cancelled after a grace period.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use e2a::{E2AEnvelope, E2AResponse};
use futures_util::StreamExt;
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{FrameStream, RequestContext};
use crate::pipeline::boundary::{StopCell, StopReason};

/// Which stream a resuming client asks for: the caller and the request id.
pub type RunKey = (Option<String>, String);

/// One run: its frames so far, whether it ended, and how to stop it.
pub struct Run {
    frames: Mutex<Vec<Arc<E2AResponse>>>,
    /// (frames so far, ended)
    progress: watch::Sender<(usize, bool)>,
    /// Whether the run has ended (changes once: readers of the final frame only wake then).
    done: watch::Sender<bool>,
    cancel: CancellationToken,
    stop: StopCell,
    subscribers: AtomicUsize,
    grace: Duration,
}

impl Run {
    fn push(&self, f: E2AResponse) {
        let n = {
            let mut v = self.frames.lock();
            v.push(Arc::new(f));
            v.len()
        };
        self.progress.send_replace((n, false));
    }

    fn end(&self) {
        self.progress.send_modify(|p| p.1 = true);
        self.done.send_replace(true);
    }

    /// Whether the run has ended (its final frame is in the log).
    pub fn ended(&self) -> bool {
        self.progress.borrow().1
    }

    /// Stops the run from outside, recording why.
    pub fn stop(&self, reason: StopReason) {
        let _ = self.stop.set(reason);
        self.cancel.cancel();
    }

    /// A reader of the frames with a sequence greater than `after` (all frames for `None`).
    pub fn subscribe(self: &Arc<Self>, after: Option<u64>) -> Subscription {
        self.subscribers.fetch_add(1, Ordering::SeqCst);
        Subscription {
            run: self.clone(),
            rx: self.progress.subscribe(),
            pos: 0,
            after,
        }
    }
}

/// A client's reading position in a run. Dropping it (client gone) cancels the run after the
/// grace period if no other client reads it.
pub struct Subscription {
    run: Arc<Run>,
    rx: watch::Receiver<(usize, bool)>,
    pos: usize,
    after: Option<u64>,
}

impl Subscription {
    /// The final frame once the run has ended (`None` when no frame is after the position
    /// asked for). Wakes once, at the end, not for every frame.
    pub async fn last(&mut self) -> Option<Arc<E2AResponse>> {
        let mut done = self.run.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
        let f = self.run.frames.lock().last().cloned()?;
        if self.after.is_some_and(|a| f.sequence <= a) {
            return None;
        }
        Some(f)
    }

    /// The next frame, waiting for it; `None` after the final frame.
    pub async fn next(&mut self) -> Option<Arc<E2AResponse>> {
        loop {
            let (len, ended) = *self.rx.borrow_and_update();
            if self.pos < len {
                let f = self.run.frames.lock().get(self.pos).cloned()?;
                self.pos += 1;
                if self.after.is_some_and(|a| f.sequence <= a) {
                    continue;
                }
                return Some(f);
            }
            if ended {
                return None;
            }
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let left = self.run.subscribers.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        if left == 0 && !self.run.ended() {
            let run = self.run.clone();
            let cancel_later = async move {
                tokio::time::sleep(run.grace).await;
                if run.subscribers.load(Ordering::SeqCst) == 0 && !run.ended() {
                    tracing::info!("every client went away: cancelling the run");
                    run.stop(StopReason::ClientGone);
                }
            };
            if let Ok(h) = tokio::runtime::Handle::try_current() {
                h.spawn(cancel_later);
            }
        }
    }
}

/// Live and retained runs.
pub struct Runs {
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    draining: AtomicBool,
    retention: Duration,
    max_retained: usize,
}

#[derive(Default)]
struct Inner {
    by_key: HashMap<RunKey, (u64, Arc<Run>)>,
    live: HashMap<u64, Arc<Run>>,
    ended: VecDeque<(u64, RunKey, Instant)>,
}

impl Runs {
    /// A registry keeping ended runs for `retention`, at most `max_retained` of them.
    pub fn new(retention: Duration, max_retained: usize) -> Self {
        Runs {
            inner: Mutex::default(),
            next_id: AtomicU64::new(1),
            draining: AtomicBool::new(false),
            retention,
            max_retained,
        }
    }

    /// Opens a run under `key`: it is findable (for `Last-Event-ID`) and live until the
    /// returned [`Pump`] has pumped its frames, or is dropped. `permit` (a stream slot) is held
    /// until then; `request`, when given, makes the final frame of a pump dropped midway.
    pub fn open(
        self: &Arc<Self>,
        key: RunKey,
        request: Option<&E2AEnvelope>,
        ctx: &RequestContext,
        grace: Duration,
        permit: OwnedSemaphorePermit,
    ) -> (Arc<Run>, Pump) {
        let (progress, _) = watch::channel((0, false));
        let run = Arc::new(Run {
            frames: Mutex::new(Vec::new()),
            progress,
            done: watch::channel(false).0,
            cancel: ctx.cancel.clone(),
            stop: ctx.stop.clone(),
            subscribers: AtomicUsize::new(0),
            grace,
        });
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        {
            let mut inner = self.inner.lock();
            inner.by_key.insert(key.clone(), (id, run.clone()));
            inner.live.insert(id, run.clone());
        }
        let pump = Pump {
            runs: self.clone(),
            run: run.clone(),
            id,
            key: Some(key),
            request: request.cloned(),
            _permit: permit,
        };
        (run, pump)
    }

    /// Opens a run and pumps `frames` (an already guarded stream) into it on its own task.
    /// `permit` (a stream slot) is held until the run ends.
    pub fn start(
        self: &Arc<Self>,
        key: RunKey,
        frames: FrameStream,
        ctx: &RequestContext,
        grace: Duration,
        permit: OwnedSemaphorePermit,
    ) -> Arc<Run> {
        let (run, pump) = self.open(key, None, ctx, grace, permit);
        tokio::spawn(pump.pump(frames));
        run
    }

    fn ended(self: &Arc<Self>, id: u64, key: RunKey) {
        let mut inner = self.inner.lock();
        inner.live.remove(&id);
        inner.ended.push_back((id, key, Instant::now()));
        self.prune(&mut inner);
    }

    /// Forgets ended runs past the retention window or beyond `max_retained` (oldest first).
    /// Runs end in order, so the queue is sorted by end time: no timer per run is needed.
    fn prune(&self, inner: &mut Inner) {
        while let Some((id, key, at)) = inner.ended.front().cloned() {
            if inner.ended.len() <= self.max_retained && at.elapsed() < self.retention {
                break;
            }
            inner.ended.pop_front();
            inner.forget(id, &key);
        }
    }

    /// The run of `key` (live, or ended within the retention window).
    pub fn find(&self, key: &RunKey) -> Option<Arc<Run>> {
        let mut inner = self.inner.lock();
        self.prune(&mut inner);
        inner.by_key.get(key).map(|(_, r)| r.clone())
    }

    /// Runs still going.
    pub fn live(&self) -> usize {
        self.inner.lock().live.len()
    }

    /// Marks the gateway as draining (new runs are refused).
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the gateway is draining.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Stops every live run (each gets its final frame).
    pub fn stop_all(&self, reason: StopReason) {
        let live: Vec<Arc<Run>> = self.inner.lock().live.values().cloned().collect();
        for r in live {
            r.stop(reason);
        }
    }
}

/// Moves a run's frames into its log. Dropped before the end (the client of an inline run
/// went away), it stops the run and closes the log with an `E2A.CANCELLED` final frame.
pub struct Pump {
    runs: Arc<Runs>,
    run: Arc<Run>,
    id: u64,
    key: Option<RunKey>,
    request: Option<E2AEnvelope>,
    _permit: OwnedSemaphorePermit,
}

impl Pump {
    /// Pumps every frame of `frames` into the run, then ends it.
    pub async fn pump(mut self, mut frames: FrameStream) {
        while let Some(f) = frames.next().await {
            self.run.push(f);
        }
        drop(frames);
        self.close();
    }

    fn close(&mut self) {
        if let Some(key) = self.key.take() {
            self.run.end();
            self.runs.ended(self.id, key);
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        if self.key.is_none() {
            return;
        }
        let _ = self.run.stop.set(StopReason::ClientGone);
        self.run.cancel.cancel();
        let next = self
            .run
            .frames
            .lock()
            .last()
            .map(|f| (f.is_final, f.sequence.saturating_add(1)));
        if let (Some(request), Some((false, _)) | None) = (self.request.take(), next) {
            let sequence = next.map(|(_, s)| s).unwrap_or(0);
            self.run.push(crate::pipeline::boundary::cutoff_frame(
                &request,
                sequence,
                e2a::taxonomy::ErrorKind::Cancelled,
                "the client went away",
                crate::pipeline::boundary::obj(serde_json::json!({"reason": "client_gone"})),
            ));
        }
        self.close();
    }
}

impl Inner {
    fn forget(&mut self, id: u64, key: &RunKey) {
        if self.by_key.get(key).is_some_and(|(i, _)| *i == id) {
            self.by_key.remove(key);
        }
    }
}
