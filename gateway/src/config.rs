//! Gateway configuration: input limits, stream caps, deadlines, retention and auth.

use std::time::Duration;

use e2a::Limits;

use crate::pipeline::boundary::Deadlines;
use crate::web::auth::Auth;

/// How a [`crate::Gateway`] behaves. `Default` suits a local gateway; every field is public.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Limits on request bodies (size, nesting depth, string length), checked before parsing.
    pub limits: Limits,
    /// Most runs (streams) open at once; past it requests get `503` with `Retry-After`.
    pub max_streams: usize,
    /// `Retry-After` seconds of a `503`.
    pub retry_after_secs: u64,
    /// Interval of SSE keep-alive comments (and NDJSON blank lines are never sent).
    pub keep_alive: Duration,
    /// Idle deadline and final-frame grace of every run.
    pub deadlines: Deadlines,
    /// Total deadline of a run (`None`: none).
    pub max_run: Option<Duration>,
    /// How long the frames of a run stay available to `Last-Event-ID` after it ends.
    pub retention: Duration,
    /// Most ended runs retained for resumption (the oldest go first).
    pub max_retained: usize,
    /// How long a run whose every client went away keeps running, waiting for a resume,
    /// before it is cancelled.
    pub disconnect_grace: Duration,
    /// On shutdown, how long open streams may run before they are cut off with a final frame.
    pub drain_timeout: Duration,
    /// Accepted bearer tokens.
    pub auth: Auth,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            limits: Limits {
                max_bytes: 4 << 20,
                max_depth: 64,
                max_string_bytes: 2 << 20,
            },
            max_streams: 1024,
            retry_after_secs: 1,
            keep_alive: Duration::from_secs(15),
            deadlines: Deadlines::default(),
            max_run: Some(Duration::from_secs(600)),
            retention: Duration::from_secs(300),
            max_retained: 1024,
            disconnect_grace: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(10),
            auth: Auth::none(),
        }
    }
}
