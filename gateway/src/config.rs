//! Gateway configuration: input limits, stream caps, deadlines, retention and auth.

use std::time::Duration;

use e2a::Limits;

use crate::web::auth::Auth;
use crate::web::server::ServerLimits;

pub use crate::web::auth::TOKEN_ENV;
/// The environment variable holding the token the gateway sends to an `e2a:` / `a2a:` agent.
pub const AGENT_TOKEN_ENV: &str = "E2A_AGENT_TOKEN";
/// The gateway's credentials in its environment: an agent process it starts (`acp:CMD`) never
/// inherits them.
pub const SECRET_ENV: &[&str] = &[TOKEN_ENV, AGENT_TOKEN_ENV];

/// How a [`crate::Gateway`] behaves. `Default` suits a local gateway; every field is public.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Limits on request bodies (size 4 MiB, nesting depth 64, string length 2 MiB, 100,000
    /// values), checked before parsing.
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
    /// How long the frames of a run stay available to `Last-Event-ID` in memory after it ends
    /// (a store that keeps runs has them for `stored_retention`).
    pub retention: Duration,
    /// Most ended runs retained in memory for resumption (the oldest go first).
    pub max_retained: usize,
    /// How long an ended run (its frames, its `Idempotency-Key` record) is kept after its last
    /// frame in a store that keeps runs ([`crate::Gateway::with_store`]): what `Last-Event-ID`
    /// and the run resource read back once memory has let it go. Default the config file's
    /// `store.run_retention_hours` (168).
    pub stored_retention: Duration,
    /// Most ended runs a store that keeps runs keeps (the least recently written go first).
    /// Default the config file's `store.max_finished_runs` (100,000).
    pub max_stored: usize,
    /// Most bytes of frames the ended runs retained in memory may take (the oldest go first;
    /// a store that keeps runs still has them for `retention`). Default 64 MiB: what fits a
    /// small machine next to the live runs (an ended run is kept as its frames' JSON text, and
    /// counts that and about 0.5 KiB more).
    pub max_retained_bytes: usize,
    /// Most bytes of its frames one live E2A or AG-UI run keeps in memory (their JSON text,
    /// and the frames as made when its readers want them). Past it the oldest frames are
    /// forgotten, down to three quarters of it: a reader that fell behind them ends its stream,
    /// and a `Last-Event-ID` before them is answered `404` naming the oldest sequence still
    /// held. Default 16 MiB (a token stream of 2,000 chunks takes about 0.3 MiB).
    pub max_run_bytes: usize,
    /// What happens to an E2A or AG-UI run whose every client went away (`server.on_disconnect`,
    /// an agent's own `on_disconnect`): `Detach` (default) keeps it running to its end,
    /// readable again from its id; `Cancel` cancels it after `disconnect_grace`.
    pub on_disconnect: e2a::types::OnDisconnect,
    /// With `on_disconnect = Cancel`: how long a run whose every client went away keeps
    /// running, waiting for a resume, before it is cancelled.
    pub disconnect_grace: Duration,
    /// On shutdown, how long open streams may run before they are cut off with a final frame.
    pub drain_timeout: Duration,
    /// Accepted bearer tokens.
    pub auth: Auth,
    /// How long a gateway's lease on a running task or run lasts in a store several gateways
    /// share (renewed every third of it while the run goes on): after an instance dies, its
    /// A2A tasks read `FAILED` and its E2A runs end with an error frame on the others once
    /// this has passed.
    pub lease: Duration,
    /// How the server treats connections: header-read timeout, connection cap.
    pub server: ServerLimits,
    /// Where every response frame is logged (E2A §12.7 lines), if anywhere.
    pub frame_log: Option<crate::frame_log::FrameLog>,
    /// What a failed run's final error tells callers (default `Detail`: the agent's own text;
    /// `Safe`: its kind's fixed message, the detail in the log). `e2a serve` makes `auto` of
    /// its config `Safe` off loopback.
    pub errors: e2a::types::ErrorExposure,
}

/// How long a store keeps ended runs and how many at most, as `store` says
/// (`run_retention_hours`, `max_finished_runs`).
pub(crate) fn stored_runs(store: &e2a::types::StoreSettings) -> (Duration, usize) {
    (
        Duration::from_secs(store.run_retention_hours.saturating_mul(3600)),
        usize::try_from(store.max_finished_runs).unwrap_or(usize::MAX),
    )
}

/// `n` KiB (a config file's `*_kib` key; never negative, the schema says so) in bytes.
pub(crate) fn kib(n: i64) -> usize {
    usize::try_from(n.unsigned_abs())
        .unwrap_or(usize::MAX)
        .saturating_mul(1024)
}

impl Default for GatewayConfig {
    fn default() -> Self {
        // the config file's defaults (`store.run_retention_hours`, `store.max_finished_runs`)
        let (stored_retention, max_stored) = stored_runs(&e2a::types::StoreSettings::default());
        GatewayConfig {
            limits: Limits {
                max_bytes: 4 << 20,
                max_depth: 64,
                max_string_bytes: 2 << 20,
                // a parsed value is held several times over on its way through a run (the
                // request, the typed message, the task's history, the answer): at most 100,000
                // values keep a 4 MiB request's peak under 20x its size
                max_values: 100_000,
            },
            max_streams: 1024,
            retry_after_secs: 1,
            keep_alive: Duration::from_secs(15),
            deadlines: Deadlines::default(),
            max_run: Some(Duration::from_secs(600)),
            retention: Duration::from_secs(300),
            max_retained: 1024,
            stored_retention,
            max_stored,
            max_retained_bytes: 64 << 20,
            // the config file's default (`server.max_run_kib`, schema/config.json)
            max_run_bytes: kib(e2a::types::ServerSettings::default().max_run_kib),
            // the config file's default (`server.on_disconnect`, schema/config.json)
            on_disconnect: e2a::types::ServerSettings::default().on_disconnect,
            disconnect_grace: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(10),
            auth: Auth::none(),
            lease: Duration::from_secs(30),
            server: ServerLimits::default(),
            frame_log: None,
            errors: e2a::types::ErrorExposure::Detail,
        }
    }
}

impl GatewayConfig {
    /// How long a run whose every client went away waits for one to come back before it is
    /// cancelled; `None`: it is detached (runs on to its end).
    pub(crate) fn cancel_after(&self) -> Option<Duration> {
        match self.on_disconnect {
            e2a::types::OnDisconnect::Cancel => Some(self.disconnect_grace),
            e2a::types::OnDisconnect::Detach => None,
        }
    }

    /// What a request body may be (the input limits, the body read timeout).
    pub(crate) fn body(&self) -> crate::web::body::BodyLimits {
        crate::web::body::BodyLimits {
            limits: self.limits,
            timeout: self.server.body_read_timeout,
        }
    }
}

/// How long a run may take and how long it may stay silent.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// Longest time between two frames of the agent (`None`: no idle deadline).
    pub idle: Option<Duration>,
    /// How long the gateway waits, after a final frame, for the agent's stream to end before
    /// it forwards the final frame and drops the stream (a frame in that time is a second
    /// final or a frame after the final one, and cuts the agent off).
    pub final_grace: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            idle: Some(Duration::from_secs(120)),
            final_grace: Duration::from_millis(200),
        }
    }
}
