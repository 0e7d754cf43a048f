//! What an A2A task state means: [`A2aTaskState`] (declared in `schema/constants.json`) with
//! the lifecycle questions a gateway asks of it.

use crate::types::A2aTaskState;

impl A2aTaskState {
    /// Whether the state ends a task (`COMPLETED`, `FAILED`, `CANCELED`, `REJECTED`).
    ///
    /// ```
    /// use e2a::types::A2aTaskState;
    /// assert!(A2aTaskState::TaskStateCanceled.is_terminal());
    /// assert!(!A2aTaskState::TaskStateInputRequired.is_terminal());
    /// ```
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            A2aTaskState::TaskStateCompleted
                | A2aTaskState::TaskStateFailed
                | A2aTaskState::TaskStateCanceled
                | A2aTaskState::TaskStateRejected
        )
    }

    /// Whether the state pauses a task until the client answers (`INPUT_REQUIRED`,
    /// `AUTH_REQUIRED`).
    pub const fn is_interrupted(self) -> bool {
        matches!(
            self,
            A2aTaskState::TaskStateInputRequired | A2aTaskState::TaskStateAuthRequired
        )
    }

    /// Whether a run may still be behind a task in this state (`SUBMITTED`, `WORKING`).
    pub const fn is_active(self) -> bool {
        matches!(self, A2aTaskState::TaskStateSubmitted | A2aTaskState::TaskStateWorking)
    }

    /// A state as a client may write it: a 1.0 name, or a 0.3 one (`input-required`,
    /// `completed`). `None` for anything else.
    ///
    /// ```
    /// use e2a::types::A2aTaskState;
    /// assert_eq!(A2aTaskState::read("input-required"), Some(A2aTaskState::TaskStateInputRequired));
    /// assert_eq!(A2aTaskState::read("TASK_STATE_WORKING"), Some(A2aTaskState::TaskStateWorking));
    /// assert_eq!(A2aTaskState::read("sleeping"), None);
    /// ```
    pub fn read(state: &str) -> Option<Self> {
        state
            .parse()
            .ok()
            .or_else(|| crate::a2a::jsonrpc::normalize_task_state(state).parse().ok())
    }
}
