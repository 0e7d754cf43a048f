//! Writing a run: the [`Pump`] moves an agent's guarded frames into the run's log — into the
//! store first when it keeps runs (a frame no store holds is never shown), in batches of what
//! the agent has ready — and the background loop renews the leases of this gateway's live
//! runs and forgets old runs in the store.

use std::sync::{Arc, Weak};
use std::time::Duration;

use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, E2AResponse};
use futures_util::{FutureExt, StreamExt};
use tokio::sync::OwnedSemaphorePermit;

use super::{Retention, Run, Runs};
use crate::agent::ConversationKey;
use crate::pipeline::boundary::{cutoff_frame, SharedFrames, StopReason};
use crate::store::{FrameWrite, RunHead, StoreError, StoredFrame};

/// Most frames written to the store in one step.
const BATCH: usize = 64;
/// How often the store forgets runs past the retention window.
const PRUNE_EVERY: Duration = Duration::from_secs(30);
/// What a frame in memory costs besides its body, about (what the memory bound counts): the
/// `E2AResponse` itself and the dozen small strings every frame carries (ids, timestamp,
/// provenance), with the allocator's rounding. Calibrated by `tools/bench/retention.sh`:
/// runs of one-character text chunks take about 1.7 KiB of RSS per retained frame.
const FRAME_OVERHEAD: usize = 1536;

/// Moves a run's frames into its log. Dropped before the end (the client of an inline run
/// went away), it stops the run and closes the log with an `E2A.CANCELLED` final frame.
pub(crate) struct Pump {
    runs: Arc<Runs>,
    run: Arc<Run>,
    id: u64,
    key: Option<ConversationKey>,
    request: E2AEnvelope,
    /// The run's own id in the store.
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
        key: ConversationKey,
        request: E2AEnvelope,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Pump {
            runs,
            run,
            id,
            key: Some(key),
            request,
            run_id: e2a::stream::new_ordered_id(),
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
        let mut finished = false;
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
            match self.store(&batch).await {
                Ok(sizes) => self.run.push_all(batch.into_iter().zip(sizes)),
                Err(e) => {
                    tracing::error!(error = %e, "cannot store a run's frames: the run fails");
                    self.run.cancel.cancel();
                    let (sequence, _) = self.run.next_sequence();
                    let end = self.cutoff(
                        sequence,
                        ErrorKind::Internal,
                        "the gateway could not store the answer's frames",
                        "store_failed",
                    );
                    self.run.push(Arc::new(end), FRAME_OVERHEAD);
                    break;
                }
            }
        }
        drop(frames);
        self.close();
    }

    /// Writes `batch` to the store when it keeps runs; the frames' sizes.
    async fn store(&mut self, batch: &[Arc<E2AResponse>]) -> Result<Vec<usize>, StoreError> {
        // what the frames take in memory, where the run keeps them (not their stored text)
        let sizes = batch.iter().map(|f| size_of(f)).collect();
        let (Some(store), Some(key)) = (self.runs.store.get(), &self.key) else {
            return Ok(sizes);
        };
        let frames: Vec<StoredFrame> = batch
            .iter()
            .map(|f| StoredFrame {
                seq: f.sequence,
                frame: f.to_json(),
                is_final: f.is_final,
            })
            .collect();
        let head = (!self.opened).then(|| RunHead {
            request: serde_json::to_string(&self.request).unwrap_or_default(),
            holder: self.runs.holder.clone(),
            lease: self.runs.retention.lease,
        });
        store
            .append_frames(FrameWrite {
                key: key.scoped_id(),
                run: self.run_id.clone(),
                head,
                frames,
            })
            .await?;
        self.opened = true;
        Ok(sizes)
    }

    fn cutoff(&self, sequence: u64, kind: ErrorKind, message: &str, reason: &str) -> E2AResponse {
        let mut details = serde_json::Map::new();
        details.insert("reason".into(), reason.into());
        cutoff_frame(&self.request, sequence, kind, message, details)
    }

    fn close(&mut self) {
        if let Some(key) = self.key.take() {
            self.run.end();
            let bytes = self.run.bytes.load(std::sync::atomic::Ordering::Relaxed);
            self.runs.ended(self.id, key, bytes);
        }
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        let Some(key) = self.key.clone() else { return };
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
                        if let Err(e) = store.append_frames(write).await {
                            tracing::warn!(error = %e, "cannot store the final frame of a cancelled run");
                        }
                    });
                }
            }
            self.run.push(Arc::new(end), FRAME_OVERHEAD);
        }
        self.close();
    }
}

/// About how many bytes `frame` takes in memory.
fn size_of(frame: &E2AResponse) -> usize {
    fn walk(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::String(s) => s.len() + 24,
            serde_json::Value::Array(a) => a.iter().map(walk).sum::<usize>() + 24,
            serde_json::Value::Object(m) => m.iter().map(|(k, v)| k.len() + walk(v)).sum::<usize>() + 48,
            _ => 16,
        }
    }
    FRAME_OVERHEAD + frame.body.iter().map(|(k, v)| k.len() + walk(v)).sum::<usize>()
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
        let mut since_prune = Duration::ZERO;
        loop {
            tokio::time::sleep(every).await;
            let Some(this) = runs.upgrade() else { return };
            let Some(store) = this.store.get().cloned() else { return };
            let keys = this.live_keys();
            if !keys.is_empty() {
                if let Err(e) = store.renew_runs(&this.holder, keys, retention.lease).await {
                    tracing::error!(error = %e, "cannot renew the leases of running requests");
                }
            }
            since_prune += every;
            if since_prune >= PRUNE_EVERY {
                since_prune = Duration::ZERO;
                if let Err(e) = store.prune_runs(retention.time, retention.count).await {
                    tracing::warn!(error = %e, "cannot forget old runs in the store");
                }
            }
        }
    });
}
