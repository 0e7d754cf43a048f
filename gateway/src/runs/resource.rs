//! What the E2A run resource (`/v1/e2a/runs/{id}`) reads of a run and does to it: a view of
//! where it is (in this gateway's memory, else in the store — a stored run no gateway runs
//! any more gets its final frame here, as a reader would give it), and cancelling it.

use std::sync::Arc;

use super::{ResumeError, Run, RunKeeping, Runs, Subscription};
use e2a::E2AEnvelope;

use crate::agent::ConversationKey;
use crate::stop::StopReason;
use crate::store::{RunQuery, RunSummary};

/// What is known of a run now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunView {
    /// How many frames it has sent (forgotten ones included).
    pub(crate) frames: u64,
    /// The JSON text of its oldest frame still held.
    pub(crate) first: Option<String>,
    /// The JSON text of its last frame so far (its final frame once it ended).
    pub(crate) last: Option<String>,
    /// Whether its final frame was sent.
    pub(crate) ended: bool,
    /// The request it answers (`None`: the stored one cannot be read back).
    pub(crate) request: Option<Arc<E2AEnvelope>>,
}

impl RunView {
    fn of_local(run: &Run) -> Self {
        let frames = run.frames.lock();
        let n = frames.len();
        RunView {
            frames: n as u64,
            first: frames.json(frames.first_held()),
            last: n.checked_sub(1).and_then(|i| frames.json(i)),
            ended: run.ended(),
            request: Some(run.request.clone()),
        }
    }

    fn of_stored(s: RunSummary) -> Self {
        RunView {
            frames: s.last.as_ref().map_or(0, |f| f.seq.saturating_add(1)),
            first: s.first.map(|f| f.frame),
            last: s.last.map(|f| f.frame),
            ended: s.ended,
            request: serde_json::from_str(&s.request).ok().map(Arc::new),
        }
    }
}

/// A page of a caller's runs ([`Runs::list`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunList {
    /// Each run's id (what follows the listed prefix in its key) and view, newest first.
    pub(crate) runs: Vec<(String, RunView)>,
    /// How many runs the caller has in all.
    pub(crate) total: usize,
    /// Where the next page starts (`None`: this is the last).
    pub(crate) next: Option<String>,
}

/// The page of runs a list reads: after `cursor` (a [`RunList::next`]), at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunPageAsk {
    /// Where the page starts (`None`: at the newest run).
    pub(crate) cursor: Option<String>,
    /// Most runs on the page.
    pub(crate) limit: usize,
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
            return Ok(Some(RunView::of_local(&run)));
        }
        let Some(store) = self.store.get() else {
            return Ok(None);
        };
        let Some(summary) = store.runs.run_summary(&key.scoped_id()).await? else {
            return Ok(None);
        };
        self.stored_view(store, summary).await
    }

    /// What is known of a stored run from its summary; a run no gateway runs any more is
    /// settled here (its final frame stored, as a reader would give it).
    async fn stored_view(&self, store: &RunKeeping, summary: RunSummary) -> Result<Option<RunView>, ResumeError> {
        if !store.orphaned(summary.ended, summary.leased) {
            return Ok(Some(RunView::of_stored(summary)));
        }
        let Some(log) = store.runs.run_after(&summary.key, None).await? else {
            return Ok(None);
        };
        let mut sub = Subscription::stored(store.clone(), summary.key.clone(), log, None);
        let held = sub.held_now().await;
        Ok(Some(RunView {
            frames: held.len() as u64,
            first: held.first().cloned(),
            last: held.last().cloned(),
            ended: sub.ended(),
            ..RunView::of_stored(summary)
        }))
    }

    /// A page of the runs whose keys begin with `prefix` (one caller's runs of one binding,
    /// [`super::e2a_key`] or [`super::agui_key`] with an empty last part), newest first: from
    /// the store when one keeps runs (a run shows there from its start),
    /// else from this gateway's memory. `key_of` makes a listed run's key from its id (a
    /// stored run that reads as no gateway's may be running here, fresher in memory).
    pub(crate) async fn list(
        &self,
        prefix: &ConversationKey,
        key_of: impl Fn(&str) -> ConversationKey,
        ask: RunPageAsk,
    ) -> Result<RunList, ResumeError> {
        let prefix = prefix.scoped_id();
        let Some(store) = self.store.get() else {
            return Ok(self.list_local(&prefix, ask));
        };
        let query = RunQuery {
            prefix: prefix.clone(),
            before: ask.cursor,
            // one more than asked for: whether a page follows
            limit: ask.limit.saturating_add(1),
        };
        let mut page = store.runs.list_runs(query).await?;
        let next = match page.runs.len() > ask.limit {
            true => {
                page.runs.truncate(ask.limit);
                page.runs.last().map(|r| r.run.clone())
            }
            false => None,
        };
        let mut runs = Vec::with_capacity(page.runs.len());
        for summary in page.runs {
            let Some(id) = summary.key.strip_prefix(&prefix).map(str::to_string) else {
                continue;
            };
            let local = match store.orphaned(summary.ended, summary.leased) {
                true => self.local(&key_of(&id)),
                false => None,
            };
            let view = match local {
                Some(run) => RunView::of_local(&run),
                None => match self.stored_view(store, summary).await? {
                    Some(v) => v,
                    None => continue,
                },
            };
            runs.push((id, view));
        }
        Ok(RunList {
            runs,
            total: page.total,
            next,
        })
    }

    /// [`Runs::list`] from this gateway's memory: newest opened first (a cursor is the
    /// number of the last run of the page before).
    fn list_local(&self, prefix: &str, ask: RunPageAsk) -> RunList {
        let before = ask.cursor.and_then(|c| c.parse::<u64>().ok()).unwrap_or(u64::MAX);
        let mut mine: Vec<(u64, String, Arc<Run>)> = {
            let inner = self.inner.lock();
            inner
                .by_key
                .iter()
                .filter_map(|(key, (n, run))| {
                    let scoped = key.scoped_id();
                    let id = scoped.strip_prefix(prefix)?.to_string();
                    Some((*n, id, run.clone()))
                })
                .collect()
        };
        let total = mine.len();
        mine.retain(|r| r.0 < before);
        mine.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        let next = (mine.len() > ask.limit)
            .then(|| mine.get(ask.limit.saturating_sub(1)).map(|r| r.0.to_string()))
            .flatten();
        let runs = mine
            .into_iter()
            .take(ask.limit)
            .map(|(_, id, run)| (id, RunView::of_local(&run)))
            .collect();
        RunList { runs, total, next }
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
