//! The lenient reader: every legacy rule of the Python reference's `from_dict`, plus the three
//! deliberate deviations of this SDK (a wrong JSON type is an error naming the field; a null
//! on a defaulted field means the default; a boolean is not a number).
//!
//! This is what a gateway uses on its wire. Each legacy rule that fires is reported as a
//! [`LegacyRule`], so operators can see which old shapes are still in use.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fields::{truthy, Fields};
use crate::types::{E2AAuth, E2AEnvelope, E2AProvenance, E2AResponse, IdentityOrigin, WireMetadataKey};
use crate::{SecretHeaders, SecretString};

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

/// A value read leniently, with the legacy rules that fired (sorted, deduplicated).
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T> {
    /// The message in canonical form.
    pub value: T,
    /// Legacy rules applied while reading.
    pub rules: Vec<LegacyRule>,
}

struct Ctx<'a> {
    f: Fields<'a>,
    rules: Vec<LegacyRule>,
}

impl<'a> Ctx<'a> {
    fn fire(&mut self, r: LegacyRule) {
        self.rules.push(r);
    }

    fn null_default(&mut self, key: &str) {
        if self.f.map.get(key).is_some_and(Value::is_null) {
            self.fire(LegacyRule::NullDefault);
        }
    }

    fn origin(&mut self, key: &str, default: IdentityOrigin) -> Result<IdentityOrigin> {
        self.null_default(key);
        match self.f.get(key) {
            None => Ok(default),
            Some(Value::String(s)) => s.parse().map_err(|_| self.f.err(key, "origin")),
            Some(_) => Err(self.f.err(key, "origin")),
        }
    }

    fn timestamp(&mut self) -> Result<Option<String>> {
        if self.f.get("timestamp").is_some_and(Value::is_number) {
            self.fire(LegacyRule::EpochTimestamp);
        }
        self.f.timestamp("timestamp")
    }

    fn channel(&mut self) -> Result<Option<String>> {
        match self.f.opt_str("channel")? {
            Some(c) => Ok(Some(c)),
            None => {
                let c = self.f.opt_str("channel_id")?;
                if c.is_some() {
                    self.fire(LegacyRule::ChannelId);
                }
                Ok(c)
            }
        }
    }

    fn provenance(&mut self, key: &str) -> Result<E2AProvenance> {
        let Some(p) = self.f.opt_obj(key)? else {
            return Ok(default_provenance());
        };
        let base = self.f.ptr(key);
        let pf = Fields::new(p, &base);
        if p.get("source_protocol").is_some_and(Value::is_null) {
            self.fire(LegacyRule::NullDefault);
        }
        Ok(E2AProvenance {
            source_protocol: pf.str_or("source_protocol", "e2a")?,
            converter: pf.opt_str("converter")?,
            converted_at: pf.opt_str("converted_at")?,
            details: pf.obj("details")?,
        })
    }

    fn unknown_keys(&mut self, known: &[&str]) {
        if self.f.map.keys().any(|k| !known.contains(&k.as_str())) {
            self.fire(LegacyRule::UnknownKeys);
        }
    }

    fn finish<T>(mut self, value: T) -> Lenient<T> {
        self.rules.sort();
        self.rules.dedup();
        Lenient {
            value,
            rules: self.rules,
        }
    }
}

/// The default provenance: `source_protocol: "e2a"`, everything else empty.
pub fn default_provenance() -> E2AProvenance {
    E2AProvenance {
        source_protocol: "e2a".into(),
        converter: None,
        converted_at: None,
        details: Map::new(),
    }
}

/// Stripped non-empty string at `key` (the reference's `agent_id`/`service_id` rule).
fn stripped(f: &Fields<'_>, key: &str) -> Result<Option<String>> {
    Ok(f.opt_str_ref(key)?
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string))
}

const ENVELOPE_KEYS: &[&str] = &[
    "protocol_version",
    "provenance",
    "request_id",
    "jsonrpc_id",
    "correlation_id",
    "task_id",
    "context_id",
    "session_id",
    "message_id",
    "timestamp",
    "identity_origin",
    "channel",
    "user_id",
    "agent_ref",
    "chat_id",
    "source_agent_id",
    "agent_id",
    "service_id",
    "workspace_key",
    "method",
    "params",
    "ext_method",
    "session_update_kind",
    "is_stream",
    "expected_output_modes",
    "auth",
    "channel_context",
    "a2a_metadata",
    "acp_meta",
    "binding",
    "payload",
    "req_method",
    "channel_id",
    "metadata",
    "app_id",
    "workspace_dir",
];

/// Reads an envelope leniently from a JSON object (the reference's `E2AEnvelope.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::lenient::envelope(&json!({
///     "request_id": "r1", "channel_id": "feishu", "req_method": "chat.send",
///     "timestamp": 1774524781.15, "metadata": {"open_id": "ou"}
/// })).unwrap();
/// assert_eq!(r.value.channel.as_deref(), Some("feishu"));
/// assert_eq!(r.value.method.as_deref(), Some("chat.send"));
/// assert_eq!(r.value.timestamp.as_deref(), Some("2026-03-26T11:33:01.150000+00:00"));
/// assert_eq!(r.value.channel_context["open_id"], "ou");
/// assert!(r.rules.contains(&e2a::LegacyRule::ReqMethod));
/// ```
pub fn envelope(input: &Value) -> Result<Lenient<E2AEnvelope>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let mut c = Ctx {
        f: Fields::new(map, ""),
        rules: Vec::new(),
    };
    let f = c.f;
    c.unknown_keys(ENVELOPE_KEYS);

    let mut provenance = c.provenance("provenance")?;
    if f.get("binding").is_some() {
        binding_migration(&f, &mut provenance)?;
        c.fire(LegacyRule::Binding);
    }
    c.null_default("protocol_version");
    let protocol_version = f.str_or("protocol_version", crate::E2A_PROTOCOL_VERSION)?;
    let identity_origin = c.origin("identity_origin", IdentityOrigin::User)?;

    let mut params = f.obj("params")?;
    if let Some(payload) = f.opt_obj("payload")? {
        for (k, v) in payload {
            let empty =
                v.is_null() || v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty);
            if !params.contains_key(k) && !empty {
                params.insert(k.clone(), v.clone());
            }
        }
        if !payload.is_empty() {
            c.fire(LegacyRule::PayloadMerge);
        }
    }

    let auth = match f.opt_obj("auth")? {
        None => None,
        Some(a) => Some(auth(a, "/auth")?),
    };

    let mut channel_context = f.obj("channel_context")?;
    if let Some(meta) = f.opt_obj("metadata")? {
        for (k, v) in meta {
            if k.parse::<WireMetadataKey>().is_err() && !channel_context.contains_key(k) {
                channel_context.insert(k.clone(), v.clone());
            }
        }
        if !meta.is_empty() {
            c.fire(LegacyRule::MetadataToChannelContext);
        }
    }
    if let Some(app) = f.get("app_id").filter(|v| truthy(v)) {
        if !channel_context.contains_key("app_id") {
            channel_context.insert("app_id".into(), app.clone());
            c.fire(LegacyRule::AppId);
        }
    }

    let channel = c.channel()?;
    let mut method = f.opt_str("method")?;
    if method.is_none() {
        if let Some(m) = f.opt_str("req_method")? {
            method = Some(m);
            c.fire(LegacyRule::ReqMethod);
        }
    } else {
        f.opt_str_ref("req_method")?;
    }

    let source_agent_id = f.opt_str("source_agent_id")?;
    let agent_id = match stripped(&f, "agent_id")? {
        Some(a) => Some(a),
        None => {
            let a = stripped(&f, "source_agent_id")?;
            if a.is_some() {
                c.fire(LegacyRule::SourceAgentIdFallback);
            }
            a
        }
    };
    let workspace_key = match stripped(&f, "workspace_key")? {
        Some(w) => Some(w),
        None => {
            let w = stripped(&f, "workspace_dir")?;
            if w.is_some() {
                c.fire(LegacyRule::WorkspaceDir);
            }
            w
        }
    };
    if f.get("workspace_key").is_some() {
        // a non-string workspace_key must still be reported even when workspace_dir wins
        f.opt_str_ref("workspace_key")?;
    }
    c.null_default("is_stream");
    let timestamp = c.timestamp()?;

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
        agent_ref: f.opt_obj("agent_ref")?.cloned(),
        chat_id: f.opt_str("chat_id")?,
        source_agent_id,
        agent_id,
        service_id: stripped(&f, "service_id")?,
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

fn binding_migration(f: &Fields<'_>, prov: &mut E2AProvenance) -> Result<()> {
    if prov.details.get("migrated_from_binding").is_some_and(|v| !v.is_null()) {
        return Ok(());
    }
    let Some(binding) = f.get("binding") else { return Ok(()) };
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
    Ok(())
}

fn auth(a: &Map<String, Value>, base: &str) -> Result<E2AAuth> {
    let f = Fields::new(a, base);
    let secret = |k: &str| -> Result<Option<SecretString>> { Ok(f.opt_str(k)?.map(SecretString::from)) };
    let mut headers = SecretHeaders::default();
    if let Some(h) = f.opt_obj("extra_headers")? {
        for (k, v) in h {
            let v = v.as_str().ok_or_else(|| f.err("extra_headers", "strmap"))?;
            headers.0.insert(k.clone(), SecretString::from(v));
        }
    }
    Ok(E2AAuth {
        method_id: f.opt_str("method_id")?,
        bearer_token: secret("bearer_token")?,
        api_key_ref: secret("api_key_ref")?,
        credential_ref: secret("credential_ref")?,
        extra_headers: headers,
        meta: f.obj("_meta")?,
    })
}

const RESPONSE_KEYS: &[&str] = &[
    "protocol_version",
    "response_id",
    "request_id",
    "sequence",
    "is_final",
    "status",
    "response_kind",
    "timestamp",
    "provenance",
    "body",
    "jsonrpc_id",
    "correlation_id",
    "task_id",
    "context_id",
    "session_id",
    "message_id",
    "is_stream",
    "identity_origin",
    "channel",
    "user_id",
    "agent_ref",
    "source_agent_id",
    "method",
    "projections",
    "channel_context",
    "metadata",
    "a2a_metadata",
    "acp_meta",
    "channel_id",
];

/// Reads a response leniently from a JSON object (the reference's `E2AResponse.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::lenient::response(&json!({"response_kind": "e2a.chunk", "sequence": 2, "status": null})).unwrap();
/// assert_eq!(r.value.sequence, 2);
/// assert_eq!(r.value.status, "in_progress");
/// assert!(e2a::lenient::response(&json!({"sequence": "2"})).is_err());
/// ```
pub fn response(input: &Value) -> Result<Lenient<E2AResponse>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let mut c = Ctx {
        f: Fields::new(map, ""),
        rules: Vec::new(),
    };
    let f = c.f;
    c.unknown_keys(RESPONSE_KEYS);
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
    let resp = E2AResponse {
        protocol_version: f.str_or("protocol_version", crate::E2A_PROTOCOL_VERSION)?,
        response_id: f.opt_str("response_id")?,
        request_id: f.opt_str("request_id")?,
        sequence: f.seq("sequence", 0)?,
        is_final: f.bool_or("is_final", false)?,
        status: f.str_or("status", "in_progress")?,
        response_kind: f.str_or("response_kind", "")?,
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
        agent_ref: f.opt_obj("agent_ref")?.cloned(),
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
