//! HTTP plumbing written once for every binding: authentication ([`auth`]), problem
//! documents ([`problem`]), the JSON body reader (one media-type rule, the input limits),
//! SSE and streamed responses, and `Last-Event-ID`.

pub mod auth;
pub(crate) mod body;
pub(crate) mod last_event_id;
pub mod problem;
pub(crate) mod sse;
