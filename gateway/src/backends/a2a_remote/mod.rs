//! A remote A2A agent as the gateway's backend (`e2a serve --agent a2a:URL`).
//!
//! The agent card is discovered at `<URL>/.well-known/agent-card.json` (or `URL` itself when
//! it names a `.json` card); the JSON-RPC interface of protocol 1.0 is used, and refused when
//! it is on another origin than the card. Redirects are never followed. A bearer credential is
//! configured per origin and sent to that origin only; it never appears in `Debug`, logs or
//! errors. Every run is one `SendStreamingMessage`; the remote's `StreamResponse` events come
//! back as E2A frames (text artifacts of the remote's `output` as text chunks, other artifacts
//! as artifact chunks, working messages as reasoning, pauses as `plan.approval_required`,
//! terminal states as the final frame). A status message that carries an E2A frame under the
//! convention of [`e2a::a2a::stream`] (`metadata.e2a_delta_kind` / `e2a_response_kind`, as an
//! e2a gateway writes it) becomes that frame again — tool calls, their results and an approval
//! pause (`input_kind: approval`) cross the hop unchanged; a plain agent's `WORKING` text is
//! reasoning and its `INPUT_REQUIRED` a pause for input. A follow-up of a paused run (the
//! answer to an approval: `yes` / `no`) is sent as a message to the paused remote task. A
//! cancelled run sends `CancelTask` to the remote.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, E2AResponse, SecretString};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use e2a::a2a::inbound::A2aStreamReader;
use e2a::a2a::stream::text_part;
use e2a::types::{A2aMessage, A2aOperation, A2aPart, A2aRole, A2aStreamResponse, JsonRpcErrorBody};

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext};
use crate::pipeline::boundary::details;

/// Where a [`A2aRemoteAgent`] goes and with which credentials.
#[derive(Debug, Clone)]
pub struct A2aRemoteConfig {
    /// The agent's base URL (its card is at `<url>/.well-known/agent-card.json`) or the card URL.
    pub url: String,
    /// Bearer tokens by origin (`https://host:port`); a token is only sent to its origin.
    pub credentials: HashMap<String, SecretString>,
    /// Timeout for connecting.
    pub connect_timeout: Duration,
}

impl A2aRemoteConfig {
    /// A configuration for `url` without credentials.
    pub fn new(url: impl Into<String>) -> Self {
        A2aRemoteConfig {
            url: url.into(),
            credentials: HashMap::new(),
            connect_timeout: Duration::from_secs(10),
        }
    }

    /// Adds a bearer token for the origin of `url`.
    pub fn with_token(mut self, url: &str, token: SecretString) -> Self {
        if let Some(o) = origin(url) {
            self.credentials.insert(o, token);
        }
        self
    }
}

/// Why a [`A2aRemoteAgent`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum A2aRemoteError {
    /// The URL is not an `http` or `https` URL.
    #[error("remote A2A agent URL must start with http:// or https://")]
    BadUrl,
    /// A token would go over plain `http` to a host that is not loopback.
    #[error("the remote agent's token would cross the network in clear text: use an https:// URL")]
    TokenInClear,
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// `scheme://host[:port]` of an http(s) URL, lower-cased.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let default_port = if scheme == "http" { ":80" } else { ":443" };
    let authority = authority.strip_suffix(default_port).unwrap_or(&authority).to_string();
    Some(format!("{scheme}://{authority}"))
}

/// `url` as an error names it: scheme, host, port and path (no credentials, query or fragment,
/// which may hold a secret).
fn named(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                u.scheme(),
                u.host_str().unwrap_or_default(),
                u.path()
            )
        }
        Err(_) => "(an unreadable URL)".into(),
    }
}

/// An HTTP client error in plain words: what went wrong at the bottom of its causes (the
/// connection refused, reset or closed early), without the URL (errors name it themselves).
fn plain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        words = c.to_string();
        cause = c.source();
    }
    words
}

/// The interface a run posts to.
#[derive(Debug, Clone)]
struct Interface {
    url: String,
}

/// A remote A2A agent (see the module docs).
#[derive(Clone)]
pub struct A2aRemoteAgent {
    card_url: String,
    credentials: Arc<HashMap<String, SecretString>>,
    client: reqwest::Client,
    interface: Arc<OnceCell<Interface>>,
    /// local task id (scoped by the caller) → (remote task id, remote context id)
    tasks: Arc<Mutex<HashMap<ConversationKey, (String, String)>>>,
}

impl std::fmt::Debug for A2aRemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aRemoteAgent")
            .field("card_url", &self.card_url)
            .field("credential_origins", &self.credentials.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl A2aRemoteAgent {
    /// A remote agent for `config` (the card is fetched on the first run).
    pub fn new(config: A2aRemoteConfig) -> Result<Self, A2aRemoteError> {
        let url = config.url.trim().trim_end_matches('/');
        if origin(url).is_none() {
            return Err(A2aRemoteError::BadUrl);
        }
        if config.credentials.keys().any(|o| super::token_in_clear(o)) {
            return Err(A2aRemoteError::TokenInClear);
        }
        let card_url = if url.ends_with(".json") {
            url.to_string()
        } else {
            format!("{url}{}", crate::protocol::CARD_PATH)
        };
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| A2aRemoteError::Client(e.without_url().to_string()))?;
        Ok(A2aRemoteAgent {
            card_url,
            credentials: Arc::new(config.credentials),
            client,
            interface: Arc::new(OnceCell::new()),
            tasks: Arc::default(),
        })
    }

    fn token_for(&self, url: &str) -> Option<&SecretString> {
        origin(url).and_then(|o| self.credentials.get(&o))
    }

    /// Fetches the card and picks the JSON-RPC 1.0 interface on the card's origin.
    async fn discover(&self) -> Result<Interface, String> {
        let mut get = self.client.get(&self.card_url).header("A2A-Version", "1.0");
        if let Some(t) = self.token_for(&self.card_url) {
            get = get.bearer_auth(t.expose());
        }
        let card_url = named(&self.card_url);
        let resp = get
            .send()
            .await
            .map_err(|e| format!("cannot fetch the agent card {card_url}: {}", plain(&e.without_url())))?;
        if !resp.status().is_success() {
            return Err(format!(
                "the agent card {card_url} answered HTTP {}",
                resp.status().as_u16()
            ));
        }
        let text = resp
            .text()
            .await
            .map_err(|e| format!("cannot read the agent card {card_url}: {}", plain(&e.without_url())))?;
        let card: CardInterfaces =
            serde_json::from_str(&text).map_err(|e| format!("the agent card {card_url} is not a card: {e}"))?;
        let pick = card.supported_interfaces.into_iter().find(|i| {
            i.protocol_binding == "JSONRPC" && i.protocol_version.as_deref().is_none_or(|v| v.starts_with("1."))
        });
        let url = match pick {
            Some(i) => i.url,
            None => {
                return Err(format!(
                    "the agent card {card_url} lists no JSON-RPC interface of A2A 1.0"
                ))
            }
        };
        if origin(&url) != origin(&self.card_url) {
            return Err("the agent card's interface is on another origin than the card; refused".into());
        }
        Ok(Interface { url })
    }

    async fn post(
        &self,
        url: &str,
        body: String,
        stream: bool,
        trace: Option<&str>,
    ) -> Result<reqwest::Response, String> {
        let mut req = self
            .client
            .post(url)
            .header("A2A-Version", "1.0")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body);
        if let Some(t) = self.token_for(url) {
            req = req.bearer_auth(t.expose());
        }
        // the trace goes on to the next hop, under this call's span
        let span = tracing::debug_span!("backend.call", otel.kind = "client", e2a.backend = "a2a");
        for (name, value) in span
            .in_scope(|| trace.map(crate::web::trace::outgoing))
            .unwrap_or_default()
        {
            req = req.header(name, value);
        }
        tracing::Instrument::instrument(req.send(), span).await.map_err(|e| {
            format!(
                "the remote agent {} is unreachable: {}",
                named(url),
                plain(&e.without_url())
            )
        })
    }

    /// Sends `CancelTask` for a remote task (best effort).
    fn propagate_cancel(&self, url: String, remote_task: String) {
        let this = self.clone();
        tokio::spawn(async move {
            let body = call(A2aOperation::CancelTask, &TaskIdParams { id: &remote_task });
            match this.post(&url, body, false, None).await {
                Ok(r) => tracing::info!(
                    status = r.status().as_u16(),
                    "cancel propagated to the remote A2A agent"
                ),
                Err(e) => tracing::warn!(error = %e, "cannot propagate the cancel to the remote A2A agent"),
            }
        });
    }

    /// The remote task an event names, kept under the local task (scoped by the caller), so
    /// that a follow-up answers the same remote task; returns its id.
    fn remember(&self, event: &A2aStreamResponse, request: &E2AEnvelope, ctx: &RequestContext) -> Option<String> {
        let (task, context) = remote_task_and_context(event)?;
        if let Some(local) = request.task_id.clone() {
            self.tasks
                .lock()
                .insert(ctx.conversation(local), (task.to_string(), context.to_string()));
        }
        Some(task.to_string())
    }

    /// The A2A message for a request: the A2A message it came with, or its text, on the
    /// remote task that answers the request's task when there is one.
    fn message_for(&self, request: &E2AEnvelope, ctx: &RequestContext) -> A2aMessage {
        let given = request.params.get("message").cloned();
        let given = given.and_then(|m| serde_json::from_value::<GivenMessage>(m).ok());
        let given = given.unwrap_or_else(|| GivenMessage {
            parts: vec![text_part(crate::backends::request_text(request))],
            ..GivenMessage::default()
        });
        let known = request
            .task_id
            .as_ref()
            .and_then(|t| self.tasks.lock().get(&ctx.conversation(t.as_str())).cloned());
        let (task_id, context_id) = known.map(|(t, c)| (Some(t), Some(c))).unwrap_or_default();
        A2aMessage {
            message_id: e2a::stream::new_id(),
            role: A2aRole::RoleUser,
            task_id,
            context_id,
            parts: given.parts,
            metadata: given.metadata,
            extensions: given.extensions,
            reference_task_ids: given.reference_task_ids,
        }
    }
}

/// The message a request came with (its A2A `params.message`, or any message with `parts`):
/// what of it goes on to the remote agent. Its ids do not: the message gets a new id and the
/// remote task's ids.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GivenMessage {
    parts: Vec<A2aPart>,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    extensions: Vec<String>,
    #[serde(default)]
    reference_task_ids: Vec<String>,
}

/// The interfaces an agent card lists (the part of the card a run needs).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CardInterfaces {
    #[serde(default)]
    supported_interfaces: Vec<CardInterface>,
}

/// One `AgentInterface` of a card.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CardInterface {
    #[serde(default)]
    url: String,
    #[serde(default)]
    protocol_binding: String,
    #[serde(default)]
    protocol_version: Option<String>,
}

/// `CancelTask`'s params.
#[derive(Serialize)]
struct TaskIdParams<'a> {
    id: &'a str,
}

/// `SendStreamingMessage`'s params.
#[derive(Serialize)]
struct SendParams<'a> {
    message: &'a A2aMessage,
}

/// A JSON-RPC request of `operation` with `params`, as text.
fn call<P: Serialize>(operation: A2aOperation, params: &P) -> String {
    #[derive(Serialize)]
    struct Call<'a, P> {
        jsonrpc: &'static str,
        id: String,
        method: &'static str,
        params: &'a P,
    }
    let id = e2a::stream::new_id();
    serde_json::to_string(&Call {
        jsonrpc: "2.0",
        id,
        method: operation.as_str(),
        params,
    })
    .unwrap_or_default()
}

/// One event of the remote's stream: a JSON-RPC response whose result is a `StreamResponse`.
#[derive(Deserialize)]
struct RemoteEvent {
    #[serde(default)]
    result: Option<A2aStreamResponse>,
    #[serde(default)]
    error: Option<JsonRpcErrorBody>,
}

/// The final frame of a remote JSON-RPC error: its kind and code; the remote's own words
/// (which may echo what it was sent) go to the log only.
fn remote_error(s: ResponseStream, err: &JsonRpcErrorBody) -> E2AResponse {
    let code = err.code.map(Value::from).unwrap_or(Value::Null);
    let kind = ErrorKind::from_code(&code, "a2a");
    let detail = err.message.as_deref().unwrap_or("");
    tracing::warn!(remote_code = %code, detail, "the remote A2A agent answered an error");
    let message = format!("the remote agent failed ({})", kind.mapping().e2a_code);
    fail(s, kind, &message, details(&[("remote_code", code)]))
}

fn fail(s: ResponseStream, kind: ErrorKind, message: &str, details: Map<String, Value>) -> E2AResponse {
    s.fail(kind.mapping().e2a_code, message, details)
}

/// A remote agent's `SendStreamingMessage` answer, as SSE events.
type RemoteEvents = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>,
            > + Send,
    >,
>;

/// How long a run dropped before its remote task's id arrived waits for it (reading the
/// remote's stream on), so its cancel still reaches the remote task.
const CANCEL_LEARN: Duration = Duration::from_secs(2);

/// Sends `CancelTask` for the remote task when a run is dropped before its end (the gateway
/// stops polling a cancelled run, so this is where the cancel is seen). It holds the remote's
/// stream: a run dropped before the remote task's id arrived reads on for it.
struct CancelOnDrop {
    agent: A2aRemoteAgent,
    url: String,
    task: Option<String>,
    done: bool,
    events: Option<RemoteEvents>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.done || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(task) = self.task.take() {
            self.agent.propagate_cancel(self.url.clone(), task);
            return;
        }
        let Some(mut events) = self.events.take() else { return };
        let (agent, url) = (self.agent.clone(), self.url.clone());
        tokio::spawn(async move {
            let learn = async {
                while let Some(Ok(ev)) = events.next().await {
                    let Ok(RemoteEvent {
                        result: Some(event), ..
                    }) = serde_json::from_str(&ev.data)
                    else {
                        continue;
                    };
                    if let Some((task, _)) = remote_task_and_context(&event) {
                        return Some(task.to_string());
                    }
                }
                None
            };
            if let Ok(Some(task)) = tokio::time::timeout(CANCEL_LEARN, learn).await {
                agent.propagate_cancel(url, task);
            }
        });
    }
}

/// The remote task and its context an event of the remote's stream names.
fn remote_task_and_context(event: &A2aStreamResponse) -> Option<(&str, &str)> {
    match event {
        A2aStreamResponse::Task(t) => Some((&t.id, &t.context_id)),
        A2aStreamResponse::StatusUpdate(u) => Some((&u.task_id, &u.context_id)),
        A2aStreamResponse::ArtifactUpdate(_) | A2aStreamResponse::Message(_) => None,
    }
}

/// Why a run could not start: the error frame's kind, message and details.
type OpenError = (ErrorKind, String, Map<String, Value>);

impl A2aRemoteAgent {
    /// Sends the run's `SendStreamingMessage` (after finding the agent's interface): the
    /// interface and the streaming answer, or why not.
    async fn open(
        &self,
        request: &E2AEnvelope,
        ctx: &RequestContext,
    ) -> Result<(Interface, reqwest::Response), OpenError> {
        let interface = match self.interface.get_or_try_init(|| self.discover()).await {
            Ok(i) => i.clone(),
            Err(e) => {
                tracing::warn!(error = %e, "remote A2A agent unusable");
                return Err((ErrorKind::AgentError, e, Map::new()));
            }
        };
        let message = self.message_for(request, ctx);
        let body = call(A2aOperation::SendStreamingMessage, &SendParams { message: &message });
        let sent = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                return Err((ErrorKind::Cancelled, "the run was cancelled".into(), Map::new()));
            }
            r = self.post(&interface.url, body, true, request.correlation_id.as_deref()) => r,
        };
        let resp = sent.map_err(|e| (ErrorKind::AgentError, e, Map::new()))?;
        let status = resp.status();
        if !status.is_success() {
            let kind = if status.as_u16() == 401 {
                ErrorKind::AuthRequired
            } else {
                ErrorKind::AgentError
            };
            let message = format!(
                "the remote agent {} answered HTTP {}",
                named(&interface.url),
                status.as_u16()
            );
            return Err((kind, message, details(&[("http_status", status.as_u16().into())])));
        }
        Ok((interface, resp))
    }
}

impl Agent for A2aRemoteAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            let fresh = ResponseStream::for_request(&request);
            let (interface, resp) = match this.open(&request, &ctx).await {
                Ok(opened) => opened,
                Err((kind, message, d)) => {
                    yield fail(fresh, kind, &message, d);
                    return;
                }
            };
            let mut mapper = A2aStreamReader::new(fresh);
            let events: RemoteEvents = Box::pin(resp.bytes_stream().eventsource());
            let mut guard = CancelOnDrop { agent: this.clone(), url: interface.url.clone(), task: None, done: false, events: Some(events) };
            loop {
                let next = tokio::select! {
                    _ = ctx.cancel.cancelled() => {
                        // a well-behaved end: the final frame says why (the drop guard cancels
                        // the remote task)
                        if let Some(s) = mapper.take_stream() {
                            yield fail(s, ErrorKind::Cancelled, "the run was cancelled", Map::new());
                        }
                        return;
                    }
                    n = async {
                        match guard.events.as_mut() {
                            Some(events) => events.next().await,
                            None => None,
                        }
                    } => n,
                };
                let data: RemoteEvent = match next {
                    None => {
                        guard.done = true;
                        return;
                    }
                    Some(Err(e)) => {
                        // the remote's stream is gone: no cancel was asked, none is sent
                        guard.done = true;
                        if let Some(s) = mapper.take_stream() {
                            let why = format!("the remote agent {}'s stream broke: {}", named(&interface.url), plain(&e));
                            yield fail(s, ErrorKind::AgentError, &why, Map::new());
                        }
                        return;
                    }
                    Some(Ok(ev)) => match serde_json::from_str(&ev.data) {
                        Ok(v) => v,
                        Err(_) => continue,
                    },
                };
                if let Some(err) = &data.error {
                    // the remote ended the run itself: nothing to cancel
                    guard.done = true;
                    if let Some(s) = mapper.take_stream() {
                        yield remote_error(s, err);
                    }
                    return;
                }
                let Some(result) = &data.result else { continue };
                if let Some(task) = this.remember(result, &request, &ctx) {
                    guard.task = Some(task);
                }
                for f in mapper.push(result) {
                    yield f;
                }
                if mapper.is_done() {
                    guard.done = true;
                    return;
                }
            }
        })
    }

    fn name(&self) -> String {
        format!("a2a:{}", self.card_url)
    }

    /// The remote task behind a local one is known only in this process: without it an answer
    /// would start a new remote task.
    fn holds_pause(&self, key: &ConversationKey) -> Option<bool> {
        Some(self.tasks.lock().contains_key(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_a_url_without_its_secrets() {
        assert_eq!(
            named("https://u:pw@agents.example:8443/a2a?key=s3cret#x"),
            "https://agents.example:8443/a2a"
        );
        assert_eq!(
            named("http://127.0.0.1/.well-known/agent-card.json"),
            "http://127.0.0.1/.well-known/agent-card.json"
        );
    }

    #[test]
    fn origins() {
        assert_eq!(origin("http://127.0.0.1:80/a"), Some("http://127.0.0.1".into()));
        assert_eq!(
            origin("HTTPS://Example.com:8443/x?y"),
            Some("https://example.com:8443".into())
        );
        assert_eq!(origin("ftp://x"), None);
        assert_eq!(origin("http://user@evil"), None);
        let c = A2aRemoteConfig::new("http://a").with_token("http://a/x", SecretString::new("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
