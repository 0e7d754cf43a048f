//! The HTTP exchanges with the remote agent: its card discovered (the JSON-RPC interface it
//! lists on its own origin, else its HTTP+JSON one: GoAI's agents serve HTTP+JSON alone), the
//! run's `SendStreamingMessage` posted, a `CancelTask` sent for a cancelled run — each with the
//! origin's credential and the trace.

use e2a::taxonomy::ErrorKind;
use e2a::types::{A2aMessage, A2aOperation};
use e2a::E2AEnvelope;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::urls::{named, origin, plain};
use super::A2aRemoteAgent;
use crate::agent::RequestContext;
use crate::pipeline::boundary::details;

/// The interface a run posts to.
#[derive(Debug, Clone)]
pub(super) struct Interface {
    /// The interface's URL: where JSON-RPC requests are posted, the HTTP+JSON routes' base.
    pub(super) url: String,
    /// Its binding.
    pub(super) wire: Wire,
}

/// The A2A binding of an [`Interface`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    /// JSON-RPC: each request a JSON-RPC call to the URL, each event a JSON-RPC response.
    JsonRpc,
    /// HTTP+JSON: `message:stream` and `tasks/{id}:cancel` under the URL, each event a
    /// `StreamResponse`.
    Rest,
}

impl Interface {
    /// Where a run's streaming send goes, and its body.
    fn streaming_send(&self, message: &A2aMessage) -> (String, String) {
        match self.wire {
            Wire::JsonRpc => (
                self.url.clone(),
                call(A2aOperation::SendStreamingMessage, &SendParams { message }),
            ),
            Wire::Rest => (
                format!("{}/message:stream", self.url.trim_end_matches('/')),
                serde_json::to_string(&SendParams { message }).unwrap_or_default(),
            ),
        }
    }

    /// Where a `SendMessage` with `params` (a `SendMessageRequest`) goes, and its body.
    pub(super) fn send(&self, params: &Value) -> (String, String) {
        match self.wire {
            Wire::JsonRpc => (self.url.clone(), call(A2aOperation::SendMessage, params)),
            Wire::Rest => (
                format!("{}/message:send", self.url.trim_end_matches('/')),
                params.to_string(),
            ),
        }
    }

    /// How remote task `task` is read: JSON-RPC's `GetTask` (a POST), else HTTP+JSON's
    /// `GET tasks/{id}` (no body).
    pub(super) fn get_task(&self, task: &str) -> (String, Option<String>) {
        match self.wire {
            Wire::JsonRpc => (
                self.url.clone(),
                Some(call(A2aOperation::GetTask, &TaskIdParams { id: task })),
            ),
            Wire::Rest => (
                format!(
                    "{}/tasks/{}",
                    self.url.trim_end_matches('/'),
                    crate::protocol::path_segment(task)
                ),
                None,
            ),
        }
    }

    /// The answer of a call that is not a stream: JSON-RPC's `result` (or its `error`),
    /// HTTP+JSON's body (or its AIP-193 `error`'s message).
    pub(super) fn answer(&self, text: &str) -> Result<Value, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("the remote agent's answer is not JSON: {e}"))?;
        let error = |v: &Value| {
            v.get("error").map(|e| {
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error")
                    .to_string()
            })
        };
        if let Some(e) = error(&v) {
            return Err(format!("the remote agent answered: {e}"));
        }
        match self.wire {
            Wire::JsonRpc => v
                .get("result")
                .cloned()
                .ok_or_else(|| "the remote agent's JSON-RPC answer has no result".to_string()),
            Wire::Rest => Ok(v),
        }
    }

    /// Where the cancel of remote task `task` goes, and its body.
    fn cancel(&self, task: &str) -> (String, String) {
        match self.wire {
            Wire::JsonRpc => (
                self.url.clone(),
                call(A2aOperation::CancelTask, &TaskIdParams { id: task }),
            ),
            Wire::Rest => (
                format!(
                    "{}/tasks/{}:cancel",
                    self.url.trim_end_matches('/'),
                    crate::protocol::path_segment(task)
                ),
                "{}".into(),
            ),
        }
    }
}

impl A2aRemoteAgent {
    /// The interface runs post to: found from the card on the first run, then kept.
    pub(super) async fn interface(&self) -> Result<Interface, OpenError> {
        match self.interface.get_or_try_init(|| self.discover()).await {
            Ok(i) => Ok(i.clone()),
            Err(e) => {
                tracing::warn!(error = %e, "remote A2A agent unusable");
                Err((ErrorKind::AgentError, e, Map::new()))
            }
        }
    }

    /// Fetches the card and picks the JSON-RPC 1.0 interface on the card's origin.
    async fn discover(&self) -> Result<Interface, String> {
        let get = self.client.get(&self.card_url).header("A2A-Version", "1.0");
        let get = self.credited(get, "GET", &self.card_url, b"");
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
        // JSON-RPC when the card lists it, else HTTP+JSON; A2A 1.0 either way
        let of = |binding: &str| {
            card.supported_interfaces.iter().find(|i| {
                i.protocol_binding == binding && i.protocol_version.as_deref().is_none_or(|v| v.starts_with("1."))
            })
        };
        let (url, wire) = match (of("JSONRPC"), of("HTTP+JSON")) {
            (Some(i), _) => (i.url.clone(), Wire::JsonRpc),
            (None, Some(i)) => (i.url.clone(), Wire::Rest),
            (None, None) => {
                return Err(format!(
                    "the agent card {card_url} lists no JSON-RPC or HTTP+JSON interface of A2A 1.0"
                ))
            }
        };
        if origin(&url) != origin(&self.card_url) {
            return Err("the agent card's interface is on another origin than the card; refused".into());
        }
        Ok(Interface { url, wire })
    }

    /// POSTs a JSON-RPC `body` to `url` (with the origin's credential and the trace of
    /// `trace`), asking for an event stream or JSON; the answer, or why the remote is unreachable.
    async fn post(
        &self,
        url: &str,
        body: String,
        stream: bool,
        trace: Option<&str>,
    ) -> Result<reqwest::Response, String> {
        let req = self
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
            );
        let mut req = self.credited(req, "POST", url, body.as_bytes()).body(body);
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

    /// Calls the remote without a stream: `body` POSTed to `url` (GET without a body), with the
    /// origin's credential and the trace of `trace`; the answer's JSON ([`Interface::answer`]),
    /// or why not.
    pub(super) async fn call_json(
        &self,
        interface: &Interface,
        url: &str,
        body: Option<String>,
        trace: Option<&str>,
    ) -> Result<Value, String> {
        let resp = match body {
            Some(body) => self.post(url, body, false, trace).await?,
            None => {
                let get = self.client.get(url).header("A2A-Version", "1.0");
                self.credited(get, "GET", url, b"").send().await.map_err(|e| {
                    format!(
                        "the remote agent {} is unreachable: {}",
                        named(url),
                        plain(&e.without_url())
                    )
                })?
            }
        };
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| format!("cannot read the remote agent's answer: {}", plain(&e.without_url())))?;
        match interface.answer(&text) {
            Ok(v) if status.is_success() => Ok(v),
            Ok(_) => Err(format!(
                "the remote agent {} answered HTTP {}",
                named(url),
                status.as_u16()
            )),
            Err(e) => Err(e),
        }
    }

    /// Sends `CancelTask` for a remote task (best effort).
    pub(super) fn propagate_cancel(&self, interface: Interface, remote_task: String) {
        let this = self.clone();
        tokio::spawn(async move {
            let (url, body) = interface.cancel(&remote_task);
            match this.post(&url, body, false, None).await {
                Ok(r) => tracing::info!(
                    status = r.status().as_u16(),
                    "cancel propagated to the remote A2A agent"
                ),
                Err(e) => tracing::warn!(error = %e, "cannot propagate the cancel to the remote A2A agent"),
            }
        });
    }
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

/// Why a run could not start: the error frame's kind, message and details.
pub(super) type OpenError = (ErrorKind, String, Map<String, Value>);

impl A2aRemoteAgent {
    /// Sends the run's `SendStreamingMessage` (after finding the agent's interface): the
    /// interface and the streaming answer, or why not.
    pub(super) async fn open(
        &self,
        request: &E2AEnvelope,
        ctx: &RequestContext,
    ) -> Result<(Interface, reqwest::Response), OpenError> {
        let interface = self.interface().await?;
        self.recall(request, ctx).await;
        let message = self.message_for(request, ctx);
        let (url, body) = interface.streaming_send(&message);
        let sent = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                return Err((ErrorKind::Cancelled, "the run was cancelled".into(), Map::new()));
            }
            r = self.post(&url, body, true, request.correlation_id.as_deref()) => r,
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
