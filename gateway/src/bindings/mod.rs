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
//! | the inspector page | `GET /ui` (HTML, JSON, SSE) | [`inspector`] |

pub mod a2a;
pub mod acp;
pub mod agui;
pub mod e2a_http;
pub mod inspector;

use axum::Router;
use e2a::types::RouteTemplates;

use crate::web::edge::Edge;

/// Where a binding serves its agent: the gateway's root routes, or a named agent's (the route
/// templates with `{name}` replaced).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    /// The gateway's own agent, at the root routes.
    Root,
    /// The named agent `name`, at `routes`.
    Named {
        /// Its name.
        name: &'a str,
        /// The route templates.
        routes: &'a RouteTemplates,
    },
}

impl Place<'_> {
    /// `template` with `{name}` replaced (the root's is empty).
    pub(crate) fn at(&self, template: &str) -> String {
        match self {
            Place::Root => String::new(),
            Place::Named { name, .. } => template.replace("{name}", name),
        }
    }
}

/// A binding a gateway serves, as a value: the gateway mounts each binding's routes at each
/// place it serves an agent, and says where they are (the banner of `e2a serve`) from the same
/// value, so what is printed is what is routed.
pub(crate) trait Binding: Send + Sync {
    /// Its name: the `binding` label of the metrics.
    fn name(&self) -> &'static str;

    /// Its routes for the agent at `place` (authentication included), each under `edge` (the
    /// gateway's, counting this binding's requests at `place`) refined as the routes need:
    /// one layer per request ([`crate::web::edge`]).
    fn routes(&self, place: Place<'_>, edge: &Edge) -> Router;

    /// Where a client reaches it at `place` behind `base` (the gateway's URL): one line per
    /// endpoint, `METHOD URL  what`.
    fn endpoints(&self, place: Place<'_>, base: &str) -> Vec<String>;
}
