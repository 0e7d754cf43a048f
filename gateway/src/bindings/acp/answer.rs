//! What an ACP request handler hands back, and the error a store failure answers with.

use serde_json::Value;

use crate::protocol::acp::{codes, RpcError};

/// A store failure as the JSON-RPC error the client gets (the store's words, which never hold
/// a credential).
pub(crate) fn store_error(e: crate::store::StoreError) -> RpcError {
    tracing::warn!(error = %e, "session store");
    RpcError::new(codes::INTERNAL_ERROR, e.to_string())
}

/// What a request handler hands back: a result to send as the response, or nothing (it sent
/// its response itself, in order with the notifications around it).
pub(crate) type Answer = Result<Option<Value>, RpcError>;

/// `value` as the JSON-RPC result to send.
pub(crate) fn answer<T: serde::Serialize>(value: T) -> Answer {
    serde_json::to_value(value)
        .map(Some)
        .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, e.to_string()))
}
