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
    format!("{WAITING}{key}")
}

/// What a waiting mark holds: until when (ms since the Unix epoch) the run waits — past it, the
/// answer will not come (its wait timed out with the gateway that ran it), and a reader settles
/// the run as failed — and `by`, what it waits on (the key its waiter keeps it under).
pub(crate) fn waiting_mark(until_ms: i64, by: &str) -> String {
    serde_json::json!({ "until_ms": until_ms, "by": by }).to_string()
}

/// What the waiting mark `mark` ([`waiting_mark`]) says the run waits on.
pub(crate) fn waiting_on(mark: &str) -> Option<String> {
    let mark: serde_json::Value = serde_json::from_str(mark).ok()?;
    mark.get("by").and_then(serde_json::Value::as_str).map(str::to_string)
}

/// The beginning of every waiting mark's key ([`waiting_key`]).
pub(crate) const WAITING: &str = "waiting:";

impl RunKeeping {
    /// Whether run `key` may still be finished by an answer from outside ([`waiting_key`], not
    /// past its time), so that it must not be settled as failed now. When the mark cannot be
    /// read (logged), the answer is `true`: a reader asks again at its next look, and a store
    /// that failed once never turns a run that waits into a failed one.
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
                tracing::warn!(error = %e, "cannot read whether a run waits for a callback; it is not settled now");
                true
            }
        }
    }
}

/// Where a run waiting for an answer from outside stands ([`Runs::waiting`]).
#[derive(Debug)]
pub(crate) enum Waiting {
    /// It has ended, or neither this gateway nor the store keeps it: nothing waits any more.
    Over,
    /// It goes on, here or at a gateway whose lease holds: that gateway finishes it.
    Going,
    /// No gateway runs it any more: whoever has its answer finishes it.
    Orphan(Box<Orphan>),
}

/// A stored run no gateway runs any more ([`Runs::waiting`]): what its last frames are made from.
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
    /// Where run `key` (its store key) stands (one look: this gateway's memory, else the
    /// store): ended or not kept, going on somewhere (a run marked waiting whose first frames
    /// are not stored yet too), or an orphan — not live here, not ended, its gateway's lease
    /// run out (or no gateway shares the store). A run whose gateway
    /// went away while it waited for an answer from outside is finished by the gateway the
    /// answer reaches ([`Runs::finish_orphan`]).
    pub(crate) async fn waiting(&self, key: &str) -> Result<Waiting, StoreError> {
        let here = {
            let inner = self.inner.lock();
            let found = inner.by_key.iter().find(|(k, _)| k.scoped_id() == key);
            found.map(|(_, (_, run))| run.ended())
        };
        match here {
            Some(true) => return Ok(Waiting::Over),
            Some(false) => return Ok(Waiting::Going),
            None => {}
        }
        let Some(store) = self.store.get() else {
            return Ok(Waiting::Over);
        };
        let Some(summary) = store.runs.run_summary(key).await? else {
            // a run is stored before its agent starts, so a delegated run's mark follows it;
            // a mark found without its run all the same is taken as going on (taken for
            // ended, the mark would go and the run be failed when its gateway's lease ran out)
            return Ok(if store.waiting_external(key).await {
                Waiting::Going
            } else {
                Waiting::Over
            });
        };
        if summary.ended {
            return Ok(Waiting::Over);
        }
        if !store.orphaned(summary.ended, summary.leased) {
            return Ok(Waiting::Going);
        }
        let request: E2AEnvelope = serde_json::from_str(&summary.request)
            .map_err(|e| StoreError::Backend(format!("a stored run's request cannot be read: {e}")))?;
        Ok(Waiting::Orphan(Box::new(Orphan {
            key: key.to_string(),
            run: summary.run,
            request,
            next: summary.last.as_ref().map_or(0, |f| f.seq.saturating_add(1)),
        })))
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::agent::{PauseError, PauseFuture, PauseKeeper};
    use crate::store::{MemoryStore, PauseStore, SqliteStore, StoreFuture};

    /// A pause store that cannot be read (a store that failed for a moment).
    struct Unreadable;

    impl PauseKeeper for Unreadable {
        fn put_pause<'a>(&'a self, _: &'a str, _: String) -> PauseFuture<'a, ()> {
            Box::pin(async { Err(PauseError("the store is away".into())) })
        }
        fn take_pause<'a>(&'a self, _: &'a str) -> PauseFuture<'a, Option<String>> {
            Box::pin(async { Err(PauseError("the store is away".into())) })
        }
        fn get_pause<'a>(&'a self, _: &'a str) -> PauseFuture<'a, Option<String>> {
            Box::pin(async { Err(PauseError("the store is away".into())) })
        }
    }

    impl PauseStore for Unreadable {
        fn prune_pauses(&self, _: Duration) -> StoreFuture<'_, u64> {
            Box::pin(async { Ok(0) })
        }
        fn pauses_with_prefix<'a>(&'a self, _: &'a str, _: usize) -> StoreFuture<'a, Vec<(String, String)>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    #[tokio::test]
    async fn a_marked_run_not_stored_yet_goes_on_an_unmarked_one_is_over() {
        let store = Arc::new(SqliteStore::in_memory().expect("an in-memory SQLite store"));
        let runs = Arc::new(Runs::new(&crate::GatewayConfig::default()));
        runs.keep_in(&crate::store::Stores::from(store.clone()));
        // the run's gateway marked it before its first frames (and its log) were stored
        let later = e2a::timestamp::now_ms() + 60_000;
        store
            .put_pause(&waiting_key("r"), waiting_mark(later, "d"))
            .await
            .expect("put");
        let seen = runs.waiting("r").await.expect("read");
        assert!(matches!(seen, Waiting::Going), "{seen:?}");
        store.take_pause(&waiting_key("r")).await.expect("take");
        let seen = runs.waiting("r").await.expect("read");
        assert!(matches!(seen, Waiting::Over), "{seen:?}");
    }

    fn keeping(pauses: Arc<dyn PauseStore>) -> RunKeeping {
        let store = Arc::new(SqliteStore::in_memory().expect("an in-memory SQLite store"));
        RunKeeping {
            runs: store.clone(),
            sends: store,
            shared: true,
            wakes: None,
            pauses: Some(pauses),
        }
    }

    #[tokio::test]
    async fn a_run_is_settled_only_when_its_mark_is_read_and_says_it_no_longer_waits() {
        let store = Arc::new(MemoryStore::new());
        let k = keeping(store.clone());
        assert!(!k.waiting_external("r").await, "no mark: nothing to wait for");
        let later = e2a::timestamp::now_ms() + 60_000;
        store
            .put_pause(&waiting_key("r"), waiting_mark(later, "d"))
            .await
            .expect("put");
        assert!(k.waiting_external("r").await, "marked, within its time");
        let past = e2a::timestamp::now_ms() - 1;
        store
            .put_pause(&waiting_key("r"), waiting_mark(past, "d"))
            .await
            .expect("put");
        assert!(!k.waiting_external("r").await, "past its time");
        // a store that cannot be read now never turns a waiting run into a failed one
        assert!(keeping(Arc::new(Unreadable)).waiting_external("r").await);
    }
}
