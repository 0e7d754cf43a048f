use std::time::Duration;

use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, E2AResponse, Limits, SecretString};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::agent::{Agent, FrameStream, RequestContext};
use crate::pipeline::boundary::details;

/// Where a [`E2aRemoteAgent`] forwards to and with which credential.
#[derive(Debug, Clone)]
pub struct E2aRemoteConfig {
    /// The remote server: its base URL (`http://host:port`) or the full
    /// `…/v1/e2a/requests` endpoint.
    pub url: String,
    /// Bearer token sent to the remote server (never printed: `Debug` shows `[REDACTED]`).
    pub token: Option<SecretString>,
    /// Limits applied to every frame the remote server sends.
    pub limits: Limits,
    /// Timeout for connecting to the remote server.
    pub connect_timeout: Duration,
}

impl E2aRemoteConfig {
    /// A configuration for `url` without a token and default limits.
    pub fn new(url: impl Into<String>) -> Self {
        E2aRemoteConfig {
            url: url.into(),
            token: None,
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// An agent that is another server speaking E2A over HTTP (this gateway, or an agent server
/// written in any language against `generated/openapi.json`). Every run is one `POST` with
/// `Accept: text/event-stream`; the frames are read with the lenient reader and the gateway's
/// limits. Dropping the run (client gone, deadline, shutdown) closes the connection, which
/// cancels the run on the remote server.
#[derive(Debug, Clone)]
pub struct E2aRemoteAgent {
    endpoint: String,
    token: Option<SecretString>,
    limits: Limits,
    client: reqwest::Client,
}

/// Why a [`E2aRemoteAgent`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum E2aRemoteError {
    /// The URL is not an `http` or `https` URL.
    #[error("remote agent URL must start with http:// or https://")]
    BadUrl,
    /// The URL carries a credential (`user:password@`); it belongs in the token setting.
    #[error("remote agent URL must not carry a credential: give the token in the configuration (--agent-token-file)")]
    CredentialInUrl,
    /// A token would go over plain `http` to a host that is not loopback.
    #[error("the remote agent's token would cross the network in clear text: use an https:// URL")]
    TokenInClear,
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl E2aRemoteAgent {
    /// A remote agent for `config`.
    pub fn new(config: E2aRemoteConfig) -> Result<Self, E2aRemoteError> {
        let url = config.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(E2aRemoteError::BadUrl);
        }
        let parsed = reqwest::Url::parse(url).map_err(|_| E2aRemoteError::BadUrl)?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            // the URL is logged and shown as the agent's name: no secret may live in it
            return Err(E2aRemoteError::CredentialInUrl);
        }
        if config.token.is_some() && super::token_in_clear(url) {
            return Err(E2aRemoteError::TokenInClear);
        }
        let base = url.trim_end_matches('/');
        let endpoint = if base.ends_with(crate::protocol::REQUESTS_PATH) {
            base.to_string()
        } else {
            format!("{base}{}", crate::protocol::REQUESTS_PATH)
        };
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| E2aRemoteError::Client(e.without_url().to_string()))?;
        Ok(E2aRemoteAgent {
            endpoint,
            token: config.token,
            limits: config.limits,
            client,
        })
    }

    /// The endpoint every run is posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

/// The parts of a remote gateway's problem+json answer that are read: its E2A error code and
/// its detail (for the log).
#[derive(serde::Deserialize, Default)]
struct RemoteProblem {
    #[serde(default)]
    code: Value,
    #[serde(default)]
    detail: Option<String>,
}

fn failure(request: &E2AEnvelope, kind: ErrorKind, message: String, details: Map<String, Value>) -> Frame {
    ResponseStream::for_request(request).fail(kind.mapping().e2a_code, &message, details)
}

/// The request as the remote server gets it: its ids (`request_id`, `task_id`, `context_id`,
/// `session_id`) scoped by the caller, so that two callers of this gateway never share a run
/// or a conversation on the remote one (which sees one caller: this gateway). A request
/// without `request_id` gets one there, so that its run can be cancelled by id. Returns the
/// request and a function giving a frame its client's ids back.
fn scoped(request: &E2AEnvelope, ctx: &RequestContext) -> (E2AEnvelope, impl Fn(E2AResponse) -> E2AResponse) {
    let mut sent = request.clone();
    let mut swaps: Vec<(String, Option<String>)> = Vec::new();
    let own_id = sent.request_id.take();
    let request_id = ctx
        .conversation(own_id.clone().unwrap_or_else(e2a::stream::new_ordered_id))
        .scoped_id();
    swaps.push((request_id.clone(), own_id));
    sent.request_id = Some(request_id);
    for id in [&mut sent.task_id, &mut sent.context_id, &mut sent.session_id] {
        if let Some(original) = id.take() {
            let scoped = ctx.conversation(original.as_str()).scoped_id();
            swaps.push((scoped.clone(), Some(original)));
            *id = Some(scoped);
        }
    }
    let restore = move |mut f: E2AResponse| {
        for id in [&mut f.request_id, &mut f.task_id, &mut f.context_id, &mut f.session_id] {
            if let Some((_, original)) = swaps.iter().find(|(s, _)| id.as_deref() == Some(s.as_str())) {
                id.clone_from(original);
            }
        }
        f
    };
    (sent, restore)
}

impl E2aRemoteAgent {
    /// Cancels the remote run of `sent` (`POST …/v1/e2a/runs/{request_id}:cancel`), in the
    /// background: a remote gateway keeps a run whose client went away running (its
    /// `on_disconnect` is `detach` by default), so closing the stream is not enough. A remote
    /// server without the run resource answers `404`, which is fine: it cancels on close.
    fn cancel_remote(&self, sent: &E2AEnvelope) {
        let (Some(id), Ok(handle)) = (sent.request_id.as_deref(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let Some(base) = self.endpoint.strip_suffix(crate::protocol::REQUESTS_PATH) else {
            return;
        };
        use crate::protocol::{path_segment, RUNS_PATH};
        let url = format!("{base}{RUNS_PATH}/{}:cancel", path_segment(id));
        let mut post = self.client.post(url).timeout(Duration::from_secs(10));
        if let Some(t) = &self.token {
            post = post.bearer_auth(t.expose());
        }
        handle.spawn(async move {
            match post.send().await {
                Ok(r) if r.status().is_success() || r.status() == reqwest::StatusCode::NOT_FOUND => {}
                Ok(r) => tracing::warn!(status = r.status().as_u16(), "the remote agent did not cancel the run"),
                Err(e) => tracing::warn!(error = %e.without_url(), "cannot cancel the run at the remote agent"),
            }
        });
    }

    /// The `POST` of a run's request `sent` (asking for an event stream, with the token), the
    /// trace going on to the next hop under this call's span (returned, to send it under).
    fn post(&self, sent: &E2AEnvelope) -> (reqwest::RequestBuilder, tracing::Span) {
        let mut post = self
            .client
            .post(&self.endpoint)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(sent.to_json());
        if let Some(t) = &self.token {
            post = post.bearer_auth(t.expose());
        }
        // the trace goes on to the next hop, under this call's span
        let span = tracing::debug_span!(
            "backend.call",
            otel.kind = "client",
            e2a.backend = "e2a",
            e2a.request_id = sent.request_id.as_deref()
        );
        for (name, value) in span
            .in_scope(|| sent.correlation_id.as_deref().map(crate::web::trace::outgoing))
            .unwrap_or_default()
        {
            post = post.header(name, value);
        }
        (post, span)
    }
}

/// The final frame of a request the remote refused (an HTTP error status): its problem code
/// kept when it sent one; the remote's own words (which may echo what it was sent) go to the
/// log only.
async fn refused(request: &E2AEnvelope, resp: reqwest::Response) -> Frame {
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    let problem: RemoteProblem = serde_json::from_str(&body).unwrap_or_default();
    let code = problem.code;
    let kind = match ErrorKind::from_code(&code, "e2a") {
        ErrorKind::Internal | ErrorKind::AuthRequired => ErrorKind::AgentError,
        k if code.is_string() => k,
        _ => ErrorKind::AgentError,
    };
    tracing::warn!(status = status.as_u16(), remote_code = %code, detail = problem.detail.as_deref().unwrap_or(""), "remote agent refused the request");
    failure(
        request,
        kind,
        format!("the remote agent refused the request (HTTP {})", status.as_u16()),
        details(&[("http_status", status.as_u16().into()), ("remote_code", code)]),
    )
}

impl Agent for E2aRemoteAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let this = self.clone();
        let (sent, restore) = scoped(&request, &ctx);
        Box::pin(async_stream::stream! {
            let (post, span) = this.post(&sent);
            let sent_at = tokio::select! {
                _ = ctx.cancel.cancelled() => {
                    this.cancel_remote(&sent);
                    return;
                }
                r = tracing::Instrument::instrument(post.send(), span) => r,
            };
            let resp = match sent_at {
                Ok(r) => r,
                Err(e) => {
                    let e = e.without_url();
                    tracing::warn!(error = %e, "remote agent unreachable");
                    yield failure(&request, ErrorKind::AgentError, format!("the remote agent is unreachable: {e}"), Map::new());
                    return;
                }
            };
            let status = resp.status();
            if !status.is_success() {
                yield refused(&request, resp).await;
                return;
            }
            let mut events = resp.bytes_stream().eventsource();
            let mut next_seq: u64 = 0;
            let at = |mut f: Frame, seq: u64| {
                f.sequence = seq;
                f
            };
            loop {
                let event = tokio::select! {
                    _ = ctx.cancel.cancelled() => {
                        this.cancel_remote(&sent);
                        return;
                    }
                    n = events.next() => n,
                };
                match event {
                    None => return,
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "remote agent stream broke");
                        yield at(failure(&request, ErrorKind::AgentError, format!("the remote agent's stream broke: {e}"), Map::new()), next_seq);
                        return;
                    }
                    Some(Ok(ev)) if !ev.event.is_empty() && ev.event != e2a::sse::EVENT && ev.event != "message" => continue,
                    Some(Ok(ev)) => match E2AResponse::read(&ev.data, &e2a::ReadOptions::lenient().with_limits(this.limits)) {
                        Ok(read) => {
                            next_seq = read.value.sequence.saturating_add(1);
                            // a record from the wire: a frame of its own head, its body as read
                            yield Frame::from(restore(read.value));
                        }
                        Err(e) => {
                            yield at(failure(&request, ErrorKind::InvalidAgentResponse, format!("the remote agent sent an invalid frame: {e}"), Map::new()), next_seq);
                            return;
                        }
                    },
                }
            }
        })
    }

    fn name(&self) -> String {
        format!("e2a:{}", self.endpoint)
    }
}
