//! # e2a-gateway — E2A on the wire
//!
//! The [`Agent`] interface, E2A over HTTP exactly as `generated/openapi.json` describes it
//! (`POST /v1/e2a/requests` answered as JSON, SSE or NDJSON; `GET /v1/e2a/schema`;
//! `/healthz`), embedded agents ([`backends::EchoAgent`], [`backends::ScriptAgent`]) and a remote
//! E2A backend ([`backends::E2aRemoteAgent`]). Library first: mount [`Gateway::router`] in your own
//! axum app, or let [`Gateway::serve`] run it; `e2a serve` is a thin shell over this crate.
//!
//! ```no_run
//! use e2a_gateway::{backends::EchoAgent, Gateway, GatewayConfig};
//!
//! # async fn run() -> std::io::Result<()> {
//! let gateway = Gateway::new(EchoAgent::new(), GatewayConfig::default());
//! // mount it into an existing app…
//! let app = axum::Router::new().merge(gateway.router());
//! # let _ = app;
//! // …or serve it until SIGTERM / Ctrl-C, draining open streams
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! gateway.serve(listener, e2a_gateway::shutdown_signal()).await
//! # }
//! ```
//!
//! Every frame an agent yields passes [`pipeline::boundary::guard`]: the stream invariants are checked
//! by `e2a`'s `StreamValidator`, and an agent that breaks them is cut off with an `e2a.error`
//! final frame.

#![deny(missing_docs)]

pub mod agent;
pub mod backends;
pub mod bindings;
pub mod config;
pub mod config_file;
pub mod frame_log;
pub(crate) mod json;
pub(crate) mod maps;
pub(crate) mod packed;
pub mod pipeline;
pub mod protocol;
pub mod reload;
pub(crate) mod runs;
pub mod stop;
pub mod store;
pub(crate) mod tasks;
pub use tasks::push;
pub mod web;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

pub use agent::{Agent, Caller, ConversationKey, FrameStream, RequestContext, SharedFrames};
pub use config::GatewayConfig;
pub use reload::{Reloadable, Swapped};
pub use web::auth::Auth;
pub use web::problem::Problem;

use pipeline::boundary::StopReason;
use pipeline::Pipeline;

/// A gateway: one agent behind the E2A HTTP binding (and A2A and AG-UI when asked), and any
/// number of named agents, each under its own routes ([`Gateway::with_named_agent`]).
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Pipeline>,
    a2a: Option<Arc<tasks::TaskService>>,
    /// The bindings it serves its agent on (E2A always; A2A and AG-UI when asked).
    bindings: Vec<Arc<dyn bindings::Binding>>,
    named: Vec<Named>,
    /// `GET /metrics`: `Some(public)` when served.
    metrics: Option<bool>,
    /// `GET /ui`: the callers shown every caller's runs, when it is served.
    inspector: Option<Arc<[String]>>,
}

/// A named agent: its own gateway, mounted at its routes.
#[derive(Clone)]
struct Named {
    name: String,
    gateway: Gateway,
    routes: e2a::types::RouteTemplates,
}

impl Named {
    /// Where its bindings serve it.
    fn place(&self) -> bindings::Place<'_> {
        bindings::Place::Named {
            name: &self.name,
            routes: &self.routes,
        }
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("agent", &self.shared.agent().name())
            .field("config", &self.shared.config)
            .finish()
    }
}

impl Gateway {
    /// A gateway in front of `agent`.
    pub fn new(agent: impl Agent, config: GatewayConfig) -> Self {
        Self::with_agent(Arc::new(agent), config)
    }

    /// A gateway in front of a shared agent.
    pub fn with_agent(agent: Arc<dyn Agent>, config: GatewayConfig) -> Self {
        let shared = Arc::new(Pipeline::new(agent, config));
        shared.config.auth.limit_signed_bodies(shared.config.limits.max_bytes);
        Gateway {
            bindings: vec![Arc::new(bindings::e2a_http::E2aHttp(shared.clone()))],
            shared,
            a2a: None,
            named: Vec::new(),
            metrics: None,
            inspector: None,
        }
    }

    /// Also serves `agent` as the named agent `name`, at `routes` with `{name}` replaced: its
    /// E2A binding under `routes.e2a`, its A2A card, JSON-RPC and HTTP+JSON bindings under
    /// `routes.a2a` (when `agent` serves A2A: build its [`bindings::a2a::A2aConfig`] with
    /// [`bindings::a2a::A2aConfig::for_named`]), its AG-UI endpoint at `routes.agui` (when
    /// it serves AG-UI). Give `agent` the authentication [`Auth::for_agent`] of `name`, so
    /// that allow-lists apply and its tasks are kept apart. With A2A, the part of `routes.a2a`
    /// before `{name}` lists the named agents' cards (`GET /a2a/agents`).
    pub fn with_named_agent(mut self, name: &str, agent: Gateway, routes: &e2a::types::RouteTemplates) -> Self {
        let metrics = self.shared.metrics.get().metrics().clone();
        agent.shared.metrics.adopt(metrics, name);
        self.named.push(Named {
            name: name.to_string(),
            gateway: agent,
            routes: routes.clone(),
        });
        self
    }

    /// Also serves `GET /metrics` (Prometheus text format): requests by agent, binding,
    /// method and status, their latency, open streams, frames by kind, error frames by code.
    /// It needs a valid credential like the other routes unless `public`.
    pub fn with_metrics(mut self, public: bool) -> Self {
        self.metrics = Some(public);
        self
    }

    /// Also serves the inspector page, `GET /ui` ([`bindings::inspector`]): the live and
    /// recent runs of every binding of this gateway and its named agents (at most `recent`
    /// remembered), their frames as they arrive, pending pauses, per-agent counts. Its data
    /// needs a valid credential like the other routes; a caller sees its own runs, `operators`
    /// (and the gateway's own bearer tokens, and everyone on a gateway without
    /// authentication) every caller's.
    pub fn with_inspector(mut self, operators: Vec<String>, recent: usize) -> Self {
        self.shared.metrics.get().metrics().activity.enable(recent);
        self.inspector = Some(operators.into());
        self
    }

    /// The authentication of the routes (shared with the named agents': reloading it with
    /// [`Auth::reload_from`] changes the callers of every route).
    pub fn auth(&self) -> &Auth {
        &self.shared.config.auth
    }

    /// The names of the named agents.
    pub fn agent_names(&self) -> Vec<&str> {
        self.named.iter().map(|n| n.name.as_str()).collect()
    }

    /// Keeps the frames of E2A and AG-UI runs in `store` too, when it keeps runs (SQLite,
    /// PostgreSQL; see [`store::Stores::runs`]): a `Last-Event-ID` resume then works
    /// after a restart, and on any gateway sharing the store. [`Gateway::with_a2a`] does this
    /// with its task store; the first store given is kept.
    pub fn with_store(self, stores: impl Into<store::Stores>) -> Self {
        let stores = stores.into().metered(&self.shared.metrics);
        self.keep_in(&stores);
        self
    }

    /// Keeps runs, pauses and the nonces of signed requests in `stores`, as far as it keeps them.
    fn keep_in(&self, stores: &store::Stores) {
        self.shared.runs.keep_in(stores);
        if let Some(nonces) = &stores.nonces {
            self.shared.config.auth.keep_nonces_in(nonces.clone());
        }
    }

    /// Also serves A2A 1.0 (agent card, JSON-RPC and HTTP+JSON bindings) in front of the same
    /// agent, with tasks kept in `store` (which keeps the E2A and AG-UI runs too, see
    /// [`Gateway::with_store`]). See [`bindings::a2a`].
    pub fn with_a2a(mut self, config: bindings::a2a::A2aConfig, stores: impl Into<store::Stores>) -> Self {
        let stores = stores.into().metered(&self.shared.metrics);
        self.keep_in(&stores);
        let state = Arc::new(tasks::TaskService::new(self.shared.clone(), config, stores));
        self.bindings.push(Arc::new(bindings::a2a::A2aBinding(state.clone())));
        self.a2a = Some(state);
        self
    }

    /// Also serves AG-UI over SSE (`POST /agui`, `POST /agents/{name}/agui`) in front of the
    /// same agent. See [`bindings::agui`].
    pub fn with_agui(mut self) -> Self {
        if !self.bindings.iter().any(|b| b.name() == "agui") {
            self.bindings
                .push(Arc::new(bindings::agui::AguiBinding(self.shared.clone())));
        }
        self
    }

    /// The AG-UI routes alone (authentication included), to merge into another axum app.
    pub fn agui_router(&self) -> axum::Router {
        bindings::agui::router(self.shared.clone(), &web::edge::Edge::default())
    }

    /// The routes (authentication included), to serve or to merge into another axum app.
    pub fn router(&self) -> axum::Router {
        use web::edge::Edge;
        use web::metrics::{Count, ROOT_LABEL};
        // the A2A services' background work (retention, push delivery, leases) starts with
        // the routes that serve them, not in a builder (once, however often this is called)
        for g in gateways(self) {
            if let Some(a2a) = &g.a2a {
                a2a.start();
            }
        }
        let metrics = self.shared.metrics.get().metrics().clone();
        let mut router = axum::Router::new();
        for b in &self.bindings {
            let edge = Edge::counted(Count::new(metrics.clone(), ROOT_LABEL, b.name()));
            router = router.merge(b.routes(bindings::Place::Root, &edge));
        }
        let mut listings: std::collections::BTreeMap<String, Vec<Arc<tasks::TaskService>>> = Default::default();
        for n in &self.named {
            for b in &n.gateway.bindings {
                let edge = Edge::counted(Count::new(metrics.clone(), &n.name, b.name()));
                router = router.merge(b.routes(n.place(), &edge));
            }
            if let (Some(a2a), Some((list, _))) = (&n.gateway.a2a, n.routes.a2a.split_once("/{name}")) {
                listings.entry(list.to_string()).or_default().push(a2a.clone());
            }
        }
        router = tenant_routes(self, router, &metrics);
        for (path, agents) in listings {
            if !path.is_empty() {
                router = router.merge(bindings::a2a::listing_router(&path, agents));
            }
        }
        if let Some(operators) = &self.inspector {
            let activity = metrics.activity.clone();
            let auth = self.shared.config.auth.clone();
            router = router.merge(bindings::inspector::router(activity, auth, operators.clone()));
        }
        if let Some(route) = metrics_route(self, metrics) {
            router = router.merge(route);
        }
        router = router.merge(index_route(self));
        // each binding's routes run under their own edge (close-if-unread included): only
        // what no binding serves is left
        router.fallback(fallback(self))
    }

    /// Where clients reach every binding of this gateway and its named agents behind `base`
    /// (the gateway's URL): what `e2a serve` prints when it starts, from the bindings' own
    /// routes.
    pub fn describe(&self, base: &str) -> String {
        let (root, named) = self.endpoints(base);
        let mut out = String::new();
        for line in root {
            out.push_str(&format!("  {line}\n"));
        }
        for (name, lines) in named {
            out.push_str(&format!("agent {name}:\n"));
            for line in lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if self.metrics.is_some() {
            out.push_str(&format!(
                "  GET  {base}{}  Prometheus metrics\n",
                web::metrics::METRICS_PATH
            ));
        }
        if self.inspector.is_some() {
            out.push_str(&format!(
                "  GET  {base}{}  the inspector page (runs, frames, pauses)\n",
                bindings::inspector::UI_PATH
            ));
        }
        out.push_str(&format!("  GET  {base}/  this list, as JSON\n"));
        out
    }

    /// The endpoints of the root's bindings and of each named agent's (by name) behind `base`
    /// (`METHOD URL  what`): what [`Gateway::describe`] prints and `GET /` answers.
    fn endpoints(&self, base: &str) -> (Vec<String>, Vec<(&str, Vec<String>)>) {
        let lines = |g: &Gateway, place: bindings::Place<'_>| -> Vec<String> {
            g.bindings.iter().flat_map(|b| b.endpoints(place, base)).collect()
        };
        let named = self
            .named
            .iter()
            .map(|n| (n.name.as_str(), lines(&n.gateway, n.place())))
            .collect();
        (lines(self, bindings::Place::Root), named)
    }

    /// Waits (at most `within`) until every frame logged so far is in the frame log's file
    /// (`[log] frames`; its writer is a thread of its own): what a process does before it
    /// exits. `true` without a frame log.
    pub fn flush_frame_log(&self, within: std::time::Duration) -> bool {
        self.shared
            .config
            .frame_log
            .as_ref()
            .is_none_or(|log| log.flush(within))
    }

    /// Runs still streaming.
    pub fn live_streams(&self) -> usize {
        gateways(self)
            .map(|g| g.shared.runs.live() + g.a2a.as_ref().map_or(0, |a| a.runs().count()))
            .sum()
    }

    /// Serves on `listener` until `shutdown` completes, then drains: no new connections or
    /// runs, open streams and detached tasks run for up to `drain_timeout`, then each is cut
    /// off with a final frame; every connection still open a second later is dropped, so this
    /// returns within `drain_timeout` + 2 s whatever the clients do. Connections get
    /// `TCP_NODELAY`, a header-read timeout and a cap ([`GatewayConfig::server`]).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = self.shared.config.server;
        let router = self.router();
        let routes = move || router.clone();
        web::server::serve(listener, routes, limits, shutdown, move || drain(vec![self])).await
    }
}

/// This gateway and its named agents' gateways.
fn gateways(g: &Gateway) -> impl Iterator<Item = &Gateway> {
    std::iter::once(g).chain(g.named.iter().map(|n| &n.gateway))
}

/// A2A 1.0's multi-tenant form: `tenant` in a request at the root routes, and the
/// `/{tenant}/…` HTTP+JSON routes, name the agent.
fn tenant_routes(g: &Gateway, mut router: axum::Router, metrics: &Arc<web::metrics::Metrics>) -> axum::Router {
    let Some(root) = &g.a2a else {
        return router;
    };
    let named: std::collections::HashMap<String, Arc<tasks::TaskService>> = g
        .named
        .iter()
        .filter_map(|n| Some((n.name.clone(), n.gateway.a2a.clone()?)))
        .collect();
    for (name, state) in &named {
        if root.mount().config().grpc {
            state.mount().set_grpc_tenant(name);
        }
        let prefix = format!("{}/{name}", root.mount().config().rest_path.trim_end_matches('/'));
        let edge = web::edge::Edge::counted(web::metrics::Count::new(metrics.clone(), name, "a2a"));
        router = router.merge(bindings::a2a::tenant_router(state.clone(), &prefix, &edge));
    }
    root.mount().set_tenants(named);
    router
}

/// `GET /metrics`, when served.
fn metrics_route(g: &Gateway, metrics: Arc<web::metrics::Metrics>) -> Option<axum::Router> {
    let public = g.metrics?;
    let this = g.clone();
    let endpoint = web::metrics::Endpoint {
        metrics,
        auth: (!public).then(|| g.shared.config.auth.any_caller()),
        streams: Arc::new(move || {
            let mut out = vec![(web::metrics::ROOT_LABEL.to_string(), this.shared.open_streams())];
            out.extend(
                this.named
                    .iter()
                    .map(|n| (n.name.clone(), n.gateway.shared.open_streams())),
            );
            out
        }),
    };
    let route = axum::Router::new().route(web::metrics::METRICS_PATH, axum::routing::get(web::metrics::serve));
    Some(web::edge::Edge::default().around(route).with_state(endpoint))
}

/// `GET /`: what this gateway serves, as JSON — each binding's endpoints (`METHOD PATH  what`,
/// the lines `e2a serve` prints, relative to the gateway's URL), the root's and each named
/// agent's, and `/metrics` when it is served. Any caller with a valid credential may read it
/// (none needed on a gateway without authentication), as `/metrics`.
fn index_route(g: &Gateway) -> axum::Router {
    let (root, named) = g.endpoints("");
    let agents: serde_json::Map<String, serde_json::Value> = named
        .into_iter()
        .map(|(name, lines)| (name.to_string(), lines.into()))
        .collect();
    let index = serde_json::json!({
        "service": "e2a gateway",
        "version": env!("CARGO_PKG_VERSION"),
        "agent": g.shared.agent().name(),
        "endpoints": root,
        "agents": agents,
        "metrics": g.metrics.map(|_| web::metrics::METRICS_PATH),
        "ui": g.inspector.as_ref().map(|_| bindings::inspector::UI_PATH),
    });
    let index = Arc::new(index.to_string());
    let auth = g.shared.config.auth.any_caller();
    let route = axum::Router::new().route(
        "/",
        axum::routing::get(move |request: axum::extract::Request| async move {
            use axum::response::IntoResponse;
            if let Err(p) = auth.check_request(request).await {
                return p.into_response();
            }
            let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
            (json, index.as_str().to_owned()).into_response()
        }),
    );
    web::edge::Edge::default().traced().around(route)
}

/// What answers a route nobody serves: under an A2A path in A2A's form, else in E2A's.
fn fallback(g: &Gateway) -> axum::routing::MethodRouter {
    let mut a2a_paths = bindings::a2a::error_form::A2aPaths::default();
    for g in gateways(g) {
        if let Some(a2a) = &g.a2a {
            a2a_paths.add(a2a.mount().config());
        }
    }
    if let Some(root) = &g.a2a {
        for n in &g.named {
            a2a_paths.add_prefix(&format!(
                "{}/{}",
                root.mount().config().rest_path.trim_end_matches('/'),
                n.name
            ));
        }
    }
    for n in &g.named {
        if let Some((list, _)) = n.routes.a2a.split_once("/{name}") {
            a2a_paths.add_prefix(list);
        }
    }
    axum::routing::any(move |mut request: axum::extract::Request| async move {
        use axum::response::IntoResponse;
        let unread = web::server::watch_unread(&mut request);
        let mut response = if a2a_paths.covers(request.uri().path()) {
            bindings::a2a::error_form::not_found(request.uri().path())
        } else {
            bindings::e2a_http::not_found().await.into_response()
        };
        web::server::close_unread(unread, &mut response);
        response
    })
}

/// Stops accepting new runs; open streams go on.
fn begin_drain(g: &Gateway) {
    for g in gateways(g) {
        g.shared.runs.begin_drain();
    }
}

/// Cuts every open stream off with an `e2a.error` final frame (`E2A.CANCELLED`).
fn cut_streams(g: &Gateway) {
    for g in gateways(g) {
        g.shared.runs.stop_all(StopReason::Shutdown);
        if let Some(a2a) = &g.a2a {
            a2a.runs().cancel_all();
        }
    }
}

/// Runs still streaming on the gateways `all` ([`Gateway::live_streams`] of each).
fn live_streams<'a>(all: impl IntoIterator<Item = &'a Gateway>) -> usize {
    all.into_iter().map(Gateway::live_streams).sum()
}

/// Stops new runs of every gateway of `all` (the first one's `drain_timeout` applies), waits
/// up to `drain_timeout` for the live ones, then cuts them off and waits up to a second more
/// for them to record their end.
async fn drain(all: Vec<Gateway>) {
    let Some(first) = all.first() else { return };
    let timeout = first.shared.config.drain_timeout;
    tracing::info!(
        open_streams = live_streams(&all),
        "shutting down: draining open streams"
    );
    all.iter().for_each(begin_drain);
    let wait = |limit: std::time::Duration| {
        let all = all.clone();
        async move {
            let started = tokio::time::Instant::now();
            while live_streams(&all) > 0 && started.elapsed() < limit {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    wait(timeout).await;
    if live_streams(&all) > 0 {
        tracing::info!(
            open_streams = live_streams(&all),
            "drain deadline passed: cutting streams off"
        );
        all.iter().for_each(cut_streams);
        wait(std::time::Duration::from_secs(1)).await;
    }
}

/// Completes on SIGTERM or Ctrl-C (SIGINT).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Refuses to listen on a non-loopback address without a token, unless `insecure_no_auth`.
pub fn check_bind(addr: SocketAddr, auth: &Auth, insecure_no_auth: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || auth.is_enabled() || insecure_no_auth {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {addr} without a token: give --token-file (or E2A_TOKEN), bind 127.0.0.1, or pass --insecure-no-auth"
        ))
    }
}

/// The README's Rust samples, compiled (and run where they can) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
