//! How the gateway stops a run from outside: why (a client gone, a shutdown), where the
//! reason is recorded before the run's token is cancelled, and the final frame the run gets.

use std::sync::{Arc, OnceLock};

use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::E2AEnvelope;
use serde_json::{Map, Value};

/// Why the gateway stopped a run from outside (the reason the `e2a.error` frame gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Every client of the run went away.
    ClientGone,
    /// The gateway is shutting down and the drain deadline passed.
    Shutdown,
    /// Its caller cancelled it (the E2A run resource's `:cancel`).
    Cancelled,
}

/// Where the reason for a cancellation is recorded before the run's token is cancelled.
pub type StopCell = Arc<OnceLock<StopReason>>;

/// The final frame a run gets when the gateway ends it: `e2a.error` with the taxonomy code of
/// `kind`, at sequence `sequence`, echoing the request's correlation fields.
pub fn cutoff_frame(
    request: &E2AEnvelope,
    sequence: u64,
    kind: ErrorKind,
    message: &str,
    details: Map<String, Value>,
) -> Frame {
    cutoff_from(ResponseStream::for_request(request), sequence, kind, message, details)
}

/// The `details` of a cutoff frame that says why the run was cut off (`{"reason": …}`).
pub(crate) fn cutoff_details(reason: &str) -> Map<String, Value> {
    let mut details = Map::new();
    details.insert("reason".into(), reason.into());
    details
}

/// [`cutoff_frame`] from the request's frame template.
pub(crate) fn cutoff_from(
    stream: ResponseStream,
    sequence: u64,
    kind: ErrorKind,
    message: &str,
    details: Map<String, Value>,
) -> Frame {
    let mut frame = stream.fail(kind.mapping().e2a_code, message, details);
    frame.sequence = sequence;
    frame
}
