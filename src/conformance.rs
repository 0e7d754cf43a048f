//! Test support, not public API (hidden, exempt from semver): the conformance driver's dispatch: maps a DRIVER.md function name and its JSON input to
//! the SDK call, so the `e2a conformance-driver` command and `cargo test` run the same code.

use std::io::{self, BufRead, Write};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::fields::Fields;
use crate::legacy::{self, AgentResponse, AgentResponseChunk};
use crate::limits::Limits;
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
    // the same limits for every function, before any of them reads its input (the driver
    // checks the raw line before parsing it; this covers inputs built in-process)
    if let Err(e) = Limits::default().check_value(input) {
        return Outcome::Error(e.to_string());
    }
    run(function, input).into()
}

/// Runs `function` on `input`, by the module it names (the part before the dot).
fn run(function: &str, input: &Value) -> Result<Value, Error> {
    let empty = Map::new();
    let f = Fields::new(input.as_object().unwrap_or(&empty), "");
    match function.split_once('.').map_or("", |(module, _)| module) {
        "acp" => run_acp(function, input, &f),
        "a2a" => run_a2a(function, input),
        "wire" => run_wire(function, input, &f),
        "legacy" => run_legacy(function, input, &f),
        _ => run_read(function, input),
    }
}

/// The member `k` of `input`, or null.
fn sub<'a>(input: &'a Value, k: &str) -> &'a Value {
    input.get(k).unwrap_or(&Value::Null)
}

/// The error of a function name no group knows.
fn unknown(function: &str) -> Error {
    Error::Unsupported(format!("unknown fn `{function}`"))
}

/// `envelope.*` and `response.*`: reading a message.
fn run_read(function: &str, input: &Value) -> Result<Value, Error> {
    Ok(match function {
        "envelope.from_dict" => env(input)?.to_value(),
        "response.from_dict" => resp(input)?.to_value(),
        other => return Err(unknown(other)),
    })
}

/// `a2a.*`: the A2A adapter.
fn run_a2a(function: &str, input: &Value) -> Result<Value, Error> {
    Ok(match function {
        "a2a.envelope_from_send_message" => {
            a2a::envelope_from_send_message(&a2a::SendMessageIngress::from_value(input)?)?.to_value()
        }
        "a2a.response_to_stream_payload" => opt_map(a2a::response_to_stream_payload(&resp(input)?)),
        other => return Err(unknown(other)),
    })
}

/// `acp.*`: the ACP adapter, its tool updates, prompt blocks and session results.
fn run_acp(function: &str, input: &Value, f: &Fields<'_>) -> Result<Value, Error> {
    Ok(match function {
        "acp.merge_params_to_prompt" => Value::Object(acp::merge_params_to_prompt(&env(input)?)?),
        "acp.envelope_to_jsonrpc_call" => acp::envelope_to_jsonrpc_call(&env(input)?)?.to_value(),
        "acp.envelope_from_jsonrpc" => acp::envelope_from_jsonrpc(&acp::JsonRpcIngress::from_value(input)?).to_value(),
        "acp.response_to_jsonrpc_response" => opt_map(acp::response_to_jsonrpc_response(&resp(input)?)),
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
                // the reference's `str(session_id or "")`: falsy ids are blank and dropped
                Some(Value::Array(a)) => a.iter().filter(|v| crate::fields::truthy(v)).map(py_str).collect(),
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
        other => return Err(unknown(other)),
    })
}

/// `wire.*`: the agent-server wire encodings and parsers.
fn run_wire(function: &str, input: &Value, f: &Fields<'_>) -> Result<Value, Error> {
    Ok(match function {
        "wire.encode_agent_response" => {
            let r = AgentResponse::from_value(sub(input, "response"))?;
            wire::encode_agent_response(&r, &f.str_or("response_id", "")?, f.seq("sequence", 0)?)
        }
        "wire.encode_agent_chunk" => {
            let c = AgentResponseChunk::from_value(sub(input, "chunk"))?;
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
        other => return Err(unknown(other)),
    })
}

/// `legacy.*`: the legacy agent-server conversions.
fn run_legacy(function: &str, input: &Value, f: &Fields<'_>) -> Result<Value, Error> {
    Ok(match function {
        "legacy.envelope_from_agent_fields" => {
            legacy::envelope_from_agent_fields(&legacy::AgentFields::from_value(input)?)?.to_value()
        }
        "legacy.fallback_envelope" => legacy::fallback_envelope(input)?.to_value(),
        "legacy.response_from_agent_response" => {
            let r = AgentResponse::from_value(sub(input, "response"))?;
            let (rid, seq, ts) = (
                f.str_or("response_id", "")?,
                f.seq("sequence", 0)?,
                f.opt_str("timestamp")?,
            );
            legacy::response_from_agent_response(&r, &rid, seq, ts).to_value()
        }
        "legacy.response_from_agent_chunk" => {
            let c = AgentResponseChunk::from_value(sub(input, "chunk"))?;
            let (rid, seq, ts) = (
                f.str_or("response_id", "")?,
                f.seq("sequence", 0)?,
                f.opt_str("timestamp")?,
            );
            legacy::response_from_agent_chunk(&c, &rid, seq, f.bool_or("is_stream", true)?, ts).to_value()
        }
        "legacy.response_to_agent_response" => legacy::response_to_agent_response(&resp(input)?)?.to_value(),
        "legacy.response_to_agent_chunk" => legacy::response_to_agent_chunk(&resp(input)?)?.to_value(),
        other => return Err(unknown(other)),
    })
}

/// An integer literal of `text` (outside strings) that fits neither `i64` nor `u64`, if any.
/// Such integers are refused (DRIVER.md, deliberate difference 4): `serde_json` would read them
/// as the nearest double, a silently different number.
///
/// ```
/// use e2a::conformance::integer_beyond_64_bits as big;
/// assert_eq!(big(r#"{"a": [18446744073709551615, -9223372036854775808, 1e400, "99999999999999999999"]}"#), None);
/// assert_eq!(big(r#"{"a": -9223372036854775809}"#), Some("-9223372036854775809"));
/// ```
pub fn integer_beyond_64_bits(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    let (mut i, mut in_str, mut esc) = (0, false, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        if c == b'-' || c.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], b'.' | b'e' | b'E' | b'+' | b'-')) {
                i += 1;
            }
            let token = &text[start..i];
            let integer = !token.contains(['.', 'e', 'E']);
            if integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() && token != "-" {
                return Some(token);
            }
            continue;
        }
        i += 1;
    }
    None
}

fn error_answer(id: Value, error: impl std::fmt::Display) -> String {
    serde_json::json!({"id": id, "error": error.to_string()}).to_string()
}

/// The `id` of a request line that cannot be answered in full (too long, not UTF-8, not JSON),
/// when it can still be read: the value of a leading `"id"` member that is a string or number.
fn leading_id(line: &[u8]) -> Value {
    let text = String::from_utf8_lossy(&line[..line.len().min(4096)]);
    let rest = text.trim_start().strip_prefix('{').map(str::trim_start);
    let rest = rest.and_then(|r| r.strip_prefix("\"id\"")).map(str::trim_start);
    let Some(rest) = rest.and_then(|r| r.strip_prefix(':')) else {
        return Value::Null;
    };
    match serde_json::Deserializer::from_str(rest).into_iter::<Value>().next() {
        Some(Ok(v @ (Value::String(_) | Value::Number(_)))) => v,
        _ => Value::Null,
    }
}

/// Answers one driver request line (`{"id", "fn", "input"}`) with one answer line. The line is
/// checked against the default [`Limits`] (size, depth, string length) and for integers beyond
/// 64 bits before it is parsed; a line that fails is answered with an error.
pub fn answer_line(line: &str) -> String {
    if let Err(e) = Limits::default().check(line) {
        return error_answer(leading_id(line.as_bytes()), format!("request line refused: {e}"));
    }
    if let Some(n) = integer_beyond_64_bits(line) {
        return error_answer(
            leading_id(line.as_bytes()),
            format!("integer beyond 64 bits refused: {}", &n[..n.len().min(40)]),
        );
    }
    let req: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return error_answer(
                leading_id(line.as_bytes()),
                format!("bad request line: {}", Error::from_json(&e)),
            )
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

/// Reads one line of `input` into `buf` (without its `\n`), keeping at most `max + 1` bytes;
/// the rest of a longer line is read and dropped. Returns the bytes read (0 at end of input)
/// and whether the line was longer than `max`.
fn read_line_capped(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<(usize, bool)> {
    let (mut read, mut over) = (0usize, false);
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((read, over));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        let room = (max + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        over |= take > room || buf.len() > max;
        let used = if done { take + 1 } else { take };
        input.consume(used);
        read += used;
        if done {
            return Ok((read, over));
        }
    }
}

/// The conformance driver of DRIVER.md: answers every request line of `input` on `output`, one
/// answer line each, in order, until end of input. A line that cannot be answered in full — one
/// longer than the default [`Limits::max_bytes`] (refused without being kept or parsed), one
/// that is not UTF-8, one that is not JSON — gets an error answer (with its `id` when a leading
/// `"id"` member can be read) and the driver goes on. Blank lines are skipped. Only an I/O
/// error of `input` or `output` ends it early.
///
/// ```
/// let input = b"{\"id\": 1, \"fn\": \"acp.session_new_result\", \"input\": {\"session_id\": \" s \"}}\n\xff\n{\"id\": 2, \"fn\": \"nope\"}\n";
/// let mut out = Vec::new();
/// e2a::conformance::drive(&input[..], &mut out).unwrap();
/// let lines: Vec<&str> = std::str::from_utf8(&out).unwrap().lines().collect();
/// assert_eq!(lines.len(), 3);
/// assert!(lines[1].contains("not UTF-8"));
/// ```
pub fn drive(mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let max = Limits::default().max_bytes;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let (read, over) = read_line_capped(&mut input, &mut buf, max)?;
        if read == 0 {
            break;
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let answer = if over {
            error_answer(
                leading_id(&buf),
                format!("request line refused: longer than max_bytes ({max} bytes)"),
            )
        } else {
            match std::str::from_utf8(&buf) {
                Ok(line) if crate::pyrepr::is_blank(line) => continue,
                Ok(line) => answer_line(line),
                Err(e) => error_answer(
                    leading_id(&buf),
                    format!("request line is not UTF-8 (invalid byte at {})", e.valid_up_to()),
                ),
            }
        };
        writeln!(output, "{answer}")?;
    }
    output.flush()
}
