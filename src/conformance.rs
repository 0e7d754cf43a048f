//! Test support, not public API (hidden, exempt from semver): the conformance driver's dispatch: maps a DRIVER.md function name and its JSON input to
//! the SDK call, so the `e2a conformance-driver` command and `cargo test` run the same code.

use serde_json::{Map, Value};

use crate::error::Error;
use crate::fields::Fields;
use crate::legacy::{self, AgentResponse, AgentResponseChunk};
use crate::pyrepr::py_str;
use crate::{a2a, acp, wire, E2AEnvelope, E2AResponse};

/// Outcome of one driver call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The call succeeded with this output (may be `null`).
    Output(Value),
    /// The call failed (an error answer).
    Error(String),
    /// The function name is not known to this driver.
    UnknownFn,
}

impl From<Result<Value, Error>> for Outcome {
    fn from(r: Result<Value, Error>) -> Self {
        match r {
            Ok(v) => Outcome::Output(v),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

/// Every function name this driver implements (all 29 of DRIVER.md).
pub const FUNCTIONS: &[&str] = &[
    "envelope.from_dict",
    "response.from_dict",
    "acp.merge_params_to_prompt",
    "acp.envelope_to_jsonrpc_call",
    "acp.envelope_from_jsonrpc",
    "a2a.envelope_from_send_message",
    "acp.response_to_jsonrpc_response",
    "a2a.response_to_stream_payload",
    "wire.encode_agent_response",
    "wire.encode_agent_chunk",
    "wire.parse_unary",
    "wire.parse_chunk",
    "wire.is_e2a_response",
    "wire.encode_json_parse_error",
    "legacy.envelope_from_agent_fields",
    "legacy.fallback_envelope",
    "legacy.response_from_agent_response",
    "legacy.response_from_agent_chunk",
    "legacy.response_to_agent_response",
    "legacy.response_to_agent_chunk",
    "acp.tool_call_update",
    "acp.tool_result_update",
    "acp.todo_update",
    "acp.usage_update",
    "acp.parse_prompt_blocks",
    "acp.resource_uri_to_path",
    "acp.session_new_result",
    "acp.session_list_result",
    "acp.prompt_result",
];

fn obj(v: &Value) -> Result<&Map<String, Value>, Error> {
    v.as_object().ok_or_else(|| Error::field("", "expected object"))
}

fn opt_map(m: Option<Map<String, Value>>) -> Value {
    m.map(Value::Object).unwrap_or(Value::Null)
}

fn env(v: &Value) -> Result<E2AEnvelope, Error> {
    E2AEnvelope::from_value(v)
}

fn resp(v: &Value) -> Result<E2AResponse, Error> {
    E2AResponse::from_value(v)
}

/// Runs one conformance function on its input.
///
/// ```
/// use e2a::conformance::{call, Outcome};
/// let out = call("envelope.from_dict", &serde_json::json!({"channel_id": "web"}));
/// let Outcome::Output(v) = out else { panic!() };
/// assert_eq!(v["channel"], "web");
/// assert_eq!(call("nope", &serde_json::json!({})), Outcome::UnknownFn);
/// ```
pub fn call(function: &str, input: &Value) -> Outcome {
    if !FUNCTIONS.contains(&function) {
        return Outcome::UnknownFn;
    }
    run(function, input).into()
}

fn run(function: &str, input: &Value) -> Result<Value, Error> {
    let empty = Map::new();
    let f = Fields::new(input.as_object().unwrap_or(&empty), "");
    let sub = |k: &str| input.get(k).unwrap_or(&Value::Null);
    Ok(match function {
        "envelope.from_dict" => env(input)?.to_value(),
        "response.from_dict" => resp(input)?.to_value(),
        "acp.merge_params_to_prompt" => Value::Object(acp::merge_params_to_prompt(&env(input)?)?),
        "acp.envelope_to_jsonrpc_call" => acp::envelope_to_jsonrpc_call(&env(input)?)?.to_value(),
        "acp.envelope_from_jsonrpc" => acp::envelope_from_jsonrpc(&acp::JsonRpcIngress::from_value(input)?).to_value(),
        "a2a.envelope_from_send_message" => {
            a2a::envelope_from_send_message(&a2a::SendMessageIngress::from_value(input)?)?.to_value()
        }
        "acp.response_to_jsonrpc_response" => opt_map(acp::response_to_jsonrpc_response(&resp(input)?)),
        "a2a.response_to_stream_payload" => opt_map(a2a::response_to_stream_payload(&resp(input)?)),
        "wire.encode_agent_response" => {
            let r = AgentResponse::from_value(sub("response"))?;
            wire::encode_agent_response(&r, &f.str_or("response_id", "")?, f.seq("sequence", 0)?)
        }
        "wire.encode_agent_chunk" => {
            let c = AgentResponseChunk::from_value(sub("chunk"))?;
            let (rid, seq, stream) = (
                f.str_or("response_id", "")?,
                f.seq("sequence", 0)?,
                f.bool_or("is_stream", true)?,
            );
            wire::encode_agent_chunk(&c, &rid, seq, stream)
        }
        "wire.parse_unary" => wire::parse_unary(input)?.to_value(),
        "wire.parse_chunk" => wire::parse_chunk(input)?.to_value(),
        "wire.is_e2a_response" => Value::Bool(wire::is_e2a_response(input)),
        "wire.encode_json_parse_error" => wire::encode_json_parse_error(
            &f.str_or("request_id", "")?,
            &f.str_or("channel_id", "")?,
            &f.str_or("message", "")?,
            &f.str_or("response_id", "")?,
        ),
        "legacy.envelope_from_agent_fields" => {
            legacy::envelope_from_agent_fields(&legacy::AgentFields::from_value(input)?)?.to_value()
        }
        "legacy.fallback_envelope" => legacy::fallback_envelope(input)?.to_value(),
        "legacy.response_from_agent_response" => {
            let r = AgentResponse::from_value(sub("response"))?;
            let (rid, seq, ts) = (
                f.str_or("response_id", "")?,
                f.seq("sequence", 0)?,
                f.opt_str("timestamp")?,
            );
            legacy::response_from_agent_response(&r, &rid, seq, ts).to_value()
        }
        "legacy.response_from_agent_chunk" => {
            let c = AgentResponseChunk::from_value(sub("chunk"))?;
            let (rid, seq, ts) = (
                f.str_or("response_id", "")?,
                f.seq("sequence", 0)?,
                f.opt_str("timestamp")?,
            );
            legacy::response_from_agent_chunk(&c, &rid, seq, f.bool_or("is_stream", true)?, ts).to_value()
        }
        "legacy.response_to_agent_response" => legacy::response_to_agent_response(&resp(input)?)?.to_value(),
        "legacy.response_to_agent_chunk" => legacy::response_to_agent_chunk(&resp(input)?)?.to_value(),
        "acp.tool_call_update" => opt_map(acp::tool_updates::tool_call_update(obj(input)?, None)),
        "acp.tool_result_update" => Value::Object(acp::tool_updates::tool_result_update(obj(input)?, None)),
        "acp.todo_update" => opt_map(acp::tool_updates::todo_update(obj(input)?)),
        "acp.usage_update" => opt_map(acp::tool_updates::usage_update(obj(input)?)),
        "acp.parse_prompt_blocks" => serde_json::to_value(acp::parse_prompt_blocks(obj(input)?)).unwrap_or_default(),
        "acp.resource_uri_to_path" => {
            let uri = input.as_str().ok_or_else(|| Error::field("", "expected string"))?;
            acp::resource_uri_to_path(uri).map(Value::String).unwrap_or(Value::Null)
        }
        "acp.session_new_result" => {
            let id = f
                .get("session_id")
                .filter(|v| crate::fields::truthy(v))
                .map(py_str)
                .unwrap_or_default();
            acp::session_new_result(&id)
        }
        "acp.session_list_result" => {
            let ids: Vec<String> = match f.get("session_ids") {
                Some(Value::Array(a)) => a.iter().filter(|v| !v.is_null()).map(py_str).collect(),
                None => Vec::new(),
                Some(_) => return Err(f.err("session_ids", "array")),
            };
            acp::session_list_result(ids)
        }
        "acp.prompt_result" => {
            let stop = f
                .opt_str("stop_reason")?
                .ok_or_else(|| f.err("stop_reason", "string"))?;
            acp::prompt_result(&stop, f.get("user_message_id").and_then(Value::as_str))
        }
        other => return Err(Error::Unsupported(format!("unknown fn `{other}`"))),
    })
}

/// Answers one driver request line (`{"id", "fn", "input"}`) with one answer line.
pub fn answer_line(line: &str) -> String {
    let req: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return serde_json::json!({"id": null, "error": format!("bad request line: {}", Error::from_json(&e))})
                .to_string()
        }
    };
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let function = req.get("fn").and_then(Value::as_str).unwrap_or("");
    let input = req.get("input").cloned().unwrap_or(Value::Null);
    let answer = match call(function, &input) {
        Outcome::Output(v) => serde_json::json!({"id": id, "output": v}),
        Outcome::Error(e) => serde_json::json!({"id": id, "error": e}),
        Outcome::UnknownFn => serde_json::json!({"id": id, "error": format!("unknown fn `{function}`")}),
    };
    answer.to_string()
}
