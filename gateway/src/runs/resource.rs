//! What the E2A run resource (`/v1/e2a/runs/{id}`) reads of a run and does to it: a view of
//! where it is (in this gateway's memory, else in the store — a stored run no gateway runs
//! any more gets its final frame here, as a reader would give it), and cancelling it.

use std::sync::Arc;

use super::{ResumeError, Run, Runs, Subscription};
use crate::agent::ConversationKey;
use crate::stop::StopReason;

/// What is known of a run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunView {
    /// How many frames it has sent (forgotten ones included).
    pub(crate) frames: u64,
    /// The JSON text of its oldest frame still held.
    pub(crate) first: Option<String>,
    /// The JSON text of its last frame so far (its final frame once it ended).
    pub(crate) last: Option<String>,
    /// Whether its final frame was sent.
    pub(crate) ended: bool,
}

/// What a cancel found.
pub(crate) enum Cancel {
    /// The run goes on in this gateway: it was told to stop (its reader sees the end).
    Stopping(Subscription),
    /// The run had ended already.
    Ended,
    /// The run is not in this gateway's memory (another gateway of the store runs it, or it
    /// is only in the store).
    Elsewhere,
}

impl Runs {
    /// What is known of run `key`: `None` when neither this gateway nor the store has it.
    pub(crate) async fn view(&self, key: &ConversationKey) -> Result<Option<RunView>, ResumeError> {
        if let Some(run) = self.local(key) {
            let frames = run.frames.lock();
            let n = frames.len();
            return Ok(Some(RunView {
                frames: n as u64,
                first: frames.json(frames.first_held()),
                last: n.checked_sub(1).and_then(|i| frames.json(i)),
                ended: run.ended(),
            }));
        }
        let Some(store) = self.store.get() else {
            return Ok(None);
        };
        let stored_key = key.scoped_id();
        let Some(log) = store.runs.run_after(&stored_key, None).await? else {
            return Ok(None);
        };
        let mut sub = Subscription::stored(store.clone(), stored_key, log, None);
        let held = sub.held_now().await;
        Ok(Some(RunView {
            frames: held.len() as u64,
            first: held.first().cloned(),
            last: held.last().cloned(),
            ended: sub.ended(),
        }))
    }

    /// Cancels run `key` when this gateway runs it.
    pub(crate) fn cancel(&self, key: &ConversationKey) -> Cancel {
        match self.local(key) {
            Some(run) if run.ended() => Cancel::Ended,
            Some(run) => {
                let sub = run.subscribe(None);
                run.stop(StopReason::Cancelled);
                Cancel::Stopping(sub)
            }
            None => Cancel::Elsewhere,
        }
    }

    /// Run `key` in this gateway's memory (live, or ended within the retention window).
    pub(super) fn local(&self, key: &ConversationKey) -> Option<Arc<Run>> {
        let (run, forgotten) = {
            let mut inner = self.inner.lock();
            let forgotten = self.prune(&mut inner);
            (inner.by_key.get(key).map(|(_, r)| r.clone()), forgotten)
        };
        drop(forgotten);
        run
    }
}
