//! A2A 1.0 on the gateway: the agent card, the JSON-RPC binding (`POST /a2a`), the HTTP+JSON
//! binding (`POST /message:send`, `GET /tasks/{id}`, …), tasks kept in a [`crate::store::TaskLog`]
//! (in memory or embedded SQLite) with an event log that subscribers replay from, and a
//! remote A2A agent as a backend ([`crate::backends::A2aRemoteAgent`]).
//!
//! Every request goes A2A → E2A (`e2a::a2a::jsonrpc::envelope_from_request`) → agent → E2A
//! frames (checked at the boundary) → A2A (`e2a::a2a::stream::A2aStreamProjector`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use e2a_gateway::{bindings::a2a::A2aConfig, store::SqliteStore, backends::EchoAgent, Gateway, GatewayConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(SqliteStore::open("tasks.db".as_ref())?);
//! let gateway = Gateway::new(EchoAgent::new(), GatewayConfig::default())
//!     .with_a2a(A2aConfig::default(), store);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! gateway.serve(listener, e2a_gateway::shutdown_signal()).await?;
//! # Ok(()) }
//! ```

mod callbacks;
pub mod card;
pub(crate) mod error_form;
mod grpc;
mod jsonrpc;
mod rest;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use e2a::a2a::jsonrpc::A2aHeaders;

pub use card::{A2aConfig, CardInfo};

use crate::tasks::error::{A2aError, A2aErrorKind};
use crate::tasks::TaskService;
use crate::web::edge::Edge;
use error_form::{A2aForm, Wire};

use crate::tasks::EventStream;
use crate::web::body::BodyError;
use crate::web::last_event_id::NotASequence;
use crate::web::sse;

/// The routes of the A2A bindings and the card (no fallback: merge them into the gateway's).
///
/// The card is at `/.well-known/agent-card.json` and, when the HTTP+JSON routes have a prefix
/// (`/a2a/agents/writer`, as GoAI mounts agents), under that prefix too.
///
/// A named agent's routes (`root_card` false) have no card at the root: its card is under its
/// prefix only.
pub(crate) fn router(state: Arc<TaskService>, root_card: bool, edge: &Edge) -> Router {
    let auth = &state.pipeline().config.auth;
    let rest = form(edge, &state, Wire::Rest)
        .authenticated(auth)
        .around(rest::routes(&state.mount().config().rest_path));
    // the JSON-RPC endpoint answers with and without a trailing slash (clients join URLs both ways)
    let mut rpc = Router::new();
    for path in path_forms(&state.mount().config().jsonrpc_path) {
        rpc = rpc.route(&path, axum::routing::post(jsonrpc::handle));
    }
    let rpc = form(edge, &state, Wire::JsonRpc).authenticated(auth).around(rpc);
    let mut router = Router::new();
    if root_card {
        router = router.route(card::CARD_PATH, get(agent_card));
    }
    let prefix = state.mount().config().rest_path.trim_end_matches('/');
    if !prefix.is_empty() {
        router = router.route(&format!("{prefix}{}", card::CARD_PATH), get(agent_card));
    }
    // the cards are public (no extensions to activate: `A2aForm` with none declared)
    let cards = edge.in_form(A2aForm::new(Wire::Rest, Vec::new()));
    let mut router = cards.around(router).merge(rest).merge(rpc);
    // delegated tasks' callbacks: each authenticated by its task's token, not by a caller
    if state.mount().config().callbacks.is_some() {
        let routes = callbacks::routes(&state.mount().config().rest_path);
        router = router.merge(form(edge, &state, Wire::Rest).around(routes));
    }
    let router = router.with_state(state.clone());
    // gRPC's routes are fixed (`/lf.a2a.v1.A2AService/…`): the root agent's; a named agent is
    // reached over gRPC by its `tenant`
    if root_card && state.mount().config().grpc {
        router.merge(grpc::router(state, edge))
    } else {
        router
    }
}

/// The A2A bindings (card, JSON-RPC, HTTP+JSON, gRPC) of a gateway's agent.
pub(crate) struct A2aBinding(pub(crate) Arc<TaskService>);

impl crate::bindings::Binding for A2aBinding {
    fn name(&self) -> &'static str {
        crate::pipeline::Via::A2a.name()
    }

    fn routes(&self, place: crate::bindings::Place<'_>, edge: &Edge) -> Router {
        router(self.0.clone(), matches!(place, crate::bindings::Place::Root), edge)
    }

    fn endpoints(&self, place: crate::bindings::Place<'_>, base: &str) -> Vec<String> {
        let config = &self.0.mount().config();
        let rest = config.rest_path.trim_end_matches('/');
        let mut out = vec![
            format!("GET  {base}{rest}{}  A2A card", card::CARD_PATH),
            format!("POST {base}{}  A2A JSON-RPC (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask)", config.jsonrpc_path),
            format!("POST {base}{rest}/message:send | /message:stream, GET {base}{rest}/tasks[/ID], POST {base}{rest}/tasks/ID:cancel | :subscribe  A2A HTTP+JSON"),
        ];
        if config.callbacks.is_some() {
            out.push(format!(
                "POST {base}{rest}/callbacks/tasks/ID  the callbacks of its delegated tasks (by task token)"
            ));
        }
        // (a named agent is reached over the root agent's gRPC service by its `tenant`)
        if matches!(place, crate::bindings::Place::Root) && config.grpc {
            let host = base.split_once("://").map_or(base, |(_, h)| h);
            out.push(format!(
                "gRPC {host}  A2A lf.a2a.v1.A2AService (HTTP/2 on the same port; named agents by tenant)"
            ));
        }
        out
    }
}

/// The HTTP+JSON routes of a named agent under `prefix` alone (A2A 1.0's `/{tenant}/…`
/// form: `/writer/message:send`) under `edge`, authentication included.
pub(crate) fn tenant_router(state: Arc<TaskService>, prefix: &str, edge: &Edge) -> Router {
    let auth = &state.pipeline().config.auth;
    form(edge, &state, Wire::Rest)
        .authenticated(auth)
        .around(rest::routes(prefix))
        .with_state(state)
}

/// `edge` in the A2A form of `wire`, naming the extensions `state`'s card declares.
fn form(edge: &Edge, state: &TaskService, wire: Wire) -> Edge<A2aForm> {
    let declared = state
        .mount()
        .config()
        .card
        .extensions
        .iter()
        .map(|e| e.uri.to_string())
        .collect();
    edge.in_form(A2aForm::new(wire, declared))
}

/// `path` and its other form: without the trailing slash if it has one, else with one (`/`
/// alone has one form).
pub(super) fn path_forms(path: &str) -> Vec<String> {
    let bare = path.trim_end_matches('/');
    match bare.is_empty() {
        true => vec!["/".into()],
        false => vec![bare.to_string(), format!("{bare}/")],
    }
}

impl From<BodyError> for A2aError {
    fn from(e: BodyError) -> Self {
        match e {
            BodyError::MediaType => A2aError::new(
                A2aErrorKind::ContentTypeNotSupported,
                "the request body must be application/json or application/a2a+json",
            ),
            BodyError::Input(e @ e2a::Error::Json { .. }) => A2aError::new(A2aErrorKind::JsonParse, e.to_string()),
            // too large: `413` on HTTP+JSON (a JSON-RPC error is answered with `200`)
            BodyError::Input(
                e @ e2a::Error::Limit {
                    limit: e2a::LimitKind::MessageBytes | e2a::LimitKind::StringBytes | e2a::LimitKind::Values,
                    ..
                },
            ) => A2aError::new(A2aErrorKind::InvalidRequest, e.to_string()).with_status(StatusCode::PAYLOAD_TOO_LARGE),
            BodyError::Input(e) => A2aError::new(A2aErrorKind::InvalidRequest, e.to_string()),
            BodyError::Timeout(t) => A2aError::new(
                A2aErrorKind::InvalidRequest,
                format!("the request body did not arrive within {} s", t.as_secs()),
            ),
        }
    }
}

impl From<NotASequence> for A2aError {
    fn from(_: NotASequence) -> Self {
        A2aError::invalid_params(NotASequence::MESSAGE)
    }
}

/// The `A2A-Version` header's name.
const A2A_VERSION: axum::http::HeaderName = axum::http::HeaderName::from_static("a2a-version");

/// The A2A versions served.
const VERSIONS: &[&str] = &["1.0", "0.3"];

/// Reads `A2A-Version` (header, else the `A2A-Version` query parameter): absent or empty is
/// 0.3; 1.0 and 0.3 are served; anything else is `VersionNotSupported`.
pub(crate) fn a2a_headers(headers: &HeaderMap, query: Option<&str>) -> Result<A2aHeaders, A2aError> {
    let from_query = query.and_then(|q| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.eq_ignore_ascii_case("A2A-Version").then(|| v.to_string())
        })
    });
    let header = match headers.get(&A2A_VERSION) {
        None => None,
        Some(v) => Some(v.to_str().map(|v| v.trim().to_string()).map_err(|_| {
            A2aError::new(
                A2aErrorKind::VersionNotSupported,
                format!(
                    "A2A-Version is not a version this gateway serves ({})",
                    VERSIONS.join(", ")
                ),
            )
        })?),
    };
    let version = header.or(from_query).filter(|v| !v.is_empty());
    if let Some(v) = &version {
        // its major and minor version (`1` is `1.0`; a patch version is ignored)
        let mut parts = v.split('.');
        let (major, minor) = (parts.next().unwrap_or(""), parts.next().unwrap_or("0"));
        let served = VERSIONS.iter().any(|s| s.split_once('.') == Some((major, minor)));
        if !served {
            return Err(A2aError::new(
                A2aErrorKind::VersionNotSupported,
                format!("A2A-Version {v} is not supported (supported: {})", VERSIONS.join(", ")),
            ));
        }
    }
    let extensions = headers
        .get_all("a2a-extensions")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Ok(A2aHeaders { version, extensions })
}

/// The A2A headers of a request to `state`'s agent ([`a2a_headers`]), refused with
/// `ExtensionSupportRequiredError` when it does not activate an extension the card says is
/// required. A send's `message.extensions` (in `params`) activate extensions too, as GoAI's
/// delegating gateways do.
pub(crate) fn request_headers(
    state: &TaskService,
    headers: &HeaderMap,
    query: Option<&str>,
    params: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Result<A2aHeaders, A2aError> {
    let mut a2a = a2a_headers(headers, query)?;
    let in_message = params
        .and_then(|p| e2a::read::member(p, "message"))
        .and_then(serde_json::Value::as_object)
        .and_then(|m| e2a::read::member(m, "extensions"))
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str);
    for uri in in_message {
        if !a2a.extensions.iter().any(|x| x == uri) {
            a2a.extensions.push(uri.to_string());
        }
    }
    let missing: Vec<&str> = state
        .mount()
        .config()
        .card
        .extensions
        .iter()
        .filter(|e| e.required && !a2a.extensions.iter().any(|x| x == e.uri.as_str()))
        .map(|e| e.uri.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(A2aError::new(
            A2aErrorKind::ExtensionSupportRequired,
            format!(
                "this agent requires the extension(s) {}: activate them with the A2A-Extensions header (or a send's message.extensions)",
                missing.join(", ")
            ),
        ));
    }
    Ok(a2a)
}

/// The card of `state`'s agent for clients at `base` ([`card::build_card`]); a named agent's
/// names the root agent's gRPC service with its `tenant` when the root serves gRPC.
fn card_of(state: &TaskService, base: &str, secured: bool, extended: bool) -> e2a::types::A2aAgentCard {
    let mut c = card::build_card(state.mount().config(), base, secured, extended);
    if let Some(tenant) = state.mount().grpc_tenant() {
        card::add_grpc(&mut c, base, Some(tenant));
    }
    c
}

/// The base URL clients reach this gateway at.
fn base_url(state: &TaskService, headers: &HeaderMap) -> String {
    if let Some(p) = &state.mount().config().public_url {
        return p.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

fn card_response(body: String, max_age: u64, modified: &str, headers: &HeaderMap) -> Response {
    let tag = card::etag(&body);
    let cache = format!("public, max-age={max_age}");
    let matched = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    let mut resp = if matched {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&cache) {
        h.insert(header::CACHE_CONTROL, v);
    }
    if let Ok(v) = HeaderValue::from_str(modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Host"));
    resp
}

/// The body of the named agents' listing.
#[derive(serde::Serialize)]
struct Listing {
    agents: Vec<e2a::types::A2aAgentCard>,
}

/// `GET path`: the cards of the named agents `agents` (`{"agents": [card, …]}`), public like
/// each card.
pub(crate) fn listing_router(path: &str, agents: Vec<Arc<TaskService>>) -> Router {
    let agents = Arc::new(agents);
    let mut router = Router::new();
    for p in path_forms(path) {
        let agents = agents.clone();
        router = router.route(
            &p,
            get(move |headers: HeaderMap| async move {
                let agents = agents
                    .iter()
                    .map(|state| {
                        let base = base_url(state, &headers);
                        card_of(state, &base, state.pipeline().config.auth.is_enabled(), false)
                    })
                    .collect();
                axum::Json(Listing { agents })
            }),
        );
    }
    Edge::default()
        .in_form(A2aForm::new(Wire::Rest, Vec::new()))
        .around(router)
}

async fn agent_card(State(state): State<Arc<TaskService>>, headers: HeaderMap) -> Response {
    let base = base_url(&state, &headers);
    let secured = state.pipeline().config.auth.is_enabled();
    let card = card_of(&state, &base, secured, false);
    card_response(
        serde_json::to_string(&card).unwrap_or_default(),
        state.mount().config().card_max_age,
        state.mount().card_modified(),
        &headers,
    )
}

/// `GetExtendedAgentCard`: the card with the extended skills, for authenticated callers. A
/// gateway without authentication does not offer it (`capabilities.extendedAgentCard` is
/// false), so the operation is unsupported there (A2A 1.0 §3.3.4).
pub(crate) fn extended_card(state: &TaskService, headers: &HeaderMap) -> Result<serde_json::Value, A2aError> {
    if !state.pipeline().config.auth.is_enabled() {
        return Err(A2aError::new(
            A2aErrorKind::UnsupportedOperation,
            "this gateway has no extended agent card (capabilities.extendedAgentCard is false)",
        ));
    }
    let base = base_url(state, headers);
    serde_json::to_value(card_of(state, &base, true, true))
        .map_err(|e| A2aError::new(A2aErrorKind::Internal, format!("the card: {e}")))
}

/// An SSE response: each event `id: <seq>`, `data: <wrap(Ok(event JSON))>`, keep-alive
/// comments; an error ends the stream with `data: <wrap(Err(error))>` (the binding's error
/// form). The events' JSON is written as the store keeps it, not parsed again.
pub(crate) fn sse<F>(events: EventStream, keep_alive: Duration, wrap: F) -> Response
where
    F: Fn(Result<&str, A2aError>, &mut String) + Send + 'static,
{
    let chunks = async_stream::stream! {
        let mut events = events;
        while let Some(e) = futures_util::StreamExt::next(&mut events).await {
            match e {
                Ok(e) => {
                    let id = (e.seq > 0).then_some(e.seq);
                    yield sse::event_with(id, e.event.len() + 64, |out| wrap(Ok(&e.event), out));
                }
                Err(e) => {
                    yield sse::event_with(None, 256, |out| wrap(Err(e), out));
                    break;
                }
            }
        }
    };
    sse::response(chunks, keep_alive)
}

/// A send's answer carrying a task (`{"task": …}`): its JSON as the gateway wrote it, copied
/// in, not parsed again.
pub(crate) fn sent_task(task: &str) -> String {
    let mut out = String::with_capacity(task.len() + 9);
    push_sent_task(&mut out, task);
    out
}

/// [`sent_task`], appended to `out`.
pub(crate) fn push_sent_task(out: &mut String, task: &str) {
    out.push_str(r#"{"task":"#);
    out.push_str(task);
    out.push('}');
}

/// `v` as JSON text.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, A2aError> {
    serde_json::to_string(v).map_err(|e| A2aError::internal(format!("cannot write the answer: {e}")))
}

/// ProtoJSON readers accept the proto field names too: `message_id` → `messageId`, … (keys
/// inside `metadata` and `data` values are the caller's and stay as they are).
pub(crate) fn camelize(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            let keys: Vec<String> = m.keys().filter(|k| k.contains('_')).cloned().collect();
            for k in keys {
                let camel = to_camel(&k);
                if camel != k && !m.contains_key(&camel) {
                    if let Some(x) = m.remove(&k) {
                        m.insert(camel, x);
                    }
                }
            }
            for (k, x) in m.iter_mut() {
                if k != "metadata" && k != "data" {
                    camelize(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(camelize),
        _ => {}
    }
}

/// `page_size` → `pageSize` (other keys unchanged).
pub(crate) fn to_camel_key(k: &str) -> String {
    to_camel(k)
}

fn to_camel(k: &str) -> String {
    if !k
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return k.to_string();
    }
    let mut out = String::with_capacity(k.len());
    let mut upper = false;
    for c in k.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version is served by its major and minor numbers (`1` is `1.0`, a patch is ignored).
    #[test]
    fn versions_are_served_by_major_and_minor() {
        let served = |v: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(&A2A_VERSION, v.parse().expect("a header value"));
            a2a_headers(&headers, None).is_ok()
        };
        for v in ["1.0", "1", "1.0.3", "0.3", "0.3.0", " 1.0 "] {
            assert!(served(v), "{v}");
        }
        for v in ["9.9", "1.", ".0", "1.1", "0", "0.30", "1.0x"] {
            assert!(!served(v), "{v}");
        }
        // none at all: 0.3
        assert!(a2a_headers(&HeaderMap::new(), None).is_ok());
    }
}
