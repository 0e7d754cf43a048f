//! One turn's run: the agent's frames → A2A events (the e2a projector, told what the task
//! service knows), stored in the task log as they come, the turn ended with its task settled
//! in a final or paused state.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use e2a::a2a::stream::A2aStreamProjector;
use e2a::frame::{Frame, Projector};
use e2a::types::A2aStreamResponse;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::oneshot;

use super::error::A2aError;
use super::feed::Followers;
use super::live::LiveRuns;
use super::log::{TaskLog, STORE_FAILED};
use super::snapshot::{agent_message, status_event};
use super::FAILED;
use crate::pipeline::boundary::SharedFrames;
use crate::store::TaskRecord;

/// The message of a task the client canceled.
pub(super) const CANCELED_BY_CLIENT: &str = "canceled by the client";

/// Most events a run stores in one append (what its agent had ready at once).
const READY_EVENTS: usize = 256;

/// Where a run tells the send that started it how its turn ended: the task as stored at the
/// turn's end, or why nothing of the turn was stored.
pub(super) type Done = oneshot::Sender<Result<Arc<str>, A2aError>>;

/// What a run pumps into its task: the frame already read (the first, when the agent's answer
/// was looked at before the task was made), the rest of the agent's frames, and their mapping
/// to A2A events.
pub(super) struct Turn {
    /// The turn's opening event (the task, `SUBMITTED` or answered), when the run stores it:
    /// with the agent's first ready frames, or alone when none is ready.
    pub(super) opening: Option<A2aStreamResponse>,
    pub(super) next: Option<Arc<Frame>>,
    pub(super) frames: SharedFrames,
    pub(super) mapper: TurnMapper,
}

impl Turn {
    /// Runs the turn into task `rec`: its events stored in `log` as the agent's frames come,
    /// the task failed when the agent ends without a final state; then the run leaves `runs`,
    /// an idle channel of `followers` goes, and `done` gets the task as stored last.
    pub(super) async fn run(
        self,
        mut rec: TaskRecord,
        done: Done,
        log: &TaskLog,
        runs: &LiveRuns,
        followers: &Followers,
    ) {
        let Turn {
            opening,
            mut next,
            mut frames,
            mut mapper,
        } = self;
        // the stored snapshot, while it is the task's latest
        let mut task: Option<Arc<str>> = None;
        let mut batch: Vec<A2aStreamResponse> = opening.into_iter().collect();
        let mut opened = batch.is_empty();
        let mut more = true;
        while more {
            let frame = match next.take() {
                Some(f) => Some(f),
                // the opening waits for no agent: stored alone when nothing is ready
                None if !opened => match frames.next().now_or_never() {
                    Some(f) => {
                        more = f.is_some();
                        f
                    }
                    None => None,
                },
                None => match frames.next().await {
                    Some(f) => Some(f),
                    None => break,
                },
            };
            if let Some(frame) = frame {
                // the events of every frame the agent has ready, stored in one append
                let (events, m) = ready_events(frame, &mut frames, &mut mapper);
                batch.extend(events);
                more = m;
            }
            if batch.is_empty() {
                continue;
            }
            match log.commit_all(&mut rec, std::mem::take(&mut batch)).await {
                Ok(t) => {
                    task = t;
                    opened = true;
                }
                Err(e) if !opened => {
                    abandon(&rec.id, e, done, runs, followers).await;
                    return;
                }
                Err(_) => {
                    task = None;
                    Box::pin(log.store_failed(&mut rec)).await;
                    break;
                }
            }
        }
        if !rec.state.is_terminal() && !rec.state.is_interrupted() {
            task = Box::pin(fail_unended(&mut rec, log)).await;
        }
        runs.end(&rec.id).await;
        followers.drop_channel(&rec.id, rec.state.is_terminal());
        // told last: a client answering a pause at once finds the task free
        if let Some(t) = task {
            let _ = done.send(Ok(t));
        }
    }
}

/// Ends `rec` `FAILED` when its agent stopped without a final state; the snapshot stored, or
/// nothing when the store failed (the task is then settled as the store allows).
async fn fail_unended(rec: &mut TaskRecord, log: &TaskLog) -> Option<Arc<str>> {
    let ev = status_event(
        rec,
        FAILED,
        Some(agent_message(rec, "the agent ended without a final state")),
    );
    match log.commit(rec, ev).await {
        Ok(t) => t,
        Err(_) => {
            log.store_failed(rec).await;
            None
        }
    }
}

/// The opening event of task `id`'s turn could not be stored, so nothing of the turn is:
/// the run stops, its followers end with the error, the claim goes, and a waiting send
/// gets the error.
async fn abandon(id: &str, e: A2aError, done: Done, runs: &LiveRuns, followers: &Followers) {
    if let Some(live) = runs.get(id) {
        live.cancel();
    }
    followers.break_off(id, Arc::from(STORE_FAILED));
    runs.unclaim(id).await;
    let _ = done.send(Err(e));
}

/// The A2A events of `frame` and of the frames after it the agent already has ready (up
/// to `READY_EVENTS` events), and whether more may follow (no final frame, the stream
/// not ended).
fn ready_events(
    frame: Arc<Frame>,
    frames: &mut SharedFrames,
    mapper: &mut TurnMapper,
) -> (Vec<A2aStreamResponse>, bool) {
    let mut events = Vec::new();
    let mut frame = frame;
    loop {
        events.extend(mapper.push(&frame));
        if frame.is_final {
            return (events, false);
        }
        if events.len() >= READY_EVENTS {
            return (events, true);
        }
        match frames.next().now_or_never() {
            Some(Some(f)) => frame = f,
            Some(None) => return (events, false),
            None => return (events, true),
        }
    }
}

/// One turn's frames → A2A events: the e2a projector for a task already announced (the task
/// was sent as `SUBMITTED`, so the stream opens with a `WORKING` status update), writing this
/// turn's text to the turn's own output artifact, and saying so when the client canceled.
pub(super) struct TurnMapper {
    projector: A2aStreamProjector,
    canceled_by_client: Arc<AtomicBool>,
}

impl TurnMapper {
    /// The mapper of turn number `turn` of task `task_id` (in `context_id`), reading whether
    /// the client canceled it from `canceled_by_client`.
    pub(super) fn new(task_id: &str, context_id: &str, turn: usize, canceled_by_client: Arc<AtomicBool>) -> Self {
        TurnMapper {
            projector: A2aStreamProjector::new(task_id, context_id).announced().turn(turn),
            canceled_by_client,
        }
    }

    /// The A2A events of one frame.
    pub(super) fn push(&mut self, frame: &Frame) -> Vec<A2aStreamResponse> {
        if frame.is_final && self.canceled_by_client.load(Ordering::SeqCst) {
            self.projector.cancel_reason(CANCELED_BY_CLIENT);
        }
        self.projector.push(frame)
    }
}
