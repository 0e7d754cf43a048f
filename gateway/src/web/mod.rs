//! HTTP plumbing written once for every binding: authentication ([`auth`]), trace context
//! ([`trace`]), metrics ([`metrics`]), problem
//! documents ([`problem`]), the JSON body reader (one media-type rule, the input limits),
//! SSE and streamed responses, `Last-Event-ID`, and the server loop ([`server`]: TCP_NODELAY,
//! header-read timeout, connection cap, shutdown with a deadline).

pub mod auth;
pub(crate) mod body;
pub(crate) mod last_event_id;
pub mod metrics;
pub mod problem;
pub mod server;
pub(crate) mod sse;
pub mod trace;
