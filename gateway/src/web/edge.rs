//! The one layer every binding's routes run under: what the per-concern layers did, in one
//! future per request (each layer of axum's `from_fn` boxes and moves the request's future once
//! more; five of them cost a request's handler several thousand instructions).
//!
//! In order, around the handler:
//! 1. **close if unread** ([`crate::web::server::watch_unread`]): an HTTP/1 answer
//!    sent before its request's body was read to the end says `Connection: close`;
//! 2. **metrics**: the request counted and its latency observed under its agent and binding
//!    ([`crate::web::metrics::Count`]);
//! 3. **the binding's form** ([`Form`]): what a binding does to every answer of its routes
//!    (A2A: the web layer's errors in A2A's own error form, the `A2A-Extensions` it activated);
//! 4. **trace** ([`crate::web::trace::traced`]): the request's span, `X-Trace-ID` echoed;
//! 5. **authentication** ([`crate::web::auth::Auth`]): the [`crate::agent::Caller`] in the
//!    request's extensions, or `401` — whatever the method (a wrong method of a route that
//!    needs a token is `401` before it is `405`);
//! 6. **a body deadline** (gRPC: a call's message must arrive within the body-read timeout).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::web::auth::Auth;
use crate::web::metrics::Count;

/// What a binding does to every answer of its routes, in its protocol's own form: it reads
/// what it needs of the request's headers before the request moves on ([`Form::note`]) and
/// reshapes the response after ([`Form::answer`]).
pub(crate) trait Form: Send + Sync + 'static {
    /// What [`Form::answer`] needs to know of the request.
    type Note: Send + 'static;

    /// Reads the request's headers.
    fn note(&self, headers: &axum::http::HeaderMap) -> Self::Note;

    /// The response in the binding's form.
    fn answer(&self, note: Self::Note, response: Response) -> Response;
}

/// The form of bindings that answer in E2A's own form (their errors are problems already).
impl Form for () {
    type Note = ();

    fn note(&self, _: &axum::http::HeaderMap) {}

    fn answer(&self, (): (), response: Response) -> Response {
        response
    }
}

/// The layer of one binding's routes (see the module docs): built by the gateway for each
/// binding at each place it serves an agent (counting under that agent and binding), refined
/// by the binding per group of routes ([`Edge::authenticated`], [`Edge::in_form`]) and put on
/// them with [`Edge::around`].
pub(crate) struct Edge<F = ()> {
    count: Option<Arc<Count>>,
    auth: Option<Auth>,
    traced: bool,
    deadline: Option<Duration>,
    form: Arc<F>,
}

impl<F> Clone for Edge<F> {
    fn clone(&self) -> Self {
        Edge {
            count: self.count.clone(),
            auth: self.auth.clone(),
            traced: self.traced,
            deadline: self.deadline,
            form: self.form.clone(),
        }
    }
}

impl Default for Edge {
    /// Close-if-unread alone: no counting, no authentication, no trace, E2A's form.
    fn default() -> Self {
        Edge {
            count: None,
            auth: None,
            traced: false,
            deadline: None,
            form: Arc::new(()),
        }
    }
}

impl Edge {
    /// The edge of routes whose requests are counted by `count`.
    pub(crate) fn counted(count: Count) -> Self {
        Edge {
            count: Some(Arc::new(count)),
            ..Edge::default()
        }
    }
}

impl<F: Form> Edge<F> {
    /// This edge, its requests authenticated by `auth` (and traced).
    pub(crate) fn authenticated(&self, auth: &Auth) -> Self {
        Edge {
            auth: Some(auth.clone()),
            traced: true,
            ..self.clone()
        }
    }

    /// This edge, its requests traced (a span, `X-Trace-ID` echoed) without authentication.
    pub(crate) fn traced(&self) -> Self {
        Edge {
            traced: true,
            ..self.clone()
        }
    }

    /// This edge, a request's body due within `within` of the first poll.
    pub(crate) fn with_deadline(&self, within: Duration) -> Self {
        Edge {
            deadline: Some(within),
            ..self.clone()
        }
    }

    /// This edge, its answers in `form`.
    pub(crate) fn in_form<G: Form>(&self, form: G) -> Edge<G> {
        Edge {
            count: self.count.clone(),
            auth: self.auth.clone(),
            traced: self.traced,
            deadline: self.deadline,
            form: Arc::new(form),
        }
    }

    /// `router` with this edge around each of its routes (every method, a wrong one too).
    pub(crate) fn around<S>(&self, router: Router<S>) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router.layer(axum::middleware::from_fn_with_state(self.clone(), pass::<F>))
    }
}

/// One request through an [`Edge`].
async fn pass<F: Form>(State(edge): State<Edge<F>>, mut request: Request, next: Next) -> Response {
    let unread = crate::web::server::watch_unread(&mut request);
    let started = Instant::now();
    let method = request.method().clone();
    let note = edge.form.note(request.headers());
    if let Some(within) = edge.deadline {
        request = request.map(|body| axum::body::Body::new(crate::web::body::Deadline::body(body, within)));
    }
    // the access log's line, when it is written: the route template, and who the request
    // proved to be
    let logged = edge.traced && tracing::enabled!(target: "e2a::access", tracing::Level::INFO);
    let route = logged
        .then(|| request.extensions().get::<axum::extract::MatchedPath>().cloned())
        .flatten();
    let who = std::sync::OnceLock::<Option<String>>::new();
    let proved = &who;
    let auth = edge.auth.as_ref();
    let inner = |mut request: Request| async move {
        if let Some(auth) = auth {
            // (boxed: the check's future is near 2 kB, which every request's future would
            // carry and copy, authenticated or not)
            match Box::pin(auth.check_request(request)).await {
                Ok((caller, checked)) => {
                    request = checked;
                    if logged {
                        let _ = proved.set(caller.subject.clone());
                    }
                    request.extensions_mut().insert(caller);
                }
                Err(p) => return p.into_response(),
            }
        }
        next.run(request).await
    };
    let response = match edge.traced {
        true => crate::web::trace::traced(request, inner).await,
        false => inner(request).await,
    };
    if logged {
        access_log(&method, route.as_ref(), &response, started, who.get());
    }
    let mut response = edge.form.answer(note, response);
    if let Some(count) = &edge.count {
        count.record(&method, started, response.status());
    }
    crate::web::server::close_unread(unread, &mut response);
    response
}

/// The access log's line of a request answered (target `e2a::access`, level `info`; written
/// when that is enabled): method,
/// route template (never the path's ids nor the query string, which may hold a credential),
/// status, latency to the answer's head, caller (`-` when none was proved) and trace id.
fn access_log(
    method: &axum::http::Method,
    route: Option<&axum::extract::MatchedPath>,
    response: &Response,
    started: Instant,
    who: Option<&Option<String>>,
) {
    let trace = response
        .headers()
        .get(crate::web::trace::X_TRACE_ID_NAME)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info!(
        target: "e2a::access",
        method = %method,
        route = route.map_or("-", |r| r.as_str()),
        status = response.status().as_u16(),
        latency_ms = %Millis(started.elapsed()),
        caller = who.and_then(Option::as_deref).unwrap_or("-"),
        trace_id = trace,
        "request"
    );
}

/// A duration in milliseconds to the microsecond (`12.345`), as `{:.3}` writes the
/// milliseconds of [`Duration::as_secs_f64`], without the float formatting.
struct Millis(Duration);

impl std::fmt::Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // rounded to the nearest microsecond, as `{:.3}` rounds
        let micros = self.0.as_nanos().saturating_add(500) / 1000;
        let mut ms = itoa::Buffer::new();
        f.write_str(ms.format(micros / 1000))?;
        let frac = u16::try_from(micros % 1000).unwrap_or(0);
        let digits = [
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ];
        f.write_str(std::str::from_utf8(&digits).map_err(|_| std::fmt::Error)?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Millis;

    #[test]
    fn millis_are_written_as_the_float_formatting_writes_them() {
        let nanos = [
            0u64,
            1,
            499,
            501,
            999,
            1_000,
            1_234_567,
            12_345_678,
            999_999_400,
            3_600_000_000_123,
            u64::from(u32::MAX) * 7,
        ];
        // (half a microsecond exactly is a tie, which the two may round apart)
        for n in nanos
            .into_iter()
            .chain((0..2_000).map(|i| i * 7_919 + 13))
            .filter(|n| n % 1000 != 500)
        {
            let d = Duration::from_nanos(n);
            assert_eq!(
                Millis(d).to_string(),
                format!("{:.3}", d.as_secs_f64() * 1000.0),
                "{n} ns"
            );
        }
    }
}
