//! E2A over HTTP, as `generated/openapi.json` describes it: `POST /v1/e2a/requests` answered
//! as JSON (the final frame), SSE or NDJSON by `Accept`; `GET /v1/e2a/schema`; `GET /healthz`.
//! [`ROUTES`] lists what is served; a test checks it against the OpenAPI document.

mod answer;
mod requests;
mod runs;

pub(crate) use runs::{page_of, page_response};

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use e2a::taxonomy::ErrorKind;
use serde_json::json;

use crate::agent::Agent;
use crate::pipeline::Pipeline;
use crate::web::edge::Edge;
use crate::web::problem::Problem;
pub use answer::{negotiate, Mode, JSON, NDJSON, SSE};

/// Path of the request operation.
pub use crate::protocol::REQUESTS_PATH;
/// Path of the run resource's collection.
pub use crate::protocol::RUNS_PATH;
/// Path of the schema operation.
pub const SCHEMA_PATH: &str = "/v1/e2a/schema";
/// Path of the health check.
pub const HEALTH_PATH: &str = "/healthz";

/// The schema's media type.
pub const SCHEMA_JSON: &str = "application/schema+json";

/// One served operation: what a test compares with the OpenAPI document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// Path.
    pub path: &'static str,
    /// Method (upper case).
    pub method: &'static str,
    /// Request body media types.
    pub request: &'static [&'static str],
    /// `(status, media types)` of every response.
    pub responses: &'static [(u16, &'static [&'static str])],
}

const PROBLEM: &[&str] = &[crate::web::problem::PROBLEM_JSON];

/// Every operation the router serves.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec {
        path: REQUESTS_PATH,
        method: "POST",
        request: &[JSON],
        responses: &[
            (200, &[JSON, SSE, NDJSON]),
            (400, PROBLEM),
            (401, PROBLEM),
            (404, PROBLEM),
            (406, PROBLEM),
            (408, PROBLEM),
            (409, PROBLEM),
            (413, PROBLEM),
            (415, PROBLEM),
            (422, PROBLEM),
            (503, PROBLEM),
        ],
    },
    RouteSpec {
        path: RUNS_PATH,
        method: "POST",
        request: &[JSON],
        responses: &[
            (200, &[JSON]),
            (202, &[JSON]),
            (400, PROBLEM),
            (401, PROBLEM),
            (408, PROBLEM),
            (409, PROBLEM),
            (413, PROBLEM),
            (415, PROBLEM),
            (422, PROBLEM),
            (503, PROBLEM),
        ],
    },
    RouteSpec {
        path: RUNS_PATH,
        method: "GET",
        request: &[],
        responses: &[(200, &[JSON]), (400, PROBLEM), (401, PROBLEM)],
    },
    RouteSpec {
        path: "/v1/e2a/runs/{id}:replay",
        method: "POST",
        request: &[],
        responses: &[
            (202, &[JSON]),
            (401, PROBLEM),
            (404, PROBLEM),
            (409, PROBLEM),
            (503, PROBLEM),
        ],
    },
    RouteSpec {
        path: "/v1/e2a/runs/{id}",
        method: "GET",
        request: &[],
        responses: &[(200, &[JSON]), (401, PROBLEM), (404, PROBLEM)],
    },
    RouteSpec {
        path: "/v1/e2a/runs/{id}:cancel",
        method: "POST",
        request: &[],
        responses: &[(200, &[JSON]), (401, PROBLEM), (404, PROBLEM), (503, PROBLEM)],
    },
    RouteSpec {
        path: "/v1/e2a/runs/{id}/frames",
        method: "GET",
        request: &[],
        responses: &[
            (200, &[JSON, SSE, NDJSON]),
            (400, PROBLEM),
            (401, PROBLEM),
            (404, PROBLEM),
            (406, PROBLEM),
        ],
    },
    RouteSpec {
        path: SCHEMA_PATH,
        method: "GET",
        request: &[],
        responses: &[(200, &[SCHEMA_JSON]), (401, PROBLEM)],
    },
    RouteSpec {
        path: HEALTH_PATH,
        method: "GET",
        request: &[],
        responses: &[(200, &[JSON])],
    },
];

/// The gateway's routes, authentication included. Merge it into your own axum app.
/// The E2A HTTP binding of a gateway's agent.
pub(crate) struct E2aHttp(pub(crate) Arc<Pipeline>);

impl super::Binding for E2aHttp {
    fn name(&self) -> &'static str {
        crate::pipeline::Via::E2a.name()
    }

    fn routes(&self, place: super::Place<'_>, edge: &Edge) -> Router {
        match place {
            super::Place::Root => router(self.0.clone(), edge),
            super::Place::Named { routes, .. } => {
                Router::new().nest(&place.at(&routes.e2a), router(self.0.clone(), edge))
            }
        }
    }

    fn endpoints(&self, place: super::Place<'_>, base: &str) -> Vec<String> {
        let at = match place {
            super::Place::Root => String::new(),
            super::Place::Named { routes, .. } => place.at(&routes.e2a),
        };
        vec![
            format!("POST {base}{at}{REQUESTS_PATH}  E2A: Accept: application/json | text/event-stream | application/x-ndjson"),
            format!("POST {base}{at}{RUNS_PATH}  E2A run resource: GET …/runs, GET …/runs/ID, GET …/runs/ID/frames, POST …/runs/ID:cancel | :replay"),
            format!("GET  {base}{at}{SCHEMA_PATH}"),
            format!("GET  {base}{at}{HEALTH_PATH}"),
        ]
    }
}

/// The binding's routes under `edge`: the health check public, the rest authenticated, an
/// unknown path under them (a named agent's `/agents/writer/nope`) a `404` problem.
pub(crate) fn router(shared: Arc<Pipeline>, edge: &Edge) -> Router {
    let api = Router::new()
        .route(
            REQUESTS_PATH,
            post(requests::send_request).fallback(method_not_allowed_post),
        )
        .route(SCHEMA_PATH, get(get_schema).fallback(method_not_allowed_get))
        .route(
            RUNS_PATH,
            post(runs::submit)
                .get(runs::list)
                .fallback(|| async { runs::not_allowed("GET, HEAD, POST") }),
        )
        .route(&format!("{RUNS_PATH}/{{segment}}"), any(runs::run))
        .route(
            &format!("{RUNS_PATH}/{{id}}/frames"),
            get(runs::frames).fallback(method_not_allowed_get),
        );
    let health = Router::new().route(HEALTH_PATH, get(health).fallback(method_not_allowed_get));
    Router::new()
        .merge(edge.around(health))
        .merge(edge.authenticated(&shared.config.auth).around(api))
        .merge(edge.around(Router::new().fallback(not_found)))
        .with_state(shared)
}

/// `404` for a route no binding serves.
pub(crate) async fn not_found() -> Problem {
    Problem::new(ErrorKind::NotFound, "no such resource")
}

async fn method_not_allowed_post() -> Problem {
    let mut p =
        Problem::new(ErrorKind::UnsupportedOperation, "method not allowed").with_status(StatusCode::METHOD_NOT_ALLOWED);
    p.allow = Some("POST");
    p
}

async fn method_not_allowed_get() -> Problem {
    let mut p =
        Problem::new(ErrorKind::UnsupportedOperation, "method not allowed").with_status(StatusCode::METHOD_NOT_ALLOWED);
    p.allow = Some("GET, HEAD");
    p
}

async fn health(State(shared): State<Arc<Pipeline>>) -> Response {
    let body = json!({
        "status": if shared.runs.draining() { "draining" } else { "ok" },
        "agent": shared.agent().name(),
        "live_streams": shared.open_streams(),
    });
    ([(header::CONTENT_TYPE, JSON)], body.to_string()).into_response()
}

async fn get_schema() -> Response {
    ([(header::CONTENT_TYPE, SCHEMA_JSON)], e2a::SCHEMA_JSON).into_response()
}
