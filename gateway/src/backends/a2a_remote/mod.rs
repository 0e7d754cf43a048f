//! A remote A2A agent as the gateway's backend (`e2a serve --agent a2a:URL`).
//!
//! The agent card is discovered at `<URL>/.well-known/agent-card.json` (or `URL` itself when
//! it names a `.json` card); its JSON-RPC interface of protocol 1.0 is used — else its HTTP+JSON
//! one (GoAI's agents list only that: `message:stream`, `tasks/{id}:cancel`), else the same of
//! A2A 0.3, spoken in 0.3 ([`e2a::a2a::v0_3`]; [`A2aRemoteConfig::version`] overrides the card's
//! label) — and refused when it is on another origin than the card. Redirects are never followed. A bearer credential is
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
//!
//! With callbacks ([`A2aRemoteConfig::callbacks`], `delegate = "callback"`), a run is delegated
//! instead: one `SendMessage` that returns at once, then the child's callback ([`delegate`]).

mod callbacks;
mod cancel;
mod card;
mod claims;
mod delegate;
mod exchange;
mod urls;

pub use callbacks::Callbacks;
pub(crate) use callbacks::{CallbackError, Delivered};
pub use delegate::DELEGATION_EXTENSION;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::{E2AEnvelope, SecretString};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use e2a::a2a::inbound::A2aStreamReader;
use e2a::a2a::stream::text_part;
use e2a::types::{A2aMessage, A2aPart, A2aRole, A2aStreamResponse, JsonRpcErrorBody};

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext};
use crate::pipeline::boundary::details;
use cancel::CancelOnDrop;
use exchange::Interface;
use urls::{named, origin, plain};

/// Where a [`A2aRemoteAgent`] goes and with which credentials.
#[derive(Debug, Clone)]
pub struct A2aRemoteConfig {
    /// The agent's base URL (its card is at `<url>/.well-known/agent-card.json`) or the card URL.
    pub url: String,
    /// Bearer tokens by origin (`https://host:port`); a token is only sent to its origin.
    pub credentials: HashMap<String, SecretString>,
    /// Timeout for connecting.
    pub connect_timeout: Duration,
    /// The machine identity its requests are signed with (GoAI-HMAC-SHA256), to the origin
    /// of `url` only.
    pub signer: Option<crate::web::hmac::Signer>,
    /// Where its delegated tasks call back (`delegate = "callback"`): with them, every run is
    /// delegated ([`Callbacks`]); without, every run is one `SendStreamingMessage`.
    pub callbacks: Option<Callbacks>,
    /// The A2A version it is spoken to in, whatever its card says (`None`: the card's).
    pub version: Option<e2a::types::A2aVersion>,
}

impl A2aRemoteConfig {
    /// A configuration for `url` without credentials.
    pub fn new(url: impl Into<String>) -> Self {
        A2aRemoteConfig {
            url: url.into(),
            credentials: HashMap::new(),
            connect_timeout: Duration::from_secs(10),
            signer: None,
            callbacks: None,
            version: None,
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
    /// A delegated task's token would be posted over plain `http` to a host that is not
    /// loopback.
    #[error("the callback URL would carry the task's token in clear text: use an https:// callback_base_url (http only on loopback)")]
    CallbackInClear,
}

/// A remote A2A agent (see the module docs).
#[derive(Clone)]
pub struct A2aRemoteAgent {
    card_url: String,
    credentials: Arc<HashMap<String, SecretString>>,
    /// The signer of requests to the origin of the card (`signer_origin`).
    signer: Option<Arc<(String, crate::web::hmac::Signer)>>,
    client: reqwest::Client,
    interface: Arc<OnceCell<Interface>>,
    /// local task id (scoped by the caller) → (remote task id, remote context id)
    tasks: Arc<Mutex<HashMap<ConversationKey, (String, String)>>>,
    /// Where its delegated tasks call back (`None`: runs stream).
    callbacks: Option<Callbacks>,
    /// The A2A version it is spoken to in (`None`: its card's).
    version: Option<e2a::types::A2aVersion>,
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
        let mut agent = A2aRemoteAgent {
            card_url,
            credentials: Arc::new(config.credentials),
            signer: config.signer.and_then(|s| origin(url).map(|o| Arc::new((o, s)))),
            client,
            interface: Arc::new(OnceCell::new()),
            tasks: Arc::default(),
            callbacks: None,
            version: config.version,
        };
        if let Some(callbacks) = config.callbacks {
            // its callbacks read and cancel child tasks with its twin without them (no cycle)
            callbacks.serve(agent.clone());
            agent.callbacks = Some(callbacks);
        }
        Ok(agent)
    }

    fn token_for(&self, url: &str) -> Option<&SecretString> {
        origin(url).and_then(|o| self.credentials.get(&o))
    }

    /// `req` (`method` to `url` with `body`) with its credential: the agent's signature when
    /// it signs and `url` is on its origin (a signed request's Authorization is its
    /// signature), else the origin's bearer token.
    fn credited(
        &self,
        mut req: reqwest::RequestBuilder,
        method: &str,
        url: &str,
        body: &[u8],
    ) -> reqwest::RequestBuilder {
        match &self.signer {
            Some(s) if origin(url).as_deref() == Some(s.0.as_str()) => {
                for (name, value) in s.1.headers(method, url, body) {
                    req = req.header(name, value);
                }
                req
            }
            _ => match self.token_for(url) {
                Some(t) => req.bearer_auth(t.expose()),
                None => req,
            },
        }
    }

    /// The remote task an event names, kept under the local task (scoped by the caller), so
    /// that a follow-up answers the same remote task — in the gateway's store too when it has
    /// one, so that an answer after a restart, or on another gateway, still does; returns its
    /// id.
    async fn remember(&self, event: &A2aStreamResponse, request: &E2AEnvelope, ctx: &RequestContext) -> Option<String> {
        let (task, context) = remote_task_and_context(event)?;
        let remote = (task.to_string(), context.to_string());
        if let Some(local) = request.task_id.clone() {
            let key = ctx.conversation(local);
            let new = self.tasks.lock().insert(key.clone(), remote.clone()).as_ref() != Some(&remote);
            if let (true, Some(store)) = (new, ctx.pauses()) {
                let text = serde_json::json!({"remote_task": remote.0, "remote_context": remote.1}).to_string();
                if let Err(e) = store.put_pause(&key.pause_key(), text).await {
                    tracing::warn!(error = %e, "cannot store the remote task of a local one: it lives in this process only");
                }
            }
        }
        Some(task.to_string())
    }

    /// The remote task behind the local task of `request`: known in this process, else read
    /// from the gateway's store (kept by an earlier process or another gateway).
    async fn recall(&self, request: &E2AEnvelope, ctx: &RequestContext) {
        let (Some(local), Some(store)) = (request.task_id.as_ref(), ctx.pauses()) else {
            return;
        };
        let key = ctx.conversation(local.as_str());
        if self.tasks.lock().contains_key(&key) {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Kept {
            remote_task: String,
            remote_context: String,
        }
        match store.get_pause(&key.pause_key()).await {
            Ok(Some(text)) => match serde_json::from_str::<Kept>(&text) {
                Ok(k) => {
                    self.tasks.lock().insert(key, (k.remote_task, k.remote_context));
                }
                Err(e) => tracing::error!(error = %e, "a stored remote task cannot be read"),
            },
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "cannot read the remote task of a local one"),
        }
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

/// One event of the remote's stream: a JSON-RPC response whose result is a `StreamResponse`
/// (on HTTP+JSON, the `StreamResponse` itself, or an AIP-193 `{"error": …}`).
#[derive(Deserialize)]
struct RemoteEvent {
    #[serde(default)]
    result: Option<A2aStreamResponse>,
    #[serde(default)]
    error: Option<JsonRpcErrorBody>,
}

impl RemoteEvent {
    /// The event of an SSE `data` from `interface`; `None` for one that is neither.
    fn read(interface: &Interface, data: &str) -> Option<RemoteEvent> {
        // a 0.3 event is read back as 1.0 first
        let read_back;
        let data = if interface.v0_3 {
            read_back = interface.event(data)?.to_string();
            read_back.as_str()
        } else {
            data
        };
        match interface.wire {
            exchange::Wire::JsonRpc => serde_json::from_str(data).ok(),
            exchange::Wire::Rest => match serde_json::from_str::<A2aStreamResponse>(data) {
                Ok(event) => Some(RemoteEvent {
                    result: Some(event),
                    error: None,
                }),
                Err(_) => {
                    // an AIP-193 error: its words only (its `code` is an HTTP status)
                    let v: Value = serde_json::from_str(data).ok()?;
                    let message = v.pointer("/error/message")?.as_str()?.to_string();
                    Some(RemoteEvent {
                        result: None,
                        error: Some(JsonRpcErrorBody {
                            code: None,
                            data: None,
                            message: Some(message),
                            extra: Map::new(),
                        }),
                    })
                }
            },
        }
    }
}

/// The final frame of a remote JSON-RPC error: its kind and code; the remote's own words
/// (which may echo what it was sent) go to the log only.
fn remote_error(s: ResponseStream, err: &JsonRpcErrorBody) -> Frame {
    let code = err.code.map(Value::from).unwrap_or(Value::Null);
    let kind = ErrorKind::from_code(&code, "a2a");
    let detail = err.message.as_deref().unwrap_or("");
    tracing::warn!(remote_code = %code, detail, "the remote A2A agent answered an error");
    let message = format!("the remote agent failed ({})", kind.mapping().e2a_code);
    fail(s, kind, &message, details(&[("remote_code", code)]))
}

fn fail(s: ResponseStream, kind: ErrorKind, message: &str, details: Map<String, Value>) -> Frame {
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

/// The remote task and its context an event of the remote's stream names.
fn remote_task_and_context(event: &A2aStreamResponse) -> Option<(&str, &str)> {
    match event {
        A2aStreamResponse::Task(t) => Some((&t.id, &t.context_id)),
        A2aStreamResponse::StatusUpdate(u) => Some((&u.task_id, &u.context_id)),
        A2aStreamResponse::ArtifactUpdate(_) | A2aStreamResponse::Message(_) => None,
    }
}

impl Agent for A2aRemoteAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        if let Some(callbacks) = &self.callbacks {
            return self.delegated(callbacks.clone(), request, ctx);
        }
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
            let mut guard = CancelOnDrop { agent: this.clone(), interface: interface.clone(), task: None, done: false, events: Some(events) };
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
                    Some(Ok(ev)) => match RemoteEvent::read(&interface, &ev.data) {
                        Some(v) => v,
                        None => continue,
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
                if let Some(task) = this.remember(result, &request, &ctx).await {
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

    /// The remote task behind a local one is known in this process (or, when the gateway has a
    /// store, there: the gateway looks before it refuses): without it an answer would start a
    /// new remote task.
    fn holds_pause(&self, key: &ConversationKey) -> Option<bool> {
        Some(self.tasks.lock().contains_key(key))
    }
}
