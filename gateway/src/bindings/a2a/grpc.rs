//! The A2A gRPC binding: `lf.a2a.v1.A2AService` (A2A 1.0 §10) with the official generated
//! types and service of `a2a-pb`, every method on the same [`TaskService`] as the JSON-RPC and
//! HTTP+JSON bindings.
//!
//! It is served on the gateway's HTTP port: the server speaks HTTP/1.1 and HTTP/2 (h2c, and
//! HTTP/2 over TLS behind a proxy) on one listener, and gRPC's paths
//! (`/lf.a2a.v1.A2AService/SendMessage`, …) are routes like the others. One port means one
//! address in the card (`supportedInterfaces`, `protocolBinding: GRPC`), one set of
//! credentials, one drain on shutdown and one place for a proxy to send traffic; a separate
//! port would only add an address to configure and keep in sync.
//!
//! A request is the binding's protobuf message; the binding reads it as its ProtoJSON form
//! (what the JSON-RPC binding receives as `params`) and writes the answer's ProtoJSON back as
//! protobuf: the bindings share one decoding and one encoding of every A2A shape. The
//! credential is the `authorization` metadata (`Bearer …`), checked like the HTTP bindings'
//! `Authorization`; `a2a-version`, `a2a-extensions`, `traceparent` and `last-event-id` are read
//! from metadata too. Errors are `google.rpc.Status` with an `ErrorInfo` (domain
//! `a2a-protocol.org`, the A2A reason), the codes of the other bindings' errors.

use std::pin::Pin;
use std::sync::Arc;

use a2a_pb::proto as pb;
use a2a_pb::protojson as pj;
use axum::http::HeaderMap;
use futures_util::{Stream, StreamExt};
use serde_json::{Map, Value};
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::agent::Caller;
use crate::tasks::error::A2aError;
use crate::tasks::request::{read, CallContext};
use crate::tasks::{EventStream, SendParams, Sent, TaskService};

/// The gRPC routes (`/lf.a2a.v1.A2AService/*`) of `state`, to merge into the gateway's.
pub(crate) fn router(state: Arc<TaskService>, edge: &crate::web::edge::Edge) -> axum::Router {
    let max = state.pipeline().config.limits.max_bytes;
    // a call's message must arrive within the body-read timeout, as the JSON bindings' bodies
    let deadline = state.pipeline().config.server.body_read_timeout;
    use tonic::server::NamedService;
    type Server = pb::a2a_service_server::A2aServiceServer<Grpc>;
    let service = Server::new(Grpc { state })
        .max_decoding_message_size(max)
        .max_encoding_message_size(usize::MAX);
    // the service's own routes, no fallback of their own (unknown paths stay the gateway's);
    // each call in a `request` span, a child of the caller's `traceparent` metadata (the
    // service authenticates each call itself, its errors gRPC statuses)
    let routes = axum::Router::new().route_service(&format!("/{}/{{*method}}", Server::NAME), service);
    edge.traced().with_deadline(deadline).around(routes)
}

struct Grpc {
    state: Arc<TaskService>,
}

/// A stream of `StreamResponse`s.
type Events = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send + 'static>>;

/// An A2A error as a gRPC status: the code of its HTTP status (AIP-193's mapping), its message,
/// and an `ErrorInfo` with its A2A reason (what the official clients map back to their error
/// classes); `RetryInfo` when it says when to try again.
fn status(e: &A2aError) -> Status {
    let code = match e.grpc_status() {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "NOT_FOUND" => Code::NotFound,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "ABORTED" => Code::Aborted,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "CANCELLED" => Code::Cancelled,
        "UNAVAILABLE" => Code::Unavailable,
        _ => Code::Internal,
    };
    let metadata: std::collections::HashMap<_, _> = e.metadata().into_iter().collect();
    let mut details = ErrorDetails::with_error_info(e.reason(), "a2a-protocol.org", metadata);
    if let Some(secs) = e.retry_after {
        details.set_retry_info(Some(std::time::Duration::from_secs(secs)));
    }
    Status::with_error_details(code, e.message.clone(), details)
}

impl From<A2aError> for Status {
    fn from(e: A2aError) -> Self {
        status(&e)
    }
}

/// A protobuf message as its ProtoJSON object, within the limits of the JSON bindings' bodies
/// (a string's length, nesting: the decoding limit alone bounds only the whole message).
fn params_of<P: prost::Message, J: prost::Message + Default + serde::Serialize>(
    message: &P,
    limits: &e2a::Limits,
) -> Result<Map<String, Value>, Status> {
    let protojson = J::decode(message.encode_to_vec().as_slice())
        .map_err(|e| Status::invalid_argument(format!("cannot read the request: {e}")))?;
    let value = serde_json::to_value(protojson)
        .map_err(|e| Status::invalid_argument(format!("cannot read the request: {e}")))?;
    limits
        .check_value(&value)
        .map_err(|e| status(&A2aError::from(crate::web::body::BodyError::Input(e))))?;
    Ok(match value {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// The protobuf message of ProtoJSON `text` (an answer the gateway wrote).
fn message_of<J: prost::Message + serde::de::DeserializeOwned, P: prost::Message + Default>(
    text: &str,
) -> Result<P, Status> {
    let protojson: J = serde_json::from_str(text).map_err(|e| {
        tracing::error!(error = %e, "an A2A answer does not read as its protobuf message");
        Status::internal("the gateway cannot encode this answer")
    })?;
    P::decode(protojson.encode_to_vec().as_slice())
        .map_err(|e| Status::internal(format!("cannot encode the answer: {e}")))
}

/// An event stream as `StreamResponse`s; an error ends it with its status.
fn events(stream: EventStream) -> Events {
    Box::pin(stream.map(|e| match e {
        Ok(e) => message_of::<pj::StreamResponse, pb::StreamResponse>(&e.event),
        Err(e) => Err(status(&e)),
    }))
}

/// What every call starts with: the agent it is for (its `tenant`, else this one), the
/// caller its `authorization` proves, its metadata as headers, its message as ProtoJSON.
struct Call {
    state: Arc<TaskService>,
    caller: Caller,
    headers: HeaderMap,
    /// `a2a-version` and `a2a-extensions`, checked against the agent's card.
    a2a: e2a::a2a::jsonrpc::A2aHeaders,
    params: Map<String, Value>,
}

impl Grpc {
    fn open<P: prost::Message, J: prost::Message + Default + serde::Serialize>(
        &self,
        request: Request<P>,
    ) -> Result<Call, Status> {
        let headers = request.metadata().clone().into_headers();
        let params = params_of::<P, J>(request.get_ref(), &self.state.pipeline().config.limits)?;
        let tenant = e2a::read::member(&params, "tenant")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        let state = match (tenant, self.state.mount().tenants()) {
            (Some(t), Some(tenants)) => tenants
                .get(t)
                .cloned()
                .ok_or_else(|| status(&A2aError::invalid_params(format!("no agent named `{t}` (tenant)"))))?,
            _ => self.state.clone(),
        };
        let caller = state
            .pipeline()
            .config
            .auth
            .check(&headers)
            .map_err(|p| status(&A2aError::from_problem(&p)))?;
        let a2a = super::request_headers(&state, &headers, None, Some(&params))?;
        Ok(Call {
            state,
            caller,
            headers,
            a2a,
            params,
        })
    }
}

impl Call {
    /// The context of the call (no JSON-RPC id, no idempotency key).
    fn context(&self) -> CallContext {
        CallContext {
            id: Value::Null,
            caller: self.caller.clone(),
            headers: self.a2a.clone(),
            trace_id: crate::web::trace::request_trace_id(&self.headers),
            idempotency_key: None,
        }
    }

    /// The request, typed (read from its ProtoJSON form, as every binding reads it).
    fn request<T: serde::de::DeserializeOwned>(&self) -> Result<T, Status> {
        Ok(read(&self.params)?)
    }

    fn send(self) -> Result<(Arc<TaskService>, SendParams), Status> {
        let cx = self.context();
        Ok((
            self.state,
            SendParams {
                cx,
                params: self.params,
            },
        ))
    }
}

/// `v` as JSON text.
fn text<T: serde::Serialize>(v: &T) -> String {
    crate::json::text(v)
}

#[tonic::async_trait]
impl pb::a2a_service_server::A2aService for Grpc {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let (state, send) = self.open::<_, pj::SendMessageRequest>(request)?.send()?;
        let answer = match state.send_message(send).await? {
            Sent::Message(m) => text(&crate::tasks::Replied { message: &m }),
            Sent::Task(task) => super::sent_task(&task),
        };
        Ok(Response::new(message_of::<pj::SendMessageResponse, _>(&answer)?))
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let (state, send) = self.open::<_, pj::SendMessageRequest>(request)?.send()?;
        Ok(Response::new(events(state.send_streaming(send).await?)))
    }

    async fn get_task(&self, request: Request<pb::GetTaskRequest>) -> Result<Response<pb::Task>, Status> {
        let call = self.open::<_, pj::GetTaskRequest>(request)?;
        let task = text(&call.state.get_task(&call.context(), call.request()?).await?);
        Ok(Response::new(message_of::<pj::Task, _>(&task)?))
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        let call = self.open::<_, pj::ListTasksRequest>(request)?;
        let page = call.state.list(&call.context(), call.request()?).await?;
        Ok(Response::new(message_of::<pj::ListTasksResponse, _>(&text(&page))?))
    }

    async fn cancel_task(&self, request: Request<pb::CancelTaskRequest>) -> Result<Response<pb::Task>, Status> {
        let call = self.open::<_, pj::CancelTaskRequest>(request)?;
        let task = call.state.cancel(&call.context(), call.request()?).await?;
        Ok(Response::new(message_of::<pj::Task, _>(&text(&task))?))
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let call = self.open::<_, pj::SubscribeToTaskRequest>(request)?;
        // a resumption names the last event it saw, as SSE's Last-Event-ID does
        let last_seen = crate::web::last_event_id::read(&call.headers).map_err(A2aError::from)?;
        let stream = call
            .state
            .subscribe(&call.context(), call.request()?, last_seen)
            .await?;
        Ok(Response::new(events(stream)))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let call = self.open::<_, pj::TaskPushNotificationConfig>(request)?;
        let config = call.state.create_push_config(&call.context(), call.request()?).await?;
        Ok(Response::new(message_of::<pj::TaskPushNotificationConfig, _>(&text(
            &config,
        ))?))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let call = self.open::<_, pj::GetTaskPushNotificationConfigRequest>(request)?;
        let config = call.state.get_push_config(&call.context(), call.request()?).await?;
        Ok(Response::new(message_of::<pj::TaskPushNotificationConfig, _>(&text(
            &config,
        ))?))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        let call = self.open::<_, pj::ListTaskPushNotificationConfigsRequest>(request)?;
        let page = call.state.list_push_configs(&call.context(), call.request()?).await?;
        Ok(Response::new(message_of::<
            pj::ListTaskPushNotificationConfigsResponse,
            _,
        >(&text(&page))?))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        let call = self.open::<_, pj::GetExtendedAgentCardRequest>(request)?;
        call.request::<e2a::types::A2aGetExtendedAgentCardRequest>()?;
        let card = super::extended_card(&call.state, &call.headers)?;
        Ok(Response::new(message_of::<pj::AgentCard, _>(&card.to_string())?))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let call = self.open::<_, pj::DeleteTaskPushNotificationConfigRequest>(request)?;
        call.state.delete_push_config(&call.context(), call.request()?).await?;
        Ok(Response::new(()))
    }
}
