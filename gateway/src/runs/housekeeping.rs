//! Writing a run: the [`Pump`] moves an agent's guarded frames into the run's log — into the
//! store first when it keeps runs (a frame no store holds is never shown), in batches of what
//! the agent has ready — and the background loop renews the leases of this gateway's live
//! runs and forgets old runs in the store.

use std::sync::{Arc, Weak};
use std::time::Duration;

use e2a::frame::Frame;
use e2a::taxonomy::ErrorKind;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::OwnedSemaphorePermit;

use super::{Retention, Run, Runs};
use crate::agent::ConversationKey;
use crate::agent::SharedFrames;
use crate::stop::{cutoff_frame, StopReason};
use crate::store::{FrameWrite, RunHead, StoreError, StoredFrame};

/// Most frames written to the store in one step.
const BATCH: usize = 64;
/// The longest the store waits to forget runs past their retention ([`crate::store::prune_every`]:
/// a short retention is pruned more often).
const PRUNE_EVERY: Duration = Duration::from_secs(30);
/// How long a pause waits for its answer in the store before it is forgotten.
pub(crate) const PAUSE_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Frames of an ended run beyond which it is compacted on a blocking thread, not on the
/// runtime's (writing them takes about half a microsecond each).
const COMPACT_INLINE: usize = 4096;

/// Moves a run's frames into its log. Dropped before the end (the client of an inline run
/// went away), it stops the run and closes the log with an `E2A.CANCELLED` final frame.
pub(crate) struct Pump {
    runs: Arc<Runs>,
    run: Arc<Run>,
    id: u64,
    key: Option<Arc<ConversationKey>>,
    /// The run's own id in the store, made by the first write to it (nothing else reads it).
    run_id: String,
    /// Whether the store has the run's head yet.
    opened: bool,
    _permit: OwnedSemaphorePermit,
}

impl Pump {
    pub(super) fn new(
        runs: Arc<Runs>,
        run: Arc<Run>,
        id: u64,
        key: Arc<ConversationKey>,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Pump {
            runs,
            run,
            id,
            key: Some(key),
            run_id: String::new(),
            opened: false,
            _permit: permit,
        }
    }

    /// Starts pumping `frames` (an already guarded stream) on its own task.
    pub(crate) fn spawn(self, frames: SharedFrames) {
        tokio::spawn(Box::pin(self.pump(frames)));
    }

    /// Pumps every frame of `frames` into the run, then ends it. A frame the store cannot
    /// keep ends the run with an `E2A.INTERNAL` final frame instead.
    pub(crate) async fn pump(mut self, mut frames: SharedFrames) {
        let mut finished = match self.open_in_store().await {
            Ok(()) => false,
            Err(e) => {
                self.store_failed(&e);
                true
            }
        };
        while !finished {
            let Some(first) = frames.next().await else { break };
            let mut batch = vec![first];
            while batch.len() < BATCH && !batch.iter().any(|f| f.is_final) {
                match frames.next().now_or_never() {
                    Some(Some(f)) => batch.push(f),
                    Some(None) => {
                        finished = true;
                        break;
                    }
                    None => break,
                }
            }
            // each frame's text is written once, here: the store takes it, then readers see it
            self.run.stage(&batch);
            match self.store().await {
                Ok(()) => {
                    if self.run.publish(batch) {
                        self.run.wait_for_readers().await;
                    }
                }
                Err(e) => {
                    self.store_failed(&e);
                    break;
                }
            }
        }
        drop(frames);
        self.close();
    }

    /// Puts the run in the store (when it keeps runs) before its agent starts, not with its
    /// first frames: a reader on any gateway finds it at once — the `202` of a run resource,
    /// which waits for this, names a run every gateway knows — and what the agent keeps in the
    /// store about it (a delegated run's waiting mark) is never there before it. Once.
    pub(crate) async fn open_in_store(&mut self) -> Result<(), StoreError> {
        if self.opened {
            return Ok(());
        }
        self.store().await
    }

    /// The store did not take the run's head or frames (`e`): the run stops, and its log ends
    /// with an `E2A.INTERNAL` final frame no store holds.
    fn store_failed(&mut self, e: &StoreError) {
        tracing::error!(error = %e, "cannot store a run's frames: the run fails");
        self.run.unstage();
        self.run.cancel.cancel();
        let (sequence, _) = self.run.next_sequence();
        let end = self.cutoff(
            sequence,
            ErrorKind::Internal,
            "the gateway could not store the answer's frames",
            "store_failed",
        );
        self.run.push(Arc::new(end));
    }

    /// Writes the staged frames ([`Run::stage`]) to the store when it keeps runs.
    async fn store(&mut self) -> Result<(), StoreError> {
        let (Some(store), Some(key)) = (self.runs.store.get(), &self.key) else {
            return Ok(());
        };
        if self.run_id.is_empty() {
            self.run_id = e2a::stream::new_ordered_id();
        }
        let frames: Vec<StoredFrame> = self
            .run
            .staged()
            .into_iter()
            .map(|(seq, frame, is_final)| StoredFrame { seq, frame, is_final })
            .collect();
        let head = (!self.opened).then(|| RunHead {
            request: serde_json::to_string(&*self.run.request).unwrap_or_default(),
            holder: self.runs.holder.clone(),
            lease: self.runs.retention.lease,
        });
        store
            .runs
            .append_frames(FrameWrite {
                key: key.scoped_id(),
                run: self.run_id.clone(),
                head,
                frames,
            })
            .await?;
        self.opened = true;
        Ok(())
    }

    fn cutoff(&self, sequence: u64, kind: ErrorKind, message: &str, reason: &str) -> Frame {
        let details = crate::stop::cutoff_details(reason);
        cutoff_frame(&self.run.request, sequence, kind, message, details)
    }

    /// Ends the run: its readers see the end, its frames are compacted, and the registry
    /// keeps it as ended.
    fn close(&mut self) {
        if let Some(key) = self.key.take() {
            self.run.end();
            let (runs, run, id) = (self.runs.clone(), self.run.clone(), self.id);
            let settle = move || {
                let bytes = run.compact();
                runs.ended(id, key, bytes);
            };
            match tokio::runtime::Handle::try_current() {
                Ok(h) if self.run.len() > COMPACT_INLINE => drop(h.spawn_blocking(settle)),
                _ => settle(),
            }
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        let Some(key) = self.key.clone() else { return };
        // frames staged for a store write that was given up are not shown (as if never sent)
        self.run.unstage();
        let _ = self.run.stop.set(StopReason::ClientGone);
        self.run.cancel.cancel();
        let (sequence, ended) = self.run.next_sequence();
        if !ended {
            let end = self.cutoff(sequence, ErrorKind::Cancelled, "the client went away", "client_gone");
            if let (Some(store), true) = (self.runs.store.get().cloned(), self.opened) {
                let frame = StoredFrame {
                    seq: end.sequence,
                    frame: end.to_json(),
                    is_final: true,
                };
                let run_id = self.run_id.clone();
                if let Ok(h) = tokio::runtime::Handle::try_current() {
                    h.spawn(async move {
                        let write = FrameWrite {
                            key: key.scoped_id(),
                            run: run_id,
                            head: None,
                            frames: vec![frame],
                        };
                        if let Err(e) = store.runs.append_frames(write).await {
                            tracing::warn!(error = %e, "cannot store the final frame of a cancelled run");
                        }
                    });
                }
            }
            self.run.push(Arc::new(end));
        }
        self.close();
    }
}

/// Starts the background work of a registry whose store keeps runs: renewing the leases of
/// its live runs (every third of the lease) and forgetting the store's old runs. It ends when
/// the registry is dropped.
pub(super) fn start(runs: Weak<Runs>, retention: Retention) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    handle.spawn(async move {
        let every = (retention.lease / 3).max(Duration::from_millis(50));
        let prune_every = crate::store::prune_every(retention.stored_time, PRUNE_EVERY);
        let every = every.min(prune_every);
        let mut since_prune = Duration::ZERO;
        loop {
            tokio::time::sleep(every).await;
            let Some(this) = runs.upgrade() else { return };
            let Some(store) = this.store.get().cloned() else { return };
            let keys = this.live_keys();
            if !keys.is_empty() {
                if let Err(e) = store.runs.renew_runs(&this.holder, keys, retention.lease).await {
                    tracing::error!(error = %e, "cannot renew the leases of running requests");
                }
            }
            since_prune += every;
            if since_prune >= prune_every {
                since_prune = Duration::ZERO;
                if let Err(e) = store
                    .runs
                    .prune_runs(retention.stored_time, retention.stored_count)
                    .await
                {
                    tracing::warn!(error = %e, "cannot forget old runs in the store");
                }
                if let Some(pauses) = this.pauses() {
                    if let Err(e) = pauses.prune_pauses(PAUSE_RETENTION).await {
                        tracing::warn!(error = %e, "cannot forget old pauses in the store");
                    }
                }
            }
        }
    });
}
