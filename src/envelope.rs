//! [`E2AEnvelope`]: defaults, builders, reading and canonical writing.

use serde_json::{Map, Value};

use crate::error::Result;
use crate::lenient::{default_provenance, Lenient};
use crate::types::{E2AEnvelope, IdentityOrigin, JsonRpcId};
use crate::Limits;

impl Default for E2AEnvelope {
    /// The reference defaults: version `1.0`, provenance `e2a`, identity `user`, empty
    /// containers, everything else null.
    fn default() -> Self {
        E2AEnvelope {
            protocol_version: crate::E2A_PROTOCOL_VERSION.into(),
            provenance: default_provenance(),
            request_id: None,
            jsonrpc_id: None,
            correlation_id: None,
            task_id: None,
            context_id: None,
            session_id: None,
            message_id: None,
            timestamp: None,
            identity_origin: IdentityOrigin::User,
            channel: None,
            user_id: None,
            agent_ref: None,
            chat_id: None,
            source_agent_id: None,
            agent_id: None,
            service_id: None,
            workspace_key: None,
            method: None,
            params: Map::new(),
            ext_method: None,
            session_update_kind: None,
            is_stream: false,
            expected_output_modes: Vec::new(),
            auth: None,
            channel_context: Map::new(),
            a2a_metadata: Map::new(),
            acp_meta: Map::new(),
        }
    }
}

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

    /// The canonical JSON object: every field, nulls and empty containers included (the
    /// reference `to_dict()` key set).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Canonical compact JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads JSON text leniently (legacy shapes accepted) under the default [`Limits`].
    ///
    /// ```
    /// let env = e2a::E2AEnvelope::from_json(r#"{"request_id":"r1","channel_id":"web"}"#).unwrap();
    /// assert_eq!(env.channel.as_deref(), Some("web"));
    /// assert!(e2a::E2AEnvelope::from_json(r#"{"request_id":"#).is_err());
    /// ```
    pub fn from_json(input: &str) -> Result<Self> {
        Self::read_lenient(input, &Limits::default()).map(|l| l.value)
    }

    /// Reads JSON text leniently under `limits`, reporting the legacy rules that fired.
    pub fn read_lenient(input: &str, limits: &Limits) -> Result<Lenient<Self>> {
        limits.check(input)?;
        crate::lenient::envelope_str(input)
    }

    /// Reads a JSON value leniently (the reference's `from_dict`).
    pub fn from_value(value: &Value) -> Result<Self> {
        crate::lenient::envelope(value).map(|l| l.value)
    }

    /// Reads JSON text strictly: it must be a canonical envelope valid against the schema.
    /// Every violation is reported.
    pub fn from_json_strict(input: &str) -> Result<Self> {
        crate::strict::envelope(&Limits::default().parse(input)?)
    }
}
