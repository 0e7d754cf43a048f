//! Trace context across hops: a request's W3C `traceparent` (its trace id) or `X-Trace-ID`
//! becomes the envelope's `correlation_id` on every HTTP binding, is echoed on the response as
//! `X-Trace-ID`, and goes on to the next hop (HTTP headers for `e2a:` and `a2a:` backends,
//! `_meta.traceparent` for `acp:` ones), so that one id follows a request through
//! `e2a acp → a2a: → e2a serve → acp:`.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The W3C Trace Context header.
pub const TRACEPARENT: &str = "traceparent";
/// The vendor part of W3C Trace Context, carried along unchanged.
pub const TRACESTATE: &str = "tracestate";
/// The plain trace id header many gateways use (GoAI, Raven).
pub const X_TRACE_ID: &str = "x-trace-id";

/// The headers' names, parsed once (a lookup by `&str` parses and hashes the name each time).
const TRACEPARENT_NAME: HeaderName = HeaderName::from_static(TRACEPARENT);
const TRACESTATE_NAME: HeaderName = HeaderName::from_static(TRACESTATE);
pub(crate) const X_TRACE_ID_NAME: HeaderName = HeaderName::from_static(X_TRACE_ID);

tokio::task_local! {
    /// The trace id of the request being answered, for the error bodies made while answering it.
    static TRACE_ID: Option<Arc<str>>;
}

/// The trace id of the request being answered ([`layer`]), for an error body to name
/// (problem+json `trace_id`, A2A `ErrorInfo.metadata.traceId`); `None` outside a request.
pub(crate) fn current_trace_id() -> Option<Arc<str>> {
    TRACE_ID.try_with(Clone::clone).ok().flatten()
}

/// The trace id of the request with `headers` being answered: the one the trace layer settled
/// ([`current_trace_id`]: named by the client or made for the request), else the one the
/// headers name ([`TraceContext::from_headers`]: a route without the trace layer).
pub(crate) fn request_trace_id(headers: &HeaderMap) -> Option<String> {
    match current_trace_id() {
        Some(id) => Some(id.to_string()),
        None => TraceContext::from_headers(headers).trace_id,
    }
}

/// Longest `X-Trace-ID` taken (longer ones are ignored).
const MAX_TRACE_ID: usize = 128;

/// The trace context a request came with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// The id that names the trace: a valid `traceparent`'s trace id, else `X-Trace-ID`.
    pub trace_id: Option<String>,
    /// `tracestate`, as received (only with a valid `traceparent`).
    pub tracestate: Option<String>,
}

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), when it is valid.
///
/// ```
/// use e2a_gateway::web::trace::trace_id_of;
/// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// assert_eq!(trace_id_of(tp), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
/// assert_eq!(trace_id_of("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), None);
/// assert_eq!(trace_id_of("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), None);
/// assert_eq!(trace_id_of("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), None);
/// ```
pub fn trace_id_of(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(parent, 16)
        && parent.bytes().any(|b| b != b'0')
        && hex(flags, 2)
        // version 00 has exactly four fields; later versions may add some
        && (version != "00" || parts.next().is_none());
    valid.then_some(trace)
}

impl TraceContext {
    /// The context of `headers`.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let text = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(trace) = text(&TRACEPARENT_NAME).and_then(trace_id_of) {
            return TraceContext {
                trace_id: Some(trace.to_string()),
                tracestate: text(&TRACESTATE_NAME).map(str::to_string),
            };
        }
        let plain = text(&X_TRACE_ID_NAME)
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= MAX_TRACE_ID);
        TraceContext {
            trace_id: plain.map(str::to_string),
            tracestate: None,
        }
    }

    /// The context of an ACP message's `_meta` (`traceparent`, `tracestate`, else `x-trace-id`).
    pub fn from_meta(meta: Option<&serde_json::Value>) -> Self {
        let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(serde_json::Value::as_str);
        let mut headers = HeaderMap::new();
        for name in [TRACEPARENT_NAME, TRACESTATE_NAME, X_TRACE_ID_NAME] {
            if let Some(v) = text(name.as_str()).and_then(|v| HeaderValue::from_str(v).ok()) {
                headers.insert(name, v);
            }
        }
        Self::from_headers(&headers)
    }
}

/// The headers that carry `correlation_id` to the next HTTP hop: `X-Trace-ID` always, and a
/// `traceparent` (a new span of the same trace) when it is a W3C trace id.
///
/// ```
/// let h = e2a_gateway::web::trace::outgoing("4bf92f3577b34da6a3ce929d0e0e4736");
/// assert_eq!(h[0], ("x-trace-id", "4bf92f3577b34da6a3ce929d0e0e4736".to_string()));
/// assert!(h[1].1.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
/// assert_eq!(e2a_gateway::web::trace::outgoing("req-42").len(), 1);
/// ```
pub fn outgoing(correlation_id: &str) -> Vec<(&'static str, String)> {
    let mut headers = vec![(X_TRACE_ID, correlation_id.to_string())];
    if let Some(tp) = traceparent_for(correlation_id) {
        headers.push((TRACEPARENT, tp));
    }
    headers
}

/// A `traceparent` continuing trace `correlation_id`, when it is a W3C trace id (32
/// lowercase hex digits, not all zero): its parent is the current span when OpenTelemetry
/// records it in that trace (the next hop's spans hang under the backend call), else a new
/// span id.
pub fn traceparent_for(correlation_id: &str) -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = tracing::Span::current().context();
    let current = context.span().span_context().clone();
    let span = if current.is_valid() && current.trace_id().to_string() == correlation_id {
        current.span_id().to_string()
    } else {
        uuid::Uuid::new_v4().simple().to_string()[..16].to_string()
    };
    let tp = format!("00-{correlation_id}-{span}-01");
    trace_id_of(&tp).is_some().then_some(tp)
}

/// The OpenTelemetry context of a valid `traceparent` (a remote parent), if any.
fn remote_parent(traceparent: &str) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    let trace = trace_id_of(traceparent)?;
    let mut parts = traceparent.trim().split('-').skip(2);
    let parent = SpanId::from_hex(parts.next()?).ok()?;
    let flags = u8::from_str_radix(parts.next()?, 16).ok()?;
    let context = SpanContext::new(
        TraceId::from_hex(trace).ok()?,
        parent,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    );
    Some(opentelemetry::Context::new().with_remote_span_context(context))
}

/// The trace context of a request, around `inner` (what answers it): the request's span
/// (`request`, a child of the caller's span when it sent a valid `traceparent`; what
/// OpenTelemetry exports when the embedder installs `tracing-opentelemetry`), and every
/// response (a `401` included) carries `X-Trace-ID`: the trace the request named, else one
/// made for it (the request's span's, or a new id). The [`crate::web::edge`] layer runs it,
/// authentication inside the span.
pub(crate) async fn traced<F, Fut>(req: axum::extract::Request, inner: F) -> axum::response::Response
where
    F: FnOnce(axum::extract::Request) -> Fut,
    Fut: std::future::Future<Output = axum::response::Response>,
{
    use tracing::Instrument;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let trace = TraceContext::from_headers(req.headers());
    let echo = trace.trace_id.as_deref().and_then(|t| HeaderValue::from_str(t).ok());
    // method and path, never the query string (it can carry a credential) nor headers
    let span = tracing::debug_span!(
        "request",
        otel.name = %format!("{} {}", req.method(), req.uri().path()),
        otel.kind = "server",
        method = %req.method(),
        path = %req.uri().path(),
        e2a.trace_id = trace.trace_id.as_deref(),
    );
    let parent = req
        .headers()
        .get(&TRACEPARENT_NAME)
        .and_then(|v| v.to_str().ok())
        .and_then(remote_parent);
    if let Some(parent) = parent {
        let _ = span.set_parent(parent);
    }
    let mut req = req;
    let mut echo = echo;
    if trace.trace_id.is_none() {
        // no trace named: the request's own span (when OpenTelemetry records it) starts one,
        // else a new trace id; the bindings then see it as if the client had sent it (the
        // frames' correlation_id, the next hop's traceparent) and the answer says it
        use opentelemetry::trace::TraceContextExt;
        let context = span.context();
        let own = context.span().span_context().clone();
        let mut ids = String::with_capacity(48);
        if own.is_valid() {
            let _ = write!(ids, "{}{}", own.trace_id(), own.span_id());
        } else {
            // a random trace id, its first half the span id
            let mut hex = uuid::Uuid::encode_buffer();
            let id = uuid::Uuid::new_v4().simple().encode_lower(&mut hex);
            ids.push_str(id);
            ids.push_str(&id[..16]);
        }
        let (trace_id, span_id) = ids.split_at(ids.len().min(32));
        let mut tp = String::with_capacity(55);
        for part in ["00-", trace_id, "-", span_id, "-01"] {
            tp.push_str(part);
        }
        if let Ok(v) = HeaderValue::from_str(&tp) {
            req.headers_mut().insert(TRACEPARENT_NAME, v);
        }
        echo = HeaderValue::from_str(trace_id).ok();
    }
    let started = std::time::Instant::now();
    let named: Option<Arc<str>> = echo.as_ref().and_then(|v| v.to_str().ok()).map(Arc::from);
    let mut response = TRACE_ID.scope(named, inner(req).instrument(span.clone())).await;
    span.in_scope(|| {
        tracing::debug!(
            status = response.status().as_u16(),
            latency_ms = started.elapsed().as_millis() as u64,
            "answered"
        );
    });
    if let Some(v) = echo {
        response.headers_mut().insert(X_TRACE_ID_NAME, v);
    }
    response
}

/// A stream whose every poll runs inside `span` (a run's frames, polled by whichever task
/// serves them): what the agent does while producing them — backend calls included — is
/// recorded under the run's span, which ends when the stream is dropped.
pub(crate) struct InSpan<S> {
    pub(crate) inner: S,
    pub(crate) span: tracing::Span,
}

impl<S: futures_util::Stream + Unpin> futures_util::Stream for InSpan<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        std::pin::Pin::new(&mut this.inner).poll_next(cx)
    }
}

/// Sets `request.correlation_id` to `trace_id` when the request names none itself (an id in
/// the body wins).
pub fn correlate(request: &mut e2a::E2AEnvelope, trace_id: Option<String>) {
    if request.correlation_id.as_deref().is_none_or(str::is_empty) && trace_id.is_some() {
        request.correlation_id = trace_id;
    }
}
