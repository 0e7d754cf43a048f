//! The inspector page, `GET /ui`: the live and recent runs of every binding (caller, agent,
//! binding, status, timing, trace id), a run's frames as they arrive, the pauses waiting for an
//! answer and who may give it, per-agent counts — from what the run pipeline records of every
//! run (`web::activity`).
//!
//! | route | what | credential |
//! |---|---|---|
//! | `GET /ui`, `/ui/app.js`, `/ui/style.css` | the page: static, compiled in, no data | none |
//! | `GET /ui/api/activity` | the runs the caller may see, the pending pauses, the counts (JSON) | any valid one |
//! | `GET /ui/api/runs/{id}/frames` | what the gateway keeps of a run (its frames, an A2A task's events), then its new frames to its end (SSE) | any valid one |
//!
//! A caller sees its own runs; operators (no authentication, the gateway's own bearer tokens,
//! `[ui] operators`) see every caller's.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::agent::Caller;
use crate::web::activity::{Activity, Kept};
use crate::web::auth::Auth;
use crate::web::problem::Problem;
use crate::web::sse;

/// Where the page is served.
pub const UI_PATH: &str = "/ui";

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("app.js");
const STYLE: &str = include_str!("style.css");

/// The page's own resources only: no inline script, nothing from elsewhere.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/// What the page's routes share.
#[derive(Clone)]
struct Inspector {
    activity: Arc<Activity>,
    auth: Auth,
    operators: Arc<[String]>,
}

impl Inspector {
    /// The caller of `request` and what it may see (`Err`: its refusal).
    async fn viewer(&self, request: Request) -> Result<Viewer, Problem> {
        let (caller, _) = self.auth.check_request(request).await?;
        let operator = !self.auth.is_enabled()
            || (caller.name.is_none() && caller.kind.is_none())
            || caller.subject.as_ref().is_some_and(|s| self.operators.contains(s));
        Ok(Viewer { caller, operator })
    }
}

/// Who looks at the page.
struct Viewer {
    caller: Caller,
    operator: bool,
}

impl Viewer {
    /// Whether it may see a run of `caller`.
    fn sees(&self, caller: Option<&str>) -> bool {
        self.operator || caller == self.caller.subject.as_deref()
    }
}

/// The page's routes, reading `activity`, behind `auth`; `operators` see every caller's runs.
pub(crate) fn router(activity: Arc<Activity>, auth: Auth, operators: Arc<[String]>) -> Router {
    let state = Inspector {
        activity,
        auth: auth.any_caller(),
        operators,
    };
    let asset = |body: &'static str, kind: &'static str| {
        get(move || async move {
            let headers = [
                (header::CONTENT_TYPE, kind),
                (header::CONTENT_SECURITY_POLICY, CSP),
                (header::CACHE_CONTROL, "no-cache"),
            ];
            (headers, body)
        })
    };
    Router::new()
        .route(UI_PATH, asset(PAGE, "text/html; charset=utf-8"))
        .route(
            &format!("{UI_PATH}/app.js"),
            asset(SCRIPT, "text/javascript; charset=utf-8"),
        )
        .route(&format!("{UI_PATH}/style.css"), asset(STYLE, "text/css; charset=utf-8"))
        .route(&format!("{UI_PATH}/api/activity"), get(activity_json))
        .route(&format!("{UI_PATH}/api/runs/{{id}}/frames"), get(frames))
        .with_state(state)
}

/// `GET /ui/api/activity`.
async fn activity_json(State(ui): State<Inspector>, request: Request) -> Response {
    let viewer = match ui.viewer(request).await {
        Ok(v) => v,
        Err(p) => return p.into_response(),
    };
    let (runs, agents) = ui.activity.snapshot(|c| viewer.sees(c));
    let pauses: Vec<_> = runs
        .iter()
        .filter(|r| r.pause.is_some() && r.answered_by.is_none())
        .cloned()
        .collect();
    let body = serde_json::json!({
        "viewer": {"caller": viewer.caller.subject, "operator": viewer.operator},
        "now_ms": e2a::timestamp::now_ms(),
        "runs": runs,
        "pauses": pauses,
        // the counts of every agent are the operators'; a caller sees its own runs only
        "agents": if viewer.operator { serde_json::to_value(agents).unwrap_or_default() } else { serde_json::Value::Null },
    });
    ([(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// How often a watch looks whether its run has ended while no frame comes.
const WATCH_TICK: Duration = Duration::from_millis(250);

/// `GET /ui/api/runs/{id}/frames`: SSE, `event: frame` per frame (those the gateway keeps of
/// the run first, then each new one; a frame may come twice, once from each: its `sequence`
/// tells) — for an A2A turn, first `event: a2a` per event its task's log keeps (`{"seq",
/// "event"}`) —, then `event: end` once the run has ended.
async fn frames(State(ui): State<Inspector>, Path(id): Path<String>, request: Request) -> Response {
    let viewer = match ui.viewer(request).await {
        Ok(v) => v,
        Err(p) => return p.into_response(),
    };
    // an id that is no number names no run either
    let found = id.parse().ok().and_then(|id| ui.activity.find(id, |c| viewer.sees(c)));
    let Some(run) = found else {
        return Problem::new(
            e2a::taxonomy::ErrorKind::NotFound,
            format!("no run {id:?} on this page"),
        )
        .into_response();
    };
    let events = async_stream::stream! {
        // subscribed before the kept frames are read: none falls between
        let mut live = run.watch();
        match run.kept().await {
            Kept::Frames(frames) => {
                for f in frames {
                    yield sse::named("frame", &f);
                }
            }
            Kept::A2aEvents(events) => {
                for (seq, e) in events {
                    yield sse::named("a2a", &format!(r#"{{"seq":{seq},"event":{e}}}"#));
                }
            }
        }
        loop {
            if run.ended() {
                while let Ok(f) = live.try_recv() {
                    yield sse::named("frame", &f);
                }
                break;
            }
            match tokio::time::timeout(WATCH_TICK, live.recv()).await {
                Ok(Ok(f)) => yield sse::named("frame", &f),
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => break,
                // fallen behind (frames missed), or nothing yet
                Ok(Err(_)) | Err(_) => {}
            }
        }
        yield sse::named("end", &serde_json::to_string(&run.summary()).unwrap_or_default());
    };
    sse::response(events, KEEP_ALIVE)
}

/// How long the frames stream of a quiet run goes without a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
