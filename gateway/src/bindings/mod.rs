//! The bindings: thin codecs that put the gateway on a protocol's wire. Each decodes a
//! request into a typed request, hands it to the [run pipeline](crate::pipeline) (or, for
//! A2A, the task service) and encodes what comes back, errors in the
//! protocol's own form. None holds business logic.
//!
//! | binding | wire | module |
//! |---|---|---|
//! | E2A over HTTP | `POST /v1/e2a/requests` (JSON, SSE, NDJSON) | [`e2a_http`] |
//! | A2A 1.0 | card, JSON-RPC, HTTP+JSON, SSE | [`a2a`] |
//! | AG-UI | `POST /agui` (SSE) | [`agui`] |
//! | ACP | JSON-RPC over stdio (`e2a acp`) | [`acp`] |

pub mod a2a;
pub mod acp;
pub mod agui;
pub mod e2a_http;
