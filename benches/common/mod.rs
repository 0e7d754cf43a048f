//! Inputs and derive-only baselines shared by the criterion benchmarks (`e2a.rs`) and the
//! callgrind instruction counts (`callgrind.rs`).

#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The §11.1 example envelope (gateway → agent server, streaming chat): ~340 bytes.
pub const ENVELOPE: &str = r#"{"protocol_version":"1.0","request_id":"req_abc_01","session_id":"sess_xyz","channel":"web","method":"chat.send","is_stream":true,"timestamp":"2026-03-28T12:00:00+00:00","identity_origin":"user","user_id":"u_001","params":{"content":"Hello","mode":"plan","query":"Hello"},"provenance":{"source_protocol":"e2a"},"channel_context":{"feishu_open_id":"ou_xxx"}}"#;
/// The same request in the legacy shape (channel_id, req_method, epoch timestamp, metadata).
pub const LEGACY: &str = r#"{"request_id":"req_abc_01","channel_id":"web","session_id":"sess_xyz","req_method":"chat.send","is_stream":true,"timestamp":1774524781.15,"user_id":"u_001","params":{"content":"Hello","mode":"plan","query":"Hello"},"metadata":{"feishu_open_id":"ou_xxx"}}"#;

/// Derive-only struct with the envelope's fields: the baseline.
#[derive(Serialize, Deserialize)]
pub struct PlainProvenance {
    #[serde(default)]
    source_protocol: Option<String>,
    #[serde(default)]
    converter: Option<String>,
    #[serde(default)]
    converted_at: Option<String>,
    #[serde(default)]
    details: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
pub struct PlainEnvelope {
    protocol_version: Option<String>,
    provenance: Option<PlainProvenance>,
    request_id: Option<String>,
    jsonrpc_id: Option<Value>,
    correlation_id: Option<String>,
    task_id: Option<String>,
    context_id: Option<String>,
    session_id: Option<String>,
    message_id: Option<String>,
    timestamp: Option<String>,
    identity_origin: Option<String>,
    channel: Option<String>,
    user_id: Option<String>,
    agent_ref: Option<Map<String, Value>>,
    chat_id: Option<String>,
    source_agent_id: Option<String>,
    agent_id: Option<String>,
    service_id: Option<String>,
    workspace_key: Option<String>,
    method: Option<String>,
    #[serde(default)]
    params: Map<String, Value>,
    ext_method: Option<String>,
    session_update_kind: Option<String>,
    #[serde(default)]
    is_stream: bool,
    #[serde(default)]
    expected_output_modes: Vec<String>,
    auth: Option<Value>,
    #[serde(default)]
    channel_context: Map<String, Value>,
    #[serde(default)]
    a2a_metadata: Map<String, Value>,
    #[serde(default)]
    acp_meta: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
pub struct PlainResponse {
    protocol_version: Option<String>,
    response_id: Option<String>,
    request_id: Option<String>,
    #[serde(default)]
    sequence: u64,
    #[serde(default)]
    is_final: bool,
    status: Option<String>,
    response_kind: Option<String>,
    timestamp: Option<String>,
    provenance: Option<PlainProvenance>,
    #[serde(default)]
    body: Map<String, Value>,
    jsonrpc_id: Option<Value>,
    correlation_id: Option<String>,
    task_id: Option<String>,
    context_id: Option<String>,
    session_id: Option<String>,
    message_id: Option<String>,
    #[serde(default)]
    is_stream: bool,
    identity_origin: Option<String>,
    channel: Option<String>,
    user_id: Option<String>,
    agent_ref: Option<Map<String, Value>>,
    source_agent_id: Option<String>,
    method: Option<String>,
    #[serde(default)]
    projections: Map<String, Value>,
    #[serde(default)]
    channel_context: Map<String, Value>,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    a2a_metadata: Map<String, Value>,
    #[serde(default)]
    acp_meta: Map<String, Value>,
}
