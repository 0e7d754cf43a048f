//! One turn's frames → A2A events: the e2a projector, told what the task service knows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use e2a::a2a::stream::A2aStreamProjector;
use e2a::types::A2aStreamResponse;
use e2a::E2AResponse;

/// The message of a task the client canceled.
pub(super) const CANCELED_BY_CLIENT: &str = "canceled by the client";

/// One turn's frames → A2A events: the e2a projector for a task already announced (the task
/// was sent as `SUBMITTED`, so the stream opens with a `WORKING` status update), writing this
/// turn's text to the turn's own output artifact, and saying so when the client canceled.
pub(super) struct TurnMapper {
    projector: A2aStreamProjector,
    canceled_by_client: Arc<AtomicBool>,
}

impl TurnMapper {
    pub(super) fn new(task_id: &str, context_id: &str, turn: usize, canceled_by_client: Arc<AtomicBool>) -> Self {
        TurnMapper {
            projector: A2aStreamProjector::new(task_id, context_id).announced().turn(turn),
            canceled_by_client,
        }
    }

    pub(super) fn push(&mut self, frame: &E2AResponse) -> Vec<A2aStreamResponse> {
        if frame.is_final && self.canceled_by_client.load(Ordering::SeqCst) {
            self.projector.cancel_reason(CANCELED_BY_CLIENT);
        }
        self.projector.push(frame)
    }
}
