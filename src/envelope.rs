//! [`E2AEnvelope`]: defaults, builders, reading and canonical writing.

use serde_json::{Map, Value};

use crate::types::{E2AEnvelope, JsonRpcId};

impl E2AEnvelope {
    /// A new envelope for `method` with the given `params` object (other fields default).
    ///
    /// ```
    /// use e2a::E2AEnvelope;
    /// let env = E2AEnvelope::new("chat.send", serde_json::json!({"query": "hi"}))
    ///     .with_request_id("r1")
    ///     .with_channel("web");
    /// assert_eq!(env.to_value()["params"]["query"], "hi");
    /// ```
    pub fn new(method: impl Into<String>, params: Value) -> Self {
        let params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        E2AEnvelope {
            method: Some(method.into()),
            params,
            ..Default::default()
        }
    }

    /// Sets `request_id`.
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Sets `session_id`.
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Sets `channel`.
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = Some(channel.into());
        self
    }

    /// Sets `jsonrpc_id`.
    pub fn with_jsonrpc_id(mut self, id: impl Into<JsonRpcId>) -> Self {
        self.jsonrpc_id = Some(id.into());
        self
    }

    /// Sets `is_stream`.
    pub fn with_stream(mut self, is_stream: bool) -> Self {
        self.is_stream = is_stream;
        self
    }

    /// Sets `timestamp` to now (the reference's `ensure_timestamp`) when it is null.
    pub fn ensure_timestamp(&mut self) {
        if self.timestamp.is_none() {
            self.timestamp = Some(crate::timestamp::utc_now_iso());
        }
    }
}

crate::read::message_methods!(E2AEnvelope);
