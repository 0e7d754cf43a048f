//! A client's reading position in a run: in this gateway's memory ([`Subscription::local`]),
//! or in the store's log of a run this gateway does not have ([`Subscription::stored`]) —
//! kept by an earlier process, or still running on another gateway sharing the store, which
//! the reader follows by reading the log again while the run's lease holds.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use e2a::frame::Frame;
use e2a::shown::WholeAnswer;
use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, E2AResponse};
use tokio::sync::watch;

use super::inline::WholeJson;
use super::RunKeeping;
use super::{ResumeError, Run};
use crate::stop::{cutoff_frame, StopReason};
use crate::store::{FrameWrite, RunLog, StoredFrame};

/// How often a reader of a run running on another gateway reads its log again, when the store
/// sends no notices.
const FOLLOW_EVERY: Duration = Duration::from_millis(100);
/// How long a reader woken by the store's notices ([`super::wakes`]) waits for one before it
/// reads the log anyway (the journal's rule, as for tasks).
const FOLLOW_QUIET: Duration = crate::store::journal::QUIET;

/// A client's reading position in a run. Dropping a local one (client gone) cancels the run
/// after the grace period if no other client reads it.
pub(crate) struct Subscription(Source);

enum Source {
    Local(Local),
    Stored(Box<Stored>),
}

struct Local {
    run: Arc<Run>,
    rx: watch::Receiver<(usize, bool)>,
    pos: usize,
    /// `pos`, where the run sees it (its budget keeps what a reader has not read); `None` for
    /// a reader that does not read frame by frame ([`Subscription::whole_json`]).
    at: Option<Arc<std::sync::atomic::AtomicUsize>>,
    after: Option<u64>,
}

struct Stored {
    store: RunKeeping,
    key: String,
    run: String,
    request: String,
    buffer: VecDeque<Frame>,
    after: Option<u64>,
    ended: bool,
    leased: bool,
    /// Its wake-ups when the store sends notices.
    follow: Option<super::wakes::Follow>,
}

impl Subscription {
    /// A reader of `run` (in memory) from after `after`.
    pub(super) fn local(run: Arc<Run>, after: Option<u64>) -> Self {
        run.subscribers.fetch_add(1, Ordering::SeqCst);
        let rx = run.progress.subscribe();
        // (the caller made sure no frame it wants was forgotten: it reads from the oldest held)
        let at = {
            let mut readers = run.readers.lock();
            let pos = run.frames.lock().first_held();
            let at = Arc::new(std::sync::atomic::AtomicUsize::new(pos));
            readers.push(at.clone());
            at
        };
        let pos = at.load(Ordering::SeqCst);
        Subscription(Source::Local(Local {
            run,
            rx,
            pos,
            at: Some(at),
            after,
        }))
    }

    /// A reader of the stored run `key`, whose log from after `after` is `log`.
    pub(super) fn stored(store: RunKeeping, key: String, log: RunLog, after: Option<u64>) -> Self {
        let follow = (!log.ended)
            .then(|| store.wakes.as_ref().map(|w| w.follow(&key)))
            .flatten();
        let mut s = Stored {
            follow,
            store,
            key,
            run: log.run.clone(),
            request: log.request.clone(),
            buffer: VecDeque::new(),
            after,
            ended: false,
            leased: true,
        };
        s.absorb(log);
        Subscription(Source::Stored(Box::new(s)))
    }

    /// The JSON text of the frames after this reader's position held now, without waiting
    /// (a stored run no gateway runs any more gets its final frame, as [`Subscription::next`]
    /// would give it); the position moves past them.
    pub(crate) async fn held_now(&mut self) -> Vec<String> {
        match &mut self.0 {
            Source::Local(l) => {
                let frames = l.run.frames.lock();
                let from = l.pos.max(frames.first_held());
                let after = l.after;
                let out = (from..frames.len())
                    .filter(|i| after.is_none_or(|a| frames.sequence(*i).is_some_and(|s| s > a)))
                    .filter_map(|i| frames.json(i))
                    .collect();
                l.pos = frames.len();
                out
            }
            Source::Stored(s) => s.held_now().await,
        }
    }

    /// Whether the run this reader reads has ended (as far as it knows).
    pub(crate) fn ended(&self) -> bool {
        match &self.0 {
            Source::Local(l) => l.run.ended(),
            Source::Stored(s) => s.ended,
        }
    }

    /// This reader will wait for the whole answer ([`Subscription::whole_json`]): it holds no
    /// frame back from the run's budget from now on (a run driven in the reader's own task
    /// must not wait for it).
    pub(crate) fn wants_whole(&mut self) {
        if let Source::Local(l) = &mut self.0 {
            // gathering starts before the hold goes: no frame is forgotten in between
            l.run.want_whole();
            l.release();
        }
    }

    /// The answer of a client that takes one frame, once the run has ended: the final frame's
    /// JSON text, with what the frames before it carried and it does not
    /// ([`e2a::shown::WholeAnswer`]: the streamed text, artifacts and tool calls). `None` when
    /// no frame is after the position asked for. Wakes once, at the end, not for every frame.
    /// A reader that could not gather the answer as the frames came (it asked for the frames
    /// after a `Last-Event-ID`) and whose frames the run forgot meanwhile (over its memory
    /// budget) gets [`ResumeError::Forgotten`], never an answer missing them.
    pub(crate) async fn whole_json(&mut self) -> Result<Option<String>, ResumeError> {
        match &mut self.0 {
            Source::Local(l) => {
                // waiting for the end, this reader holds no frame back (once gathering began)
                l.run.want_whole();
                l.release();
                let mut done = l.run.done.subscribe();
                let _ = done.wait_for(|d| *d).await;
                let frames = l.run.frames.lock();
                let Some((sequence, _)) = frames.last() else {
                    return Ok(None);
                };
                let Some(last_index) = frames.len().checked_sub(1) else {
                    return Ok(None);
                };
                if l.after.is_some_and(|a| sequence <= a) {
                    return Ok(None);
                }
                // the answer gathered as the frames came (when this reader, or one before it,
                // wanted it from the start); a reader that came later reads the frames back
                if let (None, Some(made)) = (l.after, l.run.whole.get()) {
                    return Ok(made.clone().or_else(|| frames.json(last_index)));
                }
                if let Some(oldest) = frames.missing_after(l.after) {
                    return Err(ResumeError::Forgotten { oldest });
                }
                let mut whole = WholeAnswer::default();
                for i in 0..last_index {
                    if let Some(f) = frames.get(i).filter(|f| l.after.is_none_or(|a| f.sequence > a)) {
                        whole.push(&f);
                    }
                }
                let Some(last) = frames.get(last_index) else {
                    return Ok(None);
                };
                Ok(match whole.finish_frame(&last) {
                    Some(shown) => Some(shown.to_json()),
                    None => frames.json(last_index),
                })
            }
            Source::Stored(s) => {
                let mut answer = WholeJson::default();
                while let Some(f) = s.next().await {
                    answer.push(f);
                }
                Ok(answer.finish())
            }
        }
    }

    /// The next frame, waiting for it; `None` after the final frame.
    pub(crate) async fn next(&mut self) -> Option<Arc<Frame>> {
        match &mut self.0 {
            Source::Local(l) => {
                let (i, _) = l.next_index().await?;
                l.run.frames.lock().get(i)
            }
            Source::Stored(s) => s.next().await,
        }
    }

    /// The next frame's JSON text, appended to `out` after what `before` writes there (given
    /// the frame's sequence), waiting for it: its sequence, or `None` after the final frame. A
    /// run in this gateway's memory holds the text already: nothing is written again.
    pub(crate) async fn next_json(&mut self, out: &mut Vec<u8>, before: impl FnOnce(u64, &mut Vec<u8>)) -> Option<u64> {
        match &mut self.0 {
            Source::Local(l) => {
                let (i, sequence) = l.next_index().await?;
                before(sequence, out);
                l.run.frames.lock().write(i, out).then_some(sequence)
            }
            Source::Stored(s) => {
                let f = s.next().await?;
                before(f.sequence, out);
                e2a::write::append_json(&*f, out);
                Some(f.sequence)
            }
        }
    }
}

impl Local {
    /// Stops holding frames back: the run's budget may forget what this reader has not read.
    fn release(&mut self) {
        if let Some(at) = self.at.take() {
            self.run.readers.lock().retain(|r| !Arc::ptr_eq(r, &at));
            self.run.reader_moved();
        }
    }

    /// The index and sequence of the next frame after `after`, waiting for it.
    async fn next_index(&mut self) -> Option<(usize, u64)> {
        loop {
            let (len, ended) = *self.rx.borrow_and_update();
            while self.pos < len {
                let i = self.pos;
                self.pos += 1;
                if let Some(at) = &self.at {
                    at.store(i, Ordering::Relaxed);
                    self.run.reader_moved();
                }
                let Some(sequence) = self.run.frames.lock().sequence(i) else {
                    tracing::warn!(
                        frame = i,
                        "a reader fell behind the frames its run holds (max_run_bytes): its stream ends here"
                    );
                    return None;
                };
                if self.after.is_none_or(|a| sequence > a) {
                    return Some((i, sequence));
                }
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

impl Stored {
    /// Takes in what a read of the log found.
    fn absorb(&mut self, log: RunLog) {
        self.leased = log.leased;
        for f in log.frames {
            match serde_json::from_str::<E2AResponse>(&f.frame) {
                Ok(frame) => self.buffer.push_back(Frame::from(frame)),
                Err(e) => {
                    tracing::error!(error = %e, seq = f.seq, "a stored frame cannot be read: the run ends here");
                    let end = self.cutoff("the stored frames of this request cannot be read", "store_corrupt");
                    self.buffer.push_back(end);
                    self.ended = true;
                    return;
                }
            }
        }
        self.ended = log.ended;
    }

    /// The final frame of a run that cannot go on (after the last frame read).
    fn cutoff(&self, message: &str, reason: &str) -> Frame {
        let request: E2AEnvelope = serde_json::from_str(&self.request).unwrap_or_default();
        let sequence = self
            .buffer
            .back()
            .map(|f| f.sequence)
            .or(self.after)
            .map_or(0, |s| s.saturating_add(1));
        let details = crate::stop::cutoff_details(reason);
        cutoff_frame(&request, sequence, ErrorKind::Internal, message, details)
    }

    async fn next(&mut self) -> Option<Arc<Frame>> {
        loop {
            if let Some(f) = self.buffer.pop_front() {
                self.after = Some(f.sequence);
                return Some(Arc::new(f));
            }
            if self.ended {
                return None;
            }
            if let Some(end) = self.orphan_end().await {
                return Some(Arc::new(end));
            }
            if !self.buffer.is_empty() || self.ended {
                // (finished meanwhile: read above)
                continue;
            }
            match &mut self.follow {
                Some(follow) => follow.wait(FOLLOW_QUIET).await,
                None => tokio::time::sleep(FOLLOW_EVERY).await,
            }
            match self.store.runs.run_after(&self.key, self.after).await {
                Ok(Some(log)) if log.run == self.run => self.absorb(log),
                // forgotten, or its key opened again for another run
                Ok(_) => return None,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read a run's log from the store");
                    self.ended = true;
                    return Some(Arc::new(
                        self.cutoff("the gateway cannot read this request's frames", "store_failed"),
                    ));
                }
            }
        }
    }

    /// The final frame of a run no gateway runs any more (its lease ran out, or no gateway
    /// shares the store) and that has not ended: stored, so that every reader gets the same.
    async fn orphan_end(&mut self) -> Option<Frame> {
        if !self.store.orphaned(self.ended, self.leased) {
            return None;
        }
        // its gateway is gone, but the answer it waits for may still finish it
        if self.store.waiting_external(&self.key).await {
            return None;
        }
        // or it was finished since its log was read (a waiting mark goes after the last frames)
        if let Ok(Some(log)) = self.store.runs.run_after(&self.key, self.after).await {
            if log.run == self.run && (log.ended || !log.frames.is_empty()) {
                self.absorb(log);
                return None;
            }
        }
        tracing::info!(run = %self.run, "settling a run whose gateway stopped before it finished");
        let end = self.cutoff(
            "the gateway running this request stopped before it finished",
            "gateway_gone",
        );
        self.settle(&end).await;
        self.ended = true;
        Some(end)
    }

    /// The JSON text of the frames read so far, without waiting (with the final frame of an
    /// orphaned run).
    async fn held_now(&mut self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.buffer.len() + 1);
        while let Some(f) = self.buffer.pop_front() {
            self.after = Some(f.sequence);
            out.push(f.to_json());
        }
        let end = self.orphan_end().await;
        // (what came while it looked, when the run was finished meanwhile)
        while let Some(f) = self.buffer.pop_front() {
            self.after = Some(f.sequence);
            out.push(f.to_json());
        }
        out.extend(end.map(|e| e.to_json()));
        out
    }

    /// Stores the final frame of an orphaned run, so that every later reader gets the same.
    async fn settle(&self, end: &Frame) {
        let frame = StoredFrame {
            seq: end.sequence,
            frame: end.to_json(),
            is_final: true,
        };
        let write = FrameWrite {
            key: self.key.clone(),
            run: self.run.clone(),
            head: None,
            frames: vec![frame],
        };
        if let Err(e) = self.store.runs.append_frames(write).await {
            tracing::warn!(error = %e, "cannot store the final frame of an orphaned run");
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let Source::Local(l) = &mut self.0 else { return };
        l.release();
        let left = l.run.subscribers.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        // a detached run goes on without its clients
        let Some(grace) = l.run.grace else { return };
        if left == 0 && !l.run.ended() {
            let run = l.run.clone();
            let cancel_later = async move {
                tokio::time::sleep(grace).await;
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
