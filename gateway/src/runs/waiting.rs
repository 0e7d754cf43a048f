//! Runs that wait for an answer from outside — a task delegated to another agent, answered by
//! its callback ([`crate::backends::A2aRemoteAgent`] with `delegate = "callback"`): the mark that
//! keeps such a run from being settled as failed when its gateway goes away, and the writing of
//! its last frames by the gateway the answer reaches.

use e2a::frame::Frame;
use e2a::E2AEnvelope;

use super::{RunKeeping, Runs};
use crate::store::{FrameWrite, StoreError, StoredFrame};

/// The pause key under which run `key` (its store key) is marked as waiting for an answer from
/// outside — a delegated task's callback ([`crate::backends::A2aRemoteAgent`] with
/// `delegate = "callback"`): while the mark lives, a run whose gateway is gone is not settled
/// as failed, since the answer may still come to any gateway of the store and finish it.
pub(crate) fn waiting_key(key: &str) -> String {
    format!("waiting:{key}")
}

/// What a waiting mark holds: until when (ms since the Unix epoch) the run waits. Past it, the
/// answer will not come (its wait timed out with the gateway that ran it), and a reader settles
/// the run as failed.
pub(crate) fn waiting_mark(until_ms: i64) -> String {
    serde_json::json!({ "until_ms": until_ms }).to_string()
}

impl RunKeeping {
    /// Whether run `key` waits for an answer from outside ([`waiting_key`], not past its time);
    /// `false` when the mark cannot be read (logged).
    pub(crate) async fn waiting_external(&self, key: &str) -> bool {
        let Some(pauses) = &self.pauses else {
            return false;
        };
        match pauses.get_pause(&waiting_key(key)).await {
            Ok(Some(mark)) => {
                let until = serde_json::from_str::<serde_json::Value>(&mark)
                    .ok()
                    .and_then(|m| m.get("until_ms").and_then(serde_json::Value::as_i64));
                until.is_none_or(|until| e2a::timestamp::now_ms() < until)
            }
            Ok(None) => false,
            Err(e) => {
                tracing::error!(error = %e, "cannot read whether a run waits for a callback");
                false
            }
        }
    }
}

impl Runs {
    /// Whether run `key` (its store key) has ended: `None` when neither this gateway nor the
    /// store keeps it.
    pub(crate) async fn run_ended(&self, key: &str) -> Result<Option<bool>, StoreError> {
        let local = {
            let inner = self.inner.lock();
            let found = inner.by_key.iter().find(|(k, _)| k.scoped_id() == key);
            found.map(|(_, (_, run))| run.ended())
        };
        if local.is_some() {
            return Ok(local);
        }
        let Some(store) = self.store.get() else {
            return Ok(None);
        };
        Ok(store.runs.run_summary(key).await?.map(|s| s.ended))
    }
}

/// A stored run no gateway runs any more ([`Runs::orphan`]): what its last frames are made from.
#[derive(Debug)]
pub(crate) struct Orphan {
    /// Its store key.
    key: String,
    /// Its own id (the log it continues).
    run: String,
    /// The request it answers.
    pub(crate) request: E2AEnvelope,
    /// The sequence its next frame gets (the one after its last stored frame).
    pub(crate) next: u64,
}

impl Runs {
    /// The stored run `key` (its store key) when no gateway runs it any more — it is not live
    /// here, it has not ended, and its gateway's lease ran out (or no gateway shares the store) —
    /// else `None`. A run whose gateway went away while it waited for an answer from outside is
    /// finished by the gateway the answer reaches ([`Runs::finish_orphan`]).
    pub(crate) async fn orphan(&self, key: &str) -> Result<Option<Orphan>, StoreError> {
        let live = self.inner.lock().live.values().any(|(k, _)| k.scoped_id() == key);
        let store = match self.store.get() {
            Some(store) if !live => store,
            _ => return Ok(None),
        };
        let Some(summary) = store.runs.run_summary(key).await? else {
            return Ok(None);
        };
        if !store.orphaned(summary.ended, summary.leased) || summary.ended {
            return Ok(None);
        }
        let request: E2AEnvelope = serde_json::from_str(&summary.request)
            .map_err(|e| StoreError::Backend(format!("a stored run's request cannot be read: {e}")))?;
        Ok(Some(Orphan {
            key: key.to_string(),
            run: summary.run,
            request,
            next: summary.last.as_ref().map_or(0, |f| f.seq.saturating_add(1)),
        }))
    }

    /// Writes `frames` (made from [`Orphan::request`], numbered from [`Orphan::next`], the last
    /// one final) as the rest of `orphan`'s log: the run ends there.
    pub(crate) async fn finish_orphan(&self, orphan: Orphan, frames: &[Frame]) -> Result<(), StoreError> {
        let Some(store) = self.store.get() else {
            return Ok(());
        };
        let frames = frames
            .iter()
            .map(|f| StoredFrame {
                seq: f.sequence,
                frame: f.to_json(),
                is_final: f.is_final,
            })
            .collect();
        let write = FrameWrite {
            key: orphan.key,
            run: orphan.run,
            head: None,
            frames,
        };
        store.runs.append_frames(write).await
    }
}
