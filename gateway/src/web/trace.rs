//! Trace context across hops: a request's W3C `traceparent` (its trace id) or `X-Trace-ID`
//! becomes the envelope's `correlation_id` on every HTTP binding, is echoed on the response as
//! `X-Trace-ID`, and goes on to the next hop (HTTP headers for `e2a:` and `a2a:` backends,
//! `_meta.traceparent` for `acp:` ones), so that one id follows a request through
//! `e2a acp → a2a: → e2a serve → acp:`.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The W3C Trace Context header.
pub const TRACEPARENT: &str = "traceparent";
/// The vendor part of W3C Trace Context, carried along unchanged.
pub const TRACESTATE: &str = "tracestate";
/// The plain trace id header many gateways use (GoAI, Raven).
pub const X_TRACE_ID: &str = "x-trace-id";

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
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(trace) = text(TRACEPARENT).and_then(trace_id_of) {
            return TraceContext {
                trace_id: Some(trace.to_string()),
                tracestate: text(TRACESTATE).map(str::to_string),
            };
        }
        let plain = text(X_TRACE_ID)
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
        for name in [TRACEPARENT, TRACESTATE, X_TRACE_ID] {
            if let Some(v) = text(name).and_then(|v| HeaderValue::from_str(v).ok()) {
                headers.insert(HeaderName::from_static(name), v);
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

/// A `traceparent` continuing trace `correlation_id` with a new span, when it is a W3C trace
/// id (32 lowercase hex digits, not all zero).
pub fn traceparent_for(correlation_id: &str) -> Option<String> {
    let span = uuid::Uuid::new_v4().simple().to_string();
    let tp = format!("00-{correlation_id}-{}-01", &span[..16]);
    trace_id_of(&tp).is_some().then_some(tp)
}

/// The layer every binding runs under ([`crate::web::auth`] applies it): a response (a `401`
/// included) carries `X-Trace-ID` when the request named a trace.
pub(crate) async fn layer(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let trace = TraceContext::from_headers(req.headers());
    let echo = trace.trace_id.as_deref().and_then(|t| HeaderValue::from_str(t).ok());
    let mut response = next.run(req).await;
    if let Some(v) = echo {
        response.headers_mut().insert(HeaderName::from_static(X_TRACE_ID), v);
    }
    response
}

/// Sets `request.correlation_id` to `trace_id` when the request names none itself (an id in
/// the body wins).
pub fn correlate(request: &mut e2a::E2AEnvelope, trace_id: Option<String>) {
    if request.correlation_id.as_deref().is_none_or(str::is_empty) && trace_id.is_some() {
        request.correlation_id = trace_id;
    }
}
