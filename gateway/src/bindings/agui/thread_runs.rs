//! `GET /agui/threads/{thread_id}/runs` (and under a named agent's AG-UI path): the caller's
//! runs of one thread, a page at a time, newest first, as `E2ARunPage` — each with its
//! `parent_run_id` (the run it branched from), so a thread's lineage can be walked. AG-UI
//! itself has no such read; it is the run resource's list (`GET /v1/e2a/runs`) for AG-UI runs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::Extension;

use super::Agui;
use crate::agent::Caller;
use crate::bindings::e2a_http::{page_of, page_response};
use crate::runs;
use crate::web::problem::Problem;

/// The path of a thread's runs below an AG-UI endpoint's path.
pub(super) const THREAD_RUNS: &str = "/threads/{thread_id}/runs";

/// `GET …/threads/{thread_id}/runs?page_size=&page_token=`.
pub(super) async fn thread_runs(
    State(agui): State<Arc<Agui>>,
    Extension(caller): Extension<Caller>,
    Path(params): Path<HashMap<String, String>>,
    RawQuery(query): RawQuery,
) -> Result<Response, Problem> {
    super::named_here(&agui, params.get("name").map(String::as_str))?;
    let thread = params.get("thread_id").map(String::as_str).unwrap_or_default();
    let ask = page_of(query.as_deref())?;
    let shared = &agui.pipeline;
    let listed = shared
        .runs
        .list(
            &runs::agui_key(&caller, thread, ""),
            |run| runs::agui_key(&caller, thread, run),
            ask,
        )
        .await
        .map_err(|e| e.problem())?;
    Ok(page_response(shared, listed))
}
