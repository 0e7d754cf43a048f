//! The HTTP exchanges with the remote agent: its card discovered (the JSON-RPC interface it
//! lists on its own origin, else its HTTP+JSON one: GoAI's agents serve HTTP+JSON alone), the
//! run's `SendStreamingMessage` posted, a `CancelTask` sent for a cancelled run — each with the
//! origin's credential and the trace.

use e2a::a2a::v0_3;
use e2a::taxonomy::ErrorKind;
use e2a::types::{A2aMessage, A2aOperation};
use e2a::E2AEnvelope;
use serde::Serialize;
use serde_json::{Map, Value};

use super::urls::{named, plain};
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
    /// Whether it speaks A2A 0.3 ([`e2a::a2a::v0_3`]) rather than 1.0.
    pub(super) v0_3: bool,
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
    /// Its 0.3 wire, when it speaks 0.3.
    fn dialect(&self) -> Option<v0_3::Wire> {
        self.v0_3.then_some(match self.wire {
            Wire::JsonRpc => v0_3::Wire::JsonRpc,
            Wire::Rest => v0_3::Wire::Rest,
        })
    }

    /// The `A2A-Version` its requests carry.
    pub(super) fn version(&self) -> &'static str {
        if self.v0_3 {
            "0.3"
        } else {
            "1.0"
        }
    }

    /// The JSON-RPC method of `op` in its version.
    fn method(&self, op: A2aOperation) -> &'static str {
        if self.v0_3 {
            v0_3::method(op)
        } else {
            op.as_str()
        }
    }

    /// The URL of HTTP+JSON route `tail` (`/message:send`) in its version.
    fn route(&self, tail: &str) -> String {
        let prefix = if self.v0_3 { v0_3::REST_PREFIX } else { "" };
        format!("{}{prefix}{tail}", self.url.trim_end_matches('/'))
    }

    /// A `SendMessageRequest` (1.0's JSON) as its version writes it.
    fn params(&self, params: &Value) -> Option<Value> {
        self.dialect().map(|d| v0_3::send_params(params, d))
    }

    /// Where a run's streaming send goes, and its body.
    fn streaming_send(&self, message: &A2aMessage) -> (String, String) {
        let params = SendParams { message };
        let legacy = self
            .dialect()
            .map(|d| v0_3::send_params(&serde_json::to_value(&params).unwrap_or_default(), d));
        match (self.wire, legacy) {
            (Wire::JsonRpc, Some(p)) => (
                self.url.clone(),
                call(self.method(A2aOperation::SendStreamingMessage), &p),
            ),
            (Wire::JsonRpc, None) => (
                self.url.clone(),
                call(A2aOperation::SendStreamingMessage.as_str(), &params),
            ),
            (Wire::Rest, Some(p)) => (self.route("/message:stream"), p.to_string()),
            (Wire::Rest, None) => (
                self.route("/message:stream"),
                serde_json::to_string(&params).unwrap_or_default(),
            ),
        }
    }

    /// Where a `SendMessage` with `params` (a `SendMessageRequest`) goes, and its body.
    pub(super) fn send(&self, params: &Value) -> (String, String) {
        let legacy = self.params(params);
        let params = legacy.as_ref().unwrap_or(params);
        match self.wire {
            Wire::JsonRpc => (self.url.clone(), call(self.method(A2aOperation::SendMessage), params)),
            Wire::Rest => (self.route("/message:send"), params.to_string()),
        }
    }

    /// How remote task `task` is read: JSON-RPC's `GetTask` (a POST), else HTTP+JSON's
    /// `GET tasks/{id}` (no body).
    pub(super) fn get_task(&self, task: &str) -> (String, Option<String>) {
        match self.wire {
            Wire::JsonRpc => (
                self.url.clone(),
                Some(call(self.method(A2aOperation::GetTask), &TaskIdParams { id: task })),
            ),
            Wire::Rest => (
                self.route(&format!("/tasks/{}", crate::protocol::path_segment(task))),
                None,
            ),
        }
    }

    /// A send's answer (1.0's `SendMessageResponse` JSON, read back from 0.3 when it speaks 0.3).
    pub(super) fn sent(&self, answer: Value) -> Value {
        match self.dialect() {
            Some(d) => v0_3::stream_response(answer, d),
            None => answer,
        }
    }

    /// A `GetTask` answer (1.0's `Task` JSON, read back from 0.3 when it speaks 0.3).
    pub(super) fn task(&self, answer: Value) -> Value {
        match self.dialect() {
            Some(d) => v0_3::task(answer, d),
            None => answer,
        }
    }

    /// One event of a streaming answer (an SSE `data`) as 1.0's `StreamResponse` JSON: the
    /// `result` of a JSON-RPC response or an HTTP+JSON event, read back from 0.3 when it speaks
    /// 0.3; `None` when it is not JSON.
    pub(super) fn event(&self, data: &str) -> Option<Value> {
        let v: Value = serde_json::from_str(data).ok()?;
        let Some(d) = self.dialect() else { return Some(v) };
        Some(match (self.wire, v) {
            (Wire::JsonRpc, Value::Object(mut response)) => {
                if let Some(result) = response.get_mut("result") {
                    *result = v0_3::stream_response(result.take(), d);
                }
                Value::Object(response)
            }
            (_, v) => v0_3::stream_response(v, d),
        })
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
                call(self.method(A2aOperation::CancelTask), &TaskIdParams { id: task }),
            ),
            Wire::Rest => (
                self.route(&format!("/tasks/{}:cancel", crate::protocol::path_segment(task))),
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

    /// POSTs a JSON-RPC `body` to `url` (with the origin's credential and the trace of
    /// `trace`), asking for an event stream or JSON; the answer, or why the remote is unreachable.
    async fn post(
        &self,
        version: &'static str,
        url: &str,
        body: String,
        stream: bool,
        trace: Option<&str>,
    ) -> Result<reqwest::Response, String> {
        let req = self
            .client
            .post(url)
            .header("A2A-Version", version)
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
            Some(body) => self.post(interface.version(), url, body, false, trace).await?,
            None => {
                let get = self.client.get(url).header("A2A-Version", interface.version());
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
            match this.post(interface.version(), &url, body, false, None).await {
                Ok(r) => tracing::info!(
                    status = r.status().as_u16(),
                    "cancel propagated to the remote A2A agent"
                ),
                Err(e) => tracing::warn!(error = %e, "cannot propagate the cancel to the remote A2A agent"),
            }
        });
    }
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
fn call<P: Serialize>(method: &str, params: &P) -> String {
    #[derive(Serialize)]
    struct Call<'a, P> {
        jsonrpc: &'static str,
        id: String,
        method: &'a str,
        params: &'a P,
    }
    let id = e2a::stream::new_id();
    serde_json::to_string(&Call {
        jsonrpc: "2.0",
        id,
        method,
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
            r = self.post(interface.version(), &url, body, true, request.correlation_id.as_deref()) => r,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_0_3_interface_is_written_to_in_0_3() {
        let i = Interface {
            url: "http://h/a/".into(),
            wire: Wire::Rest,
            v0_3: true,
        };
        assert_eq!(i.get_task("t 1").0, "http://h/a/v1/tasks/t%201");
        assert_eq!(i.cancel("t").0, "http://h/a/v1/tasks/t:cancel");
        let (url, body) = i.send(&json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}));
        assert_eq!(url, "http://h/a/v1/message:send");
        assert_eq!(
            serde_json::from_str::<Value>(&body).ok(),
            Some(json!({"message": {"role": "ROLE_USER", "content": [{"text": "x"}]}}))
        );
        let rpc = Interface {
            wire: Wire::JsonRpc,
            ..i.clone()
        };
        let (url, body) = rpc.get_task("t");
        let body: Value = serde_json::from_str(&body.unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            (url.as_str(), &body["method"], &body["params"]),
            ("http://h/a/", &json!("tasks/get"), &json!({"id": "t"}))
        );
        let event = json!({"jsonrpc": "2.0", "id": "1", "result": {"kind": "status-update", "taskId": "t",
            "contextId": "c", "final": true, "status": {"state": "completed"}}});
        assert_eq!(
            rpc.event(&event.to_string()).map(|v| v["result"].clone()),
            Some(
                json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}})
            )
        );
        assert_eq!(rpc.version(), "0.3");
    }
}
