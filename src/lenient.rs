//! The lenient reader: every legacy rule of the Python reference's `from_dict`, plus the three
//! deliberate deviations of this SDK (a wrong JSON type is an error naming the field; a null
//! on a defaulted field means the default; a boolean is not a number).
//!
//! This is what a gateway uses on its wire. Each legacy rule that fires is reported as a
//! [`LegacyRule`], so operators can see which old shapes are still in use.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fields::truthy;
use crate::read::Read;
use crate::take::{KeyTable, Slots, Source, Taker};
use crate::types::{E2AAuth, E2AEnvelope, E2AProvenance, E2AResponse, IdentityOrigin, WireMetadataKey};
use crate::{SecretHeaders, SecretString};
use std::sync::OnceLock;

/// A legacy compatibility rule that fired while reading a message leniently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LegacyRule {
    /// Legacy `binding` migrated into `provenance.details.migrated_from_binding`.
    Binding,
    /// Legacy top-level `payload` merged into `params`.
    PayloadMerge,
    /// Legacy `req_method` read as `method`.
    ReqMethod,
    /// Legacy `channel_id` read as `channel`.
    ChannelId,
    /// Legacy top-level `metadata` merged into `channel_context`.
    MetadataToChannelContext,
    /// Legacy top-level `app_id` copied into `channel_context`.
    AppId,
    /// `agent_id` taken from `source_agent_id`.
    SourceAgentIdFallback,
    /// Legacy `workspace_dir` read as `workspace_key`.
    WorkspaceDir,
    /// An epoch-number `timestamp` converted to ISO-8601.
    EpochTimestamp,
    /// A null on a defaulted field read as the default.
    NullDefault,
    /// Keys that are not E2A fields were ignored.
    UnknownKeys,
}

impl LegacyRule {
    /// Short stable name (used by the CLI's reports).
    pub fn name(self) -> &'static str {
        match self {
            LegacyRule::Binding => "binding",
            LegacyRule::PayloadMerge => "payload_merge",
            LegacyRule::ReqMethod => "req_method",
            LegacyRule::ChannelId => "channel_id",
            LegacyRule::MetadataToChannelContext => "metadata_to_channel_context",
            LegacyRule::AppId => "app_id",
            LegacyRule::SourceAgentIdFallback => "source_agent_id_fallback",
            LegacyRule::WorkspaceDir => "workspace_dir",
            LegacyRule::EpochTimestamp => "epoch_timestamp",
            LegacyRule::NullDefault => "null_default",
            LegacyRule::UnknownKeys => "unknown_keys",
        }
    }
}

struct Ctx<'b, S: Source> {
    f: Taker<'b, S>,
    rules: Vec<LegacyRule>,
}

impl<'b, S: Source> Ctx<'b, S> {
    fn fire(&mut self, r: LegacyRule) {
        self.rules.push(r);
    }

    fn null_default(&mut self, key: &str) {
        if self.f.is_null(key) {
            self.fire(LegacyRule::NullDefault);
        }
    }

    fn origin(&mut self, key: &str, default: IdentityOrigin) -> Result<IdentityOrigin> {
        self.null_default(key);
        match self.f.take(key) {
            None => Ok(default),
            Some(Value::String(s)) => s.parse().map_err(|_| self.f.err(key, "origin")),
            Some(_) => Err(self.f.err(key, "origin")),
        }
    }

    fn timestamp(&mut self) -> Result<Option<String>> {
        if self.f.peek("timestamp").is_some_and(Value::is_number) {
            self.fire(LegacyRule::EpochTimestamp);
        }
        self.f.timestamp("timestamp")
    }

    fn channel(&mut self) -> Result<Option<String>> {
        match self.f.opt_str("channel")? {
            Some(c) => Ok(Some(c)),
            None => {
                let channel_id = self.f.opt_str("channel_id")?;
                if channel_id.is_some() {
                    self.fire(LegacyRule::ChannelId);
                }
                Ok(channel_id)
            }
        }
    }

    fn provenance(&mut self, key: &str) -> Result<E2AProvenance> {
        let Some(p) = self.f.opt_obj(key)? else {
            return Ok(E2AProvenance::default());
        };
        let base = self.f.ptr(key);
        let mut pf = Taker::new(p, &base);
        if pf.is_null("source_protocol") {
            self.fire(LegacyRule::NullDefault);
        }
        Ok(E2AProvenance {
            source_protocol: pf.str_or("source_protocol", "e2a")?,
            converter: pf.opt_str("converter")?,
            converted_at: pf.opt_str("converted_at")?,
            details: pf.obj("details")?,
        })
    }

    fn finish<T>(mut self, value: T) -> Read<T> {
        self.rules.sort();
        self.rules.dedup();
        Read {
            value,
            rules: self.rules,
        }
    }
}

fn envelope_keys() -> &'static KeyTable {
    static T: OnceLock<KeyTable> = OnceLock::new();
    T.get_or_init(|| KeyTable::new(ENVELOPE_KEYS))
}

fn response_keys() -> &'static KeyTable {
    static T: OnceLock<KeyTable> = OnceLock::new();
    T.get_or_init(|| KeyTable::new(RESPONSE_KEYS))
}

/// Every key the envelope reader knows (E2A fields and legacy keys).
const ENVELOPE_KEYS: &[&str] = &[
    "a2a_metadata",
    "acp_meta",
    "agent_id",
    "agent_ref",
    "app_id",
    "auth",
    "binding",
    "channel",
    "channel_context",
    "channel_id",
    "chat_id",
    "context_id",
    "correlation_id",
    "expected_output_modes",
    "ext_method",
    "identity_origin",
    "is_stream",
    "jsonrpc_id",
    "message_id",
    "metadata",
    "method",
    "params",
    "payload",
    "protocol_version",
    "provenance",
    "req_method",
    "request_id",
    "service_id",
    "session_id",
    "session_update_kind",
    "source_agent_id",
    "task_id",
    "timestamp",
    "user_id",
    "workspace_dir",
    "workspace_key",
];

/// Reads an envelope leniently from a JSON object (the reference's `E2AEnvelope.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::E2AEnvelope::read_value(&json!({
///     "request_id": "r1", "channel_id": "feishu", "req_method": "chat.send",
///     "timestamp": 1774524781.15, "metadata": {"open_id": "ou"}
/// }), &e2a::ReadOptions::lenient()).unwrap();
/// assert_eq!(r.value.channel.as_deref(), Some("feishu"));
/// assert_eq!(r.value.method.as_deref(), Some("chat.send"));
/// assert_eq!(r.value.timestamp.as_deref(), Some("2026-03-26T11:33:01.150000+00:00"));
/// assert_eq!(r.value.channel_context["open_id"], "ou");
/// assert!(r.rules.contains(&e2a::LegacyRule::ReqMethod));
/// ```
pub(crate) fn envelope(input: &Value) -> Result<Read<E2AEnvelope>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    envelope_from_slots(Slots::from_map(map, envelope_keys()))
}

/// Reads an envelope leniently from JSON text, straight into the struct (no intermediate
/// `serde_json::Value` for the top level). The caller checks [`crate::Limits`] first.
pub(crate) fn envelope_str(input: &str) -> Result<Read<E2AEnvelope>> {
    envelope_from_slots(Slots::from_str(input, envelope_keys())?)
}

fn envelope_from_slots(slots: Slots) -> Result<Read<E2AEnvelope>> {
    let unknown = slots.unknown;
    let mut c = Ctx {
        f: Taker::new(slots, ""),
        rules: Vec::new(),
    };
    if unknown {
        c.fire(LegacyRule::UnknownKeys);
    }

    let mut provenance = c.provenance("provenance")?;
    if let Some(binding) = c.f.take("binding") {
        if !matches!(binding, Value::Null | Value::String(_) | Value::Object(_)) {
            return Err(c.f.err("binding", "string or object"));
        }
        binding_migration(&binding, &mut provenance);
        c.fire(LegacyRule::Binding);
    }
    c.null_default("protocol_version");
    let protocol_version = c.f.str_or("protocol_version", crate::E2A_PROTOCOL_VERSION)?;
    let identity_origin = c.origin("identity_origin", IdentityOrigin::User)?;

    let mut params = c.f.obj("params")?;
    if let Some(payload) = c.f.opt_obj("payload")? {
        if !payload.is_empty() {
            c.fire(LegacyRule::PayloadMerge);
        }
        for (k, v) in payload {
            let empty =
                v.is_null() || v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty);
            if !empty && !params.contains_key(&k) {
                params.insert(k, v);
            }
        }
    }

    let auth = match c.f.opt_obj("auth")? {
        None => None,
        Some(a) => Some(auth(a, "/auth")?),
    };

    let mut channel_context = c.f.obj("channel_context")?;
    if let Some(meta) = c.f.opt_obj("metadata")? {
        if !meta.is_empty() {
            c.fire(LegacyRule::MetadataToChannelContext);
        }
        for (k, v) in meta {
            if k.parse::<WireMetadataKey>().is_err() && !channel_context.contains_key(&k) {
                channel_context.insert(k, v);
            }
        }
    }
    if let Some(app) = c.f.take("app_id").filter(truthy) {
        if !channel_context.contains_key("app_id") {
            channel_context.insert("app_id".into(), app);
            c.fire(LegacyRule::AppId);
        }
    }

    let channel = c.channel()?;
    let req_method = c.f.opt_str("req_method")?;
    let method = match c.f.opt_str("method")? {
        Some(m) => Some(m),
        None => {
            if req_method.is_some() {
                c.fire(LegacyRule::ReqMethod);
            }
            req_method
        }
    };

    let source_agent_id = c.f.opt_str("source_agent_id")?;
    let agent_id = match c.f.stripped("agent_id")? {
        Some(a) => Some(a),
        None => {
            let a = source_agent_id
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            if a.is_some() {
                c.fire(LegacyRule::SourceAgentIdFallback);
            }
            a
        }
    };
    let workspace_key = match c.f.stripped("workspace_key")? {
        Some(w) => Some(w),
        None => {
            let workspace_dir = c.f.stripped("workspace_dir")?;
            if workspace_dir.is_some() {
                c.fire(LegacyRule::WorkspaceDir);
            }
            workspace_dir
        }
    };
    c.null_default("is_stream");
    let timestamp = c.timestamp()?;

    let f = &mut c.f;
    let env = E2AEnvelope {
        protocol_version,
        provenance,
        request_id: f.opt_str("request_id")?,
        jsonrpc_id: f.rpc_id("jsonrpc_id")?,
        correlation_id: f.opt_str("correlation_id")?,
        task_id: f.opt_str("task_id")?,
        context_id: f.opt_str("context_id")?,
        session_id: f.opt_str("session_id")?,
        message_id: f.opt_str("message_id")?,
        timestamp,
        identity_origin,
        channel,
        user_id: f.opt_str("user_id")?,
        agent_ref: f.opt_obj("agent_ref")?,
        chat_id: f.opt_str("chat_id")?,
        source_agent_id,
        agent_id,
        service_id: f.stripped("service_id")?,
        workspace_key,
        method,
        params,
        ext_method: f.opt_str("ext_method")?,
        session_update_kind: f.opt_str("session_update_kind")?,
        is_stream: f.bool_or("is_stream", false)?,
        expected_output_modes: f.str_array("expected_output_modes")?,
        auth,
        channel_context,
        a2a_metadata: f.obj("a2a_metadata")?,
        acp_meta: f.obj("acp_meta")?,
    };
    Ok(c.finish(env))
}

fn binding_migration(binding: &Value, prov: &mut E2AProvenance) {
    if prov.details.get("migrated_from_binding").is_some_and(|v| !v.is_null()) {
        return;
    }
    let value = match binding {
        Value::Object(m) if m.contains_key("value") => &m["value"],
        other => other,
    };
    let text = if value.is_null() {
        String::new()
    } else {
        crate::pyrepr::py_str(value)
    };
    prov.details.insert("migrated_from_binding".into(), Value::String(text));
    if prov.source_protocol == "e2a" {
        match value.as_str() {
            Some("acp") => prov.source_protocol = "acp".into(),
            Some("a2a") => prov.source_protocol = "a2a".into(),
            _ => {}
        }
    }
}

fn auth(a: Map<String, Value>, base: &str) -> Result<E2AAuth> {
    let mut f = Taker::new(a, base);
    let mut headers = SecretHeaders::default();
    if let Some(h) = f.opt_obj("extra_headers")? {
        for (k, v) in h {
            match v {
                Value::String(v) => {
                    headers.0.insert(k, SecretString::from(v));
                }
                _ => return Err(f.err("extra_headers", "strmap")),
            }
        }
    }
    Ok(E2AAuth {
        method_id: f.opt_str("method_id")?,
        bearer_token: f.opt_str("bearer_token")?.map(SecretString::from),
        api_key_ref: f.opt_str("api_key_ref")?.map(SecretString::from),
        credential_ref: f.opt_str("credential_ref")?.map(SecretString::from),
        extra_headers: headers,
        meta: f.obj("_meta")?,
    })
}

/// Every key the response reader knows.
const RESPONSE_KEYS: &[&str] = &[
    "a2a_metadata",
    "acp_meta",
    "agent_ref",
    "body",
    "channel",
    "channel_context",
    "channel_id",
    "context_id",
    "correlation_id",
    "identity_origin",
    "is_final",
    "is_stream",
    "jsonrpc_id",
    "message_id",
    "metadata",
    "method",
    "projections",
    "protocol_version",
    "provenance",
    "request_id",
    "response_id",
    "response_kind",
    "sequence",
    "session_id",
    "source_agent_id",
    "status",
    "task_id",
    "timestamp",
    "user_id",
];

/// Reads a response leniently from a JSON object (the reference's `E2AResponse.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::E2AResponse::read_value(&json!({"response_kind": "e2a.chunk", "sequence": 2, "status": null}), &e2a::ReadOptions::lenient()).unwrap();
/// assert_eq!(r.value.sequence, 2);
/// assert_eq!(r.value.status, "in_progress");
/// assert!(e2a::E2AResponse::read_value(&json!({"sequence": "2"}), &e2a::ReadOptions::lenient()).is_err());
/// ```
pub(crate) fn response(input: &Value) -> Result<Read<E2AResponse>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    response_from_slots(Slots::from_map(map, response_keys()))
}

/// Reads a response leniently from JSON text, straight into the struct. The caller checks
/// [`crate::Limits`] first.
pub(crate) fn response_str(input: &str) -> Result<Read<E2AResponse>> {
    response_from_slots(Slots::from_str(input, response_keys())?)
}

fn response_from_slots(slots: Slots) -> Result<Read<E2AResponse>> {
    let unknown = slots.unknown;
    let mut c = Ctx {
        f: Taker::new(slots, ""),
        rules: Vec::new(),
    };
    if unknown {
        c.fire(LegacyRule::UnknownKeys);
    }
    for k in [
        "protocol_version",
        "status",
        "response_kind",
        "sequence",
        "is_final",
        "is_stream",
    ] {
        c.null_default(k);
    }
    let provenance = c.provenance("provenance")?;
    let identity_origin = c.origin("identity_origin", IdentityOrigin::Agent)?;
    let channel = c.channel()?;
    let timestamp = c.timestamp()?;
    let f = &mut c.f;
    let resp = E2AResponse {
        protocol_version: f.str_or("protocol_version", crate::E2A_PROTOCOL_VERSION)?,
        response_id: f.opt_str("response_id")?,
        request_id: f.opt_str("request_id")?,
        sequence: f.seq("sequence", 0)?,
        is_final: f.bool_or("is_final", false)?,
        status: f.str_or("status", "in_progress")?.into(),
        response_kind: f.str_or("response_kind", "")?.into(),
        timestamp,
        provenance,
        body: f.obj("body")?,
        jsonrpc_id: f.rpc_id("jsonrpc_id")?,
        correlation_id: f.opt_str("correlation_id")?,
        task_id: f.opt_str("task_id")?,
        context_id: f.opt_str("context_id")?,
        session_id: f.opt_str("session_id")?,
        message_id: f.opt_str("message_id")?,
        is_stream: f.bool_or("is_stream", false)?,
        identity_origin,
        channel,
        user_id: f.opt_str("user_id")?,
        agent_ref: f.opt_obj("agent_ref")?,
        source_agent_id: f.opt_str("source_agent_id")?,
        method: f.opt_str("method")?,
        projections: f.obj("projections")?,
        channel_context: f.obj("channel_context")?,
        metadata: f.obj("metadata")?,
        a2a_metadata: f.obj("a2a_metadata")?,
        acp_meta: f.obj("acp_meta")?,
    };
    Ok(c.finish(resp))
}
