//! `GET /metrics` in the Prometheus text format (`prometheus-client`): requests by agent,
//! binding, method and status, their latency to the response head, open streams, frames by
//! kind and error frames by E2A code — each labelled with the agent (`default` for the root
//! agent, else its name).
//!
//! Every label takes its value from a fixed set, never from what a client or an agent sent: the
//! agent from the configuration, the binding from the code, the HTTP method one of the standard
//! nine or `other`, a status the gateway's own, a frame kind and status one the schema declares
//! or `other`, an error code one of the schema's table or `other`. An unauthenticated client can
//! only move counters that already exist or the few series of a fixed key.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::RwLock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The path of the endpoint.
pub const METRICS_PATH: &str = "/metrics";

/// The agent label of the root agent.
pub const ROOT_LABEL: &str = "default";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    agent: String,
    binding: String,
    method: &'static str,
    status: u16,
}

/// The label of the label value `other`: a value outside a label's fixed set.
const OTHER: &str = "other";

/// The method label of `method`: one of the standard methods, else `other` (an extension
/// method is a token of any length a client chooses).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const STANDARD: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::CONNECT,
        Method::OPTIONS,
        Method::TRACE,
        Method::PATCH,
    ];
    STANDARD.iter().find(|m| *m == method).map_or(OTHER, |m| m.as_str())
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BindingLabels {
    agent: String,
    binding: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FrameLabels {
    agent: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    op: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    agent: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PushLabels {
    agent: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    agent: String,
    code: String,
}

fn latency_buckets() -> Histogram {
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

/// The metrics of one gateway and its named agents.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<BindingLabels, Histogram, fn() -> Histogram>,
    open_streams: Family<AgentLabels, Gauge>,
    frames: Family<FrameLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    store: Family<StoreLabels, Histogram, fn() -> Histogram>,
    first_frame: Family<AgentLabels, Histogram, fn() -> Histogram>,
    runs: Family<RunLabels, Histogram, fn() -> Histogram>,
    push: Family<PushLabels, Counter>,
    store_ops: Handles<(&'static str, bool), Histogram>,
    /// The recent runs, for the inspector page (recorded only while it is served).
    pub(crate) activity: Arc<super::activity::Activity>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("e2a");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<BindingLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_buckets);
        let open_streams = Family::<AgentLabels, Gauge>::default();
        let frames = Family::<FrameLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let store = Family::<StoreLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_buckets);
        let first_frame = Family::<AgentLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_buckets);
        let runs = Family::<RunLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_buckets);
        let push = Family::<PushLabels, Counter>::default();
        registry.register(
            "push_notifications",
            "A2A push notification attempts by agent and outcome: delivered, retry (refused, to be tried again), failed (given up on and recorded)",
            push.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered, by agent, binding, method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to the response head (a stream's first byte), by agent and binding",
            latency.clone(),
        );
        registry.register(
            "open_streams",
            "Streams open now (runs and A2A subscribers), by agent",
            open_streams.clone(),
        );
        registry.register(
            "frames",
            "E2A response frames that passed the boundary, by agent and response_kind",
            frames.clone(),
        );
        registry.register(
            "error_frames",
            "Final e2a.error frames, by agent and E2A error code",
            errors.clone(),
        );
        registry.register(
            "store_op_duration_seconds",
            "Store operations (get, append, list, append_frames…) by outcome (ok, error), seconds",
            store.clone(),
        );
        registry.register(
            "agent_first_frame_seconds",
            "Time from a run's start to its agent's (or backend's) first frame, by agent",
            first_frame.clone(),
        );
        registry.register(
            "agent_run_duration_seconds",
            "Runs by agent and final status (succeeded, failed, cancelled, input_required…), seconds",
            runs.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            open_streams,
            frames,
            errors,
            store,
            first_frame,
            runs,
            push,
            store_ops: Handles::default(),
            activity: Default::default(),
        }
    }
}

/// Handles looked up by a small key, each created in its family once: the hot paths (a
/// request, a frame, a store operation) find theirs under a read lock by comparing a few keys,
/// without building a label set or hashing it.
struct Handles<K, V> {
    entries: RwLock<Vec<(K, V)>>,
}

impl<K, V> Default for Handles<K, V> {
    fn default() -> Self {
        Handles {
            entries: RwLock::new(Vec::new()),
        }
    }
}

impl<K: PartialEq, V: Clone> Handles<K, V> {
    /// The handle of `key`, made by `make` the first time.
    fn get(&self, key: K, make: impl FnOnce() -> V) -> V {
        if let Some((_, v)) = self.entries.read().iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let mut entries = self.entries.write();
        if let Some((_, v)) = entries.iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let v = make();
        entries.push((key, v.clone()));
        v
    }
}

/// The metrics of one agent: its label and the handles of its series.
pub(crate) struct AgentMetrics {
    metrics: Arc<Metrics>,
    agent: Arc<str>,
    first_frame: Histogram,
    frames: Handles<Box<str>, Counter>,
    runs: Handles<Box<str>, Histogram>,
}

impl AgentMetrics {
    fn new(metrics: Arc<Metrics>, agent: &str) -> Self {
        let first_frame = metrics
            .first_frame
            .get_or_create(&AgentLabels { agent: agent.into() })
            .clone();
        AgentMetrics {
            metrics,
            agent: agent.into(),
            first_frame,
            frames: Handles::default(),
            runs: Handles::default(),
        }
    }

    /// The gateway's metrics.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The agent's label.
    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }
}

/// Where a pipeline counts its frames: the gateway's metrics and the agent's label. A named
/// agent's pipeline is moved to the gateway it is mounted in.
pub(crate) struct MetricsHandle {
    at: RwLock<Arc<AgentMetrics>>,
}

impl Default for MetricsHandle {
    fn default() -> Self {
        MetricsHandle {
            at: RwLock::new(Arc::new(AgentMetrics::new(Arc::new(Metrics::default()), ROOT_LABEL))),
        }
    }
}

impl MetricsHandle {
    /// The agent's metrics.
    pub(crate) fn get(&self) -> Arc<AgentMetrics> {
        self.at.read().clone()
    }

    /// Counts into `metrics` as `agent` from now on.
    pub(crate) fn adopt(&self, metrics: Arc<Metrics>, agent: &str) {
        *self.at.write() = Arc::new(AgentMetrics::new(metrics, agent));
    }
}

/// The counting of one run's frames: by kind, the time to the first frame and to the final one.
pub(crate) struct FrameCounter {
    at: Arc<AgentMetrics>,
    started: Instant,
    first: bool,
}

impl FrameCounter {
    /// The counting of a run of the agent `at` names, starting now.
    pub(crate) fn new(at: Arc<AgentMetrics>) -> Self {
        FrameCounter {
            at,
            started: Instant::now(),
            first: true,
        }
    }

    /// Counts `frame`.
    pub(crate) fn count(&mut self, frame: &e2a::frame::Frame) {
        let at = &*self.at;
        let kind = match frame.response_kind {
            e2a::ResponseKind::Other(_) => OTHER,
            ref k => k.as_str(),
        };
        if self.first {
            self.first = false;
            at.first_frame.observe(self.started.elapsed().as_secs_f64());
        }
        at.frames
            .get(kind.into(), || {
                at.metrics
                    .frames
                    .get_or_create(&FrameLabels {
                        agent: at.agent.to_string(),
                        kind: kind.to_string(),
                    })
                    .clone()
            })
            .inc();
        if frame.is_final {
            let status = match frame.status {
                e2a::ResponseStatus::Other(_) => OTHER,
                ref s => s.as_str(),
            };
            at.runs
                .get(status.into(), || {
                    at.metrics
                        .runs
                        .get_or_create(&RunLabels {
                            agent: at.agent.to_string(),
                            status: status.to_string(),
                        })
                        .clone()
                })
                .observe(self.started.elapsed().as_secs_f64());
            if kind == "e2a.error" {
                let body = frame.body_object();
                let code = body
                    .get("code")
                    .and_then(|c| c.as_str())
                    .map_or("unknown", |c| c.parse::<e2a::types::ErrorCode>().map_or(OTHER, |_| c));
                at.metrics
                    .errors
                    .get_or_create(&ErrorLabels {
                        agent: at.agent.to_string(),
                        code: code.to_string(),
                    })
                    .inc();
            }
        }
    }
}

impl Metrics {
    /// Counts a push notification attempt of `agent`'s task (`delivered`, `retry`, `failed`).
    pub(crate) fn push_attempt(&self, agent: &str, outcome: &'static str) {
        self.push
            .get_or_create(&PushLabels {
                agent: agent.to_string(),
                outcome,
            })
            .inc();
    }

    /// Times a store operation.
    pub(crate) fn store_op(&self, op: &'static str, ok: bool, took: std::time::Duration) {
        let outcome = if ok { "ok" } else { "error" };
        self.store_ops
            .get((op, ok), || {
                self.store.get_or_create(&StoreLabels { op, outcome }).clone()
            })
            .observe(took.as_secs_f64());
    }

    /// The text exposition, the open streams read from `streams` (agent label, count).
    pub(crate) fn encode(&self, streams: &[(String, usize)]) -> String {
        for (agent, n) in streams {
            self.open_streams
                .get_or_create(&AgentLabels { agent: agent.clone() })
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// What counts the requests of one binding of one agent (the [`crate::web::edge`] layer calls
/// it): the latency histogram of the pair, and the request counter of each method and status,
/// looked up once.
pub(crate) struct Count {
    metrics: Arc<Metrics>,
    latency: Histogram,
    counters: Handles<(&'static str, u16), Counter>,
    agent: Arc<str>,
    binding: &'static str,
}

impl Count {
    /// The counting of `binding`'s requests to `agent`.
    pub(crate) fn new(metrics: Arc<Metrics>, agent: &str, binding: &'static str) -> Self {
        let latency = metrics
            .latency
            .get_or_create(&BindingLabels {
                agent: agent.to_string(),
                binding: binding.to_string(),
            })
            .clone();
        Count {
            metrics,
            latency,
            counters: Handles::default(),
            agent: agent.into(),
            binding,
        }
    }

    /// One request of `method`, answered with `status`, started at `started`.
    pub(crate) fn record(&self, method: &axum::http::Method, started: Instant, status: StatusCode) {
        self.latency.observe(started.elapsed().as_secs_f64());
        let method = method_label(method);
        let status = status.as_u16();
        self.counters
            .get((method, status), || {
                self.metrics
                    .requests
                    .get_or_create(&RequestLabels {
                        agent: self.agent.to_string(),
                        binding: self.binding.to_string(),
                        method,
                        status,
                    })
                    .clone()
            })
            .inc();
    }
}

/// What `GET /metrics` reads.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) auth: Option<crate::web::auth::Auth>,
    pub(crate) streams: Arc<dyn Fn() -> Vec<(String, usize)> + Send + Sync>,
}

/// `GET /metrics` (a bearer credential, or a signed request: [`crate::web::hmac`]).
pub(crate) async fn serve(State(e): State<Endpoint>, request: axum::extract::Request) -> Response {
    if let Some(auth) = &e.auth {
        if let Err(p) = auth.check_request(request).await {
            return p.into_response();
        }
    }
    let body = e.metrics.encode(&(e.streams)());
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
        .into_response()
}
