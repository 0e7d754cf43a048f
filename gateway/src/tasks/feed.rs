//! The followers of tasks: one broadcast channel per task someone follows (a run or a
//! subscriber), fed with every event once it is stored, and the stream a follower reads —
//! the task's log after a position, then live events — until the turn or the task ends.

use crate::maps::HashMap;
use std::sync::Arc;
use std::time::Duration;

use e2a::types::{A2aStreamResponse, A2aTaskState};
use futures_util::{FutureExt, StreamExt};
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::error::A2aError;
use super::live::LiveRuns;
use super::EventStream;
use crate::pipeline::Pipeline;
use crate::store::{self, StoredEvent};

/// How long a follower of a task another gateway runs waits for a notice before it reads the
/// task's log itself (the journal's rule, as for runs).
const REMOTE_POLL: Duration = store::journal::QUIET;
/// How often a follower looks whether its task's run is gone while the gateway drains.
const DRAIN_LOOK: Duration = Duration::from_millis(250);
/// What a task's channel carries to its followers.
#[derive(Debug, Clone)]
pub(super) enum Feed {
    /// An event, stored, and the state it sets (if it sets one).
    Event(StoredEvent, Option<A2aTaskState>),
    /// The store failed while the task ran: the turn ended without a stored terminal event.
    Broken(Arc<str>),
}

/// Where a follower's stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Until {
    /// At a terminal or interrupted state (a send's stream: the turn is over).
    TurnEnd,
    /// At a terminal state (a subscription).
    Terminal,
}

/// The state an event sets: its status update's, or its task's.
pub(super) fn ends_at(event: &A2aStreamResponse) -> Option<A2aTaskState> {
    match event {
        A2aStreamResponse::StatusUpdate(u) => Some(u.status.state),
        A2aStreamResponse::Task(t) => Some(t.status.state),
        _ => None,
    }
}

/// The state a logged event (JSON text) sets, read without building the event. An artifact
/// update or a message (most of a long answer's events) sets none and is not parsed: its
/// member is the text's first key.
pub(super) fn state_in(json: &str) -> Option<A2aTaskState> {
    let first = json
        .trim_start()
        .strip_prefix('{')
        .map(str::trim_start)
        .unwrap_or_default();
    if first.starts_with("\"artifactUpdate\"") || first.starts_with("\"message\"") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Status {
        state: Option<A2aTaskState>,
    }
    #[derive(serde::Deserialize)]
    struct HasStatus {
        status: Option<Status>,
    }
    #[derive(serde::Deserialize)]
    struct Event {
        #[serde(rename = "statusUpdate")]
        status_update: Option<HasStatus>,
        task: Option<HasStatus>,
    }
    let e: Event = serde_json::from_str(json).ok()?;
    e.status_update.or(e.task)?.status?.state
}

/// Whether an event setting `state` ends a stream that runs `until`.
pub(super) fn ends(state: Option<A2aTaskState>, until: Until) -> bool {
    state.is_some_and(|s| s.is_terminal() || (until == Until::TurnEnd && s.is_interrupted()))
}

/// Events a task's channel holds for a slow follower; one that falls further behind reads the
/// log instead (a channel is made per task, so its ring is kept small: one of 1,024 slots was
/// tens of KiB allocated and freed per request).
const FEED_CAPACITY: usize = 64;

/// The followers of tasks: one channel per task followed by someone (a run or a subscriber);
/// it outlives runs, so a subscriber of a paused task sees the turn its answer starts. Events
/// other gateways sharing the store append arrive on it too. A follower reads the task log
/// (`tasks`) after a gap; it stops when the gateway drains (`pipeline`) and no run (`runs`)
/// is behind its task.
pub(crate) struct Followers {
    channels: Mutex<HashMap<String, broadcast::Sender<Feed>>>,
    tasks: Arc<dyn store::TaskLog>,
    runs: Arc<LiveRuns>,
    pipeline: Arc<Pipeline>,
}

impl Followers {
    /// Nobody following yet.
    pub(super) fn new(tasks: Arc<dyn store::TaskLog>, runs: Arc<LiveRuns>, pipeline: Arc<Pipeline>) -> Self {
        Followers {
            channels: Mutex::new(HashMap::default()),
            tasks,
            runs,
            pipeline,
        }
    }

    /// Tells task `id`'s followers of its events just stored (`texts`, numbered up to `last`,
    /// each with the state it sets); a `terminal` task's channel closes after them.
    pub(super) fn publish(
        &self,
        id: &str,
        terminal: bool,
        last: u64,
        texts: Vec<Arc<str>>,
        states: Vec<Option<A2aTaskState>>,
    ) {
        let n = texts.len() as u64;
        let tx = {
            let mut c = self.channels.lock();
            if terminal {
                // the last events: followers get them, then the channel closes
                c.remove(id)
            } else {
                c.get(id).cloned()
            }
        };
        if let Some(tx) = tx.filter(|tx| tx.receiver_count() > 0) {
            let first = last.saturating_sub(n - 1);
            for ((seq, event), state) in (first..).zip(texts).zip(states) {
                let _ = tx.send(Feed::Event(StoredEvent { seq, event }, state));
            }
        }
    }

    /// Ends task `id`'s followers with an error (`why`: the store failed under its run); its
    /// channel goes.
    pub(super) fn break_off(&self, id: &str, why: Arc<str>) {
        if let Some(tx) = self.channels.lock().remove(id) {
            let _ = tx.send(Feed::Broken(why));
        }
    }

    /// Waits (up to 10 s) for the current turn of task `id` to end, following it from `after`.
    pub(super) async fn wait_turn_end(self: &Arc<Self>, id: &str, after: u64, rx: broadcast::Receiver<Feed>) {
        let mut events = self.follow(id.to_string(), after, Some(rx), Until::TurnEnd);
        let _ = tokio::time::timeout(Duration::from_secs(10), async move {
            while events.next().await.is_some() {}
        })
        .await;
    }

    /// Drops task `id`'s channel when its task has ended (`done`) or nobody follows it (its
    /// followers catch up from the log).
    pub(super) fn drop_channel(&self, id: &str, done: bool) {
        let mut c = self.channels.lock();
        let idle = c.get(id).is_some_and(|tx| tx.receiver_count() == 0);
        if done || idle {
            c.remove(id);
        }
    }

    /// An event another gateway appended: to this gateway's followers of the task, if any.
    pub(super) async fn relay(&self, task_id: &str, seq: u64, event: Option<Arc<str>>) {
        let Some(tx) = self.channels.lock().get(task_id).cloned() else {
            return;
        };
        let event = match event {
            Some(e) => e,
            // too large for the notice: from the log
            None => match self.tasks.events_after(task_id, seq.saturating_sub(1)).await {
                Ok(events) => match events.into_iter().find(|e| e.seq == seq) {
                    Some(e) => e.event,
                    None => return,
                },
                Err(e) => {
                    tracing::warn!(task_id, error = %e, "cannot read a relayed event");
                    return;
                }
            },
        };
        let state = state_in(&event);
        let done = ends(state, Until::Terminal);
        let _ = tx.send(Feed::Event(StoredEvent { seq, event }, state));
        self.drop_channel(task_id, done);
    }

    /// A receiver of task `id`'s channel (made on first use). It subscribes while holding the
    /// table's lock, so a channel is never dropped as idle between its lookup and the
    /// subscription.
    pub(super) fn channel(&self, id: &str) -> broadcast::Receiver<Feed> {
        self.channels
            .lock()
            .entry(id.to_string())
            .or_insert_with(|| broadcast::channel(FEED_CAPACITY).0)
            .subscribe()
    }

    /// Task `id`'s logged events after `after`, up to the first that ends a stream running
    /// `until` (and whether one did).
    async fn log_after(&self, id: &str, after: u64, until: Until) -> Result<(Vec<StoredEvent>, bool), A2aError> {
        let mut events = self.tasks.events_after(id, after).await?;
        let end = events.iter().position(|e| ends(state_in(&e.event), until));
        if let Some(i) = end {
            events.truncate(i + 1);
        }
        Ok((events, end.is_some()))
    }

    /// The events of task `id` after `after` from the log, then live ones, until an event ends
    /// the stream (`until`), the channel closes, or the gateway drains and no run is behind it.
    pub(super) fn follow(
        self: &Arc<Self>,
        id: String,
        after: u64,
        rx: Option<broadcast::Receiver<Feed>>,
        until: Until,
    ) -> EventStream {
        self.follow_from(id, after, rx, until, true)
    }

    /// [`Followers::follow`] with `rx` subscribed before the event after `after` was
    /// stored: the log is read only after a gap, not first.
    pub(super) fn follow_live(
        self: &Arc<Self>,
        id: String,
        after: u64,
        rx: broadcast::Receiver<Feed>,
        until: Until,
    ) -> EventStream {
        self.follow_from(id, after, Some(rx), until, false)
    }

    /// What a follower gets next from its channel `live` (`None`: time to look around). An
    /// event already sent is taken without arming a timer (a turn's events come in bursts). An
    /// idle follower sleeps until an event, the start of a drain, or (a `shared` store: notices
    /// can be lost) its next look at the log, [`REMOTE_POLL`] after the last event (`quiet`);
    /// while the gateway drains, it looks every [`DRAIN_LOOK`] whether its task's run is gone.
    async fn next_live(
        &self,
        live: &mut broadcast::Receiver<Feed>,
        shared: bool,
        quiet: Instant,
    ) -> Option<Result<Feed, broadcast::error::RecvError>> {
        if let Some(r) = live.recv().now_or_never() {
            return Some(r);
        }
        let draining = self.pipeline.runs.draining();
        let look = if draining {
            Some(DRAIN_LOOK)
        } else if shared {
            Some(REMOTE_POLL.saturating_sub(quiet.elapsed()))
        } else {
            None
        };
        tokio::select! {
            biased;
            r = live.recv() => Some(r),
            () = self.pipeline.runs.drain_started(), if !draining => None,
            () = tokio::time::sleep(look.unwrap_or_default()), if look.is_some() => None,
        }
    }

    /// [`Followers::follow`] and [`Followers::follow_live`]: the log first when
    /// `read_log_first`, then live events (the log again after a gap).
    fn follow_from(
        self: &Arc<Self>,
        id: String,
        after: u64,
        rx: Option<broadcast::Receiver<Feed>>,
        until: Until,
        read_log_first: bool,
    ) -> EventStream {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            let mut last = after;
            let mut rx = rx;
            // a task another gateway runs: its events come as notices, and after a quiet
            // REMOTE_POLL from the log (a notice lost while the listener reconnected)
            let shared = this.runs.shared();
            let mut quiet = Instant::now();
            // the log first; again after a gap (lagged), a quiet spell or a closed channel
            let (mut catch_up, mut resubscribe) = (read_log_first, false);
            loop {
                if catch_up {
                    match this.log_after(&id, last, until).await {
                        Ok((events, end)) => {
                            for e in events {
                                quiet = Instant::now();
                                last = e.seq;
                                yield Ok(e);
                            }
                            if end { return; }
                        }
                        Err(e) => {
                            yield Err(e);
                            return;
                        }
                    }
                    if resubscribe {
                        // a channel closes after its task's last event, which the log then
                        // holds; one that closed before the end (dropped as idle): follow a
                        // new one
                        rx = Some(this.channel(&id));
                    }
                    (catch_up, resubscribe) = (false, false);
                }
                let Some(live) = rx.as_mut() else { return };
                let got = this.next_live(live, shared, quiet).await;
                match got {
                    None => {
                        if this.pipeline.runs.draining() && this.runs.get(&id).is_none() {
                            return;
                        }
                        if shared && quiet.elapsed() >= REMOTE_POLL && this.runs.get(&id).is_none() {
                            quiet = Instant::now();
                            catch_up = true;
                        }
                    }
                    Some(Ok(Feed::Broken(why))) => {
                        yield Err(A2aError::internal(why.to_string()));
                        return;
                    }
                    Some(Ok(Feed::Event(e, state))) if e.seq == last.saturating_add(1) => {
                        quiet = Instant::now();
                        last = e.seq;
                        let end = ends(state, until);
                        yield Ok(e);
                        if end { return; }
                    }
                    Some(Ok(Feed::Event(e, _))) if e.seq <= last => {}
                    Some(Ok(_)) | Some(Err(broadcast::error::RecvError::Lagged(_))) => catch_up = true,
                    Some(Err(broadcast::error::RecvError::Closed)) => (catch_up, resubscribe) = (true, true),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_an_event_sets_is_read_from_its_text() {
        let completed = Some(A2aTaskState::TaskStateCompleted);
        for (text, state) in [
            (
                r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
                completed,
            ),
            (
                r#" { "statusUpdate" : {"status":{"state":"TASK_STATE_COMPLETED"}}}"#,
                completed,
            ),
            (
                r#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
                completed,
            ),
            (
                r#"{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"text":"status"}]}}}"#,
                None,
            ),
            (r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}"#, None),
            (r#"{"statusUpdate":{"taskId":"t"}}"#, None),
            ("not json", None),
        ] {
            assert_eq!(state_in(text), state, "{text}");
        }
    }
}
