//! ACP `session/update` objects for tool calls, tool results, todos and usage
//! (the reference's `acp/acp_tool_updates.py`): tool-kind inference, titles, locations,
//! terminal embedding, status rules and the tool-call cache that lets a result reuse what the
//! call announced.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::fields::truthy;
use crate::pyrepr::{py_str, strip};

mod kinds;
mod titles;

pub use kinds::tool_kind;
pub use titles::{normalize_arguments, tool_locations, tool_title};

use kinds::{aliased_name, canonical_name, is_list_like};
use titles::first_str;

/// What a `tool_call` update announced, kept so the matching result can reuse it.
pub type ToolCallCache = HashMap<String, Map<String, Value>>;

/// Python's `value not in (None, "")`.
fn not_none_or_empty(v: &Value) -> bool {
    !(v.is_null() || v.as_str() == Some(""))
}

/// Python's `value not in (None, "", [], {})`.
fn not_empty(v: &Value) -> bool {
    not_none_or_empty(v) && v.as_array().is_none_or(|a| !a.is_empty()) && v.as_object().is_none_or(|m| !m.is_empty())
}

/// The reference's `str(value or "")`: a truthy value as Python's `str()`, else `""`.
fn py_str_or_empty(v: Option<&Value>) -> String {
    match v.filter(|v| truthy(v)) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => py_str(v),
        None => String::new(),
    }
}

/// The first truthy value among `keys` (Python's `m.get(a) or m.get(b)`).
fn first_truthy<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| m.get(*k).filter(|v| truthy(v)))
}

/// What a descriptor is built from (the reference's `build_acp_tool_descriptor` arguments).
struct DescriptorInput<'a> {
    tool_name: &'a str,
    arguments: Option<&'a Value>,
    tool_call_id: &'a str,
    status: String,
    raw_output: Option<&'a Value>,
    title: Option<&'a Value>,
    kind: Option<&'a Value>,
}

/// The reference's `build_acp_tool_descriptor`: `toolCallId`, `title` (an explicit truthy title
/// as `str()`, else the built one; stripped), `kind` (likewise, `other` when blank), `status`
/// when non-empty, `rawInput` when non-empty, `locations`, and `rawOutput` when given and the
/// tool is not list-like.
fn descriptor(d: DescriptorInput<'_>) -> Map<String, Value> {
    let args = normalize_arguments(d.arguments);
    let name = aliased_name(d.tool_name);
    let kind = match d.kind.filter(|v| truthy(v)) {
        Some(k) => py_str_or_empty(Some(k)),
        None => tool_kind(name).to_string(),
    };
    let kind = Some(strip(&kind)).filter(|k| !k.is_empty()).unwrap_or("other");
    let title = match d.title.filter(|v| truthy(v)) {
        Some(t) => py_str_or_empty(Some(t)),
        None => tool_title(name, &args),
    };
    let mut out = Map::new();
    out.insert("toolCallId".into(), strip(d.tool_call_id).into());
    out.insert("title".into(), strip(&title).into());
    out.insert("kind".into(), kind.into());
    if !d.status.is_empty() {
        out.insert("status".into(), d.status.into());
    }
    let locations = tool_locations(&args);
    if !args.is_empty() {
        out.insert("rawInput".into(), Value::Object(args));
    }
    if !locations.is_empty() {
        out.insert("locations".into(), Value::Array(locations));
    }
    if let Some(r) = d.raw_output.filter(|r| !r.is_null() && !is_list_like(name)) {
        out.insert("rawOutput".into(), r.clone());
    }
    out
}

/// A tool-call id: the first truthy of `tool_call_id`, `toolCallId`, `id`, as a string,
/// stripped (the reference's `str(a or b or c or "").strip()`); `""` when there is none.
fn tool_id(m: &Map<String, Value>) -> String {
    strip(&py_str_or_empty(first_truthy(m, &["tool_call_id", "toolCallId", "id"]))).to_string()
}

/// The `tool_call` session update for a tool-call event payload (`{"tool_call": {id, name,
/// arguments, status?, title?, kind?}, status?, title?, kind?}`), or `None` without an id.
/// Records the call in `cache` for the matching result.
///
/// The name is `str(name or "")` (a missing name is `""`); an explicit `title` or `kind` is
/// written as `str()` of it, stripped.
///
/// ```
/// use e2a::acp::tool_updates::{tool_call_update, ToolCallCache};
/// let mut cache = ToolCallCache::new();
/// let p = serde_json::json!({"tool_call": {"id": "c1", "name": "read_file", "arguments": {"path": "src/main.py"}}});
/// let u = tool_call_update(p.as_object().unwrap(), Some(&mut cache)).unwrap();
/// assert_eq!(u["title"], "Reading src/main.py");
/// assert_eq!(cache["c1"]["toolName"], "read_file");
/// ```
pub fn tool_call_update(payload: &Map<String, Value>, cache: Option<&mut ToolCallCache>) -> Option<Map<String, Value>> {
    let call = payload.get("tool_call")?.as_object()?;
    let id = tool_id(call);
    if id.is_empty() {
        return None;
    }
    let name = py_str_or_empty(call.get("name"));
    // `tool_call.get("arguments", {})`: an explicit null stays null
    let empty = Value::Object(Map::new());
    let raw_args = Some(call.get("arguments").unwrap_or(&empty));
    let status = first_truthy(call, &["status"])
        .or_else(|| first_truthy(payload, &["status"]))
        .map_or_else(|| "pending".to_string(), |v| py_str_or_empty(Some(v)));
    let desc = descriptor(DescriptorInput {
        tool_name: &name,
        arguments: raw_args,
        tool_call_id: &id,
        status,
        raw_output: None,
        title: first_truthy(call, &["title"]).or_else(|| first_truthy(payload, &["title"])),
        kind: first_truthy(call, &["kind"]).or_else(|| first_truthy(payload, &["kind"])),
    });
    // `_legacy_arguments`: an object as is, else the normalized object when non-empty, else the
    // value when truthy, else `{}`
    let args = normalize_arguments(raw_args);
    let arguments = match raw_args {
        Some(Value::Object(m)) => Value::Object(m.clone()),
        _ if !args.is_empty() => Value::Object(args),
        Some(v) if truthy(v) => v.clone(),
        _ => Value::Object(Map::new()),
    };
    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "tool_call".into());
    out.insert(
        "toolCall".into(),
        json!({"id": id, "name": name, "arguments": arguments}),
    );
    out.extend(desc.clone());
    if let Some(cache) = cache {
        let mut entry = desc;
        entry.insert("toolName".into(), name.into());
        cache.insert(id, entry);
    }
    Some(out)
}

/// The status of a tool result (`_resolve_tool_result_status`).
fn result_status(payload: &Map<String, Value>, result: &Value, tool_name: &str, raw_output: Option<&Value>) -> String {
    let explicit = py_str_or_empty(payload.get("status"));
    let explicit = strip(&explicit);
    if !explicit.is_empty() {
        return explicit.to_string();
    }
    let canonical = canonical_name(tool_name);
    let terminal = raw_output
        .and_then(Value::as_object)
        .and_then(|o| first_str(o, &["terminalId", "terminal_id"]));
    let timed_out = raw_output
        .and_then(Value::as_object)
        .and_then(|o| o.get("timedOut"))
        .is_some_and(truthy);
    let running = (terminal.is_some() && matches!(canonical.as_str(), "create_terminal" | "terminal_create"))
        || (timed_out && canonical == "wait_for_terminal_exit");
    if running {
        "in_progress".into()
    } else if payload.get("error").is_some_and(not_none_or_empty) {
        "failed".into()
    } else if not_none_or_empty(result) {
        "completed".into()
    } else {
        "in_progress".into()
    }
}

/// The `tool_call_update` session update for a tool-result event payload. Never `None`:
/// terminals are embedded (`{"type":"terminal","terminalId"}`), text results become content,
/// and the status follows the reference rules (explicit status; running terminals stay
/// `in_progress`; an `error` that is not null or `""` → `failed`; a result that is not null or
/// `""` → `completed`, so `false` and `0` complete too).
///
/// ```
/// use e2a::acp::tool_updates::tool_result_update;
/// let p = serde_json::json!({"tool_call_id": "t1", "tool_name": "create_terminal", "raw_output": {"terminalId": "term_1"}});
/// let u = tool_result_update(p.as_object().unwrap(), None);
/// assert_eq!(u["status"], "in_progress");
/// assert_eq!(u["content"], serde_json::json!([{"type": "terminal", "terminalId": "term_1"}]));
/// ```
pub fn tool_result_update(payload: &Map<String, Value>, cache: Option<&ToolCallCache>) -> Map<String, Value> {
    let result = match payload.get("result") {
        Some(r) if !r.is_null() => r.clone(),
        _ => payload.get("content").cloned().unwrap_or_else(|| "".into()),
    };
    let id = tool_id(payload);
    let cached = cache.filter(|_| !id.is_empty()).and_then(|c| c.get(&id));
    let tool_call = payload.get("toolCall").and_then(Value::as_object);
    let mut tool_name = strip(&py_str_or_empty(first_truthy(payload, &["tool_name", "name"]))).to_string();
    if tool_name.is_empty() {
        if let Some(t) = tool_call {
            tool_name = strip(&py_str_or_empty(t.get("name"))).to_string();
        }
    }
    if tool_name.is_empty() {
        // the cached name is not stripped again
        tool_name = py_str_or_empty(cached.and_then(|c| c.get("toolName")));
    }
    // `payload.get("arguments") or payload.get("rawInput")`: the first truthy, else the last
    let mut arguments = first_truthy(payload, &["arguments"]).or_else(|| payload.get("rawInput"));
    if arguments.is_none_or(|a| !not_empty(a)) {
        if let Some(t) = tool_call {
            arguments = t.get("arguments");
        }
    }
    let raw_output = ["rawOutput", "raw_output"]
        .iter()
        .find_map(|k| payload.get(*k).filter(|v| !v.is_null()));
    let terminal = raw_output
        .and_then(Value::as_object)
        .and_then(|o| first_str(o, &["terminalId", "terminal_id"]));

    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "tool_call_update".into());
    out.insert("toolCallId".into(), id.clone().into());
    if not_none_or_empty(&result) && terminal.is_none() {
        out.insert("result".into(), result.clone());
    }
    if !tool_name.is_empty() {
        out.insert("toolName".into(), tool_name.clone().into());
    }
    if let Some(c) = cached {
        for k in ["title", "kind", "rawInput", "locations"] {
            if let Some(v) = c.get(k).filter(|v| not_empty(v)) {
                out.insert(k.into(), v.clone());
            }
        }
    }
    let arguments = arguments
        .filter(|a| truthy(a))
        .or_else(|| out.get("rawInput").filter(|a| truthy(a)));
    let desc = descriptor(DescriptorInput {
        tool_name: &tool_name,
        arguments,
        tool_call_id: &id,
        status: result_status(payload, &result, &tool_name, raw_output),
        raw_output,
        title: first_truthy(payload, &["title"]).or_else(|| first_truthy(&out, &["title"])),
        kind: first_truthy(payload, &["kind"]).or_else(|| first_truthy(&out, &["kind"])),
    });
    for k in ["title", "kind", "status", "rawOutput"] {
        if let Some(v) = desc.get(k).filter(|v| not_none_or_empty(v)) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(t) = terminal {
        out.insert("content".into(), json!([{"type": "terminal", "terminalId": t}]));
    } else {
        let text = py_str_or_empty(Some(&result));
        let text = strip(&text);
        if !text.is_empty() {
            out.insert(
                "content".into(),
                json!([{"type": "content", "content": {"type": "text", "text": text}}]),
            );
        }
    }
    out
}

/// The `todo_update` session update (a project extension of ACP), or `None` when `todos` is
/// not a list.
/// ```
/// let p = serde_json::json!({"todos": [{"content": "a", "status": "pending"}]});
/// assert_eq!(e2a::acp::tool_updates::todo_update(p.as_object().unwrap()).unwrap()["sessionUpdate"], "todo_update");
/// assert!(e2a::acp::tool_updates::todo_update(serde_json::json!({"todos": "x"}).as_object().unwrap()).is_none());
/// ```
pub fn todo_update(payload: &Map<String, Value>) -> Option<Map<String, Value>> {
    let todos = payload.get("todos")?.as_array()?;
    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "todo_update".into());
    out.insert("todos".into(), Value::Array(todos.clone()));
    Some(out)
}

/// The `usage_update` session update, or `None` unless `usage` is a non-empty object.
/// ```
/// let p = serde_json::json!({"usage": {}});
/// assert!(e2a::acp::tool_updates::usage_update(p.as_object().unwrap()).is_none());
/// ```
pub fn usage_update(payload: &Map<String, Value>) -> Option<Map<String, Value>> {
    let usage = payload.get("usage")?.as_object().filter(|u| !u.is_empty())?;
    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "usage_update".into());
    out.insert("usage".into(), Value::Object(usage.clone()));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn result_reuses_cached_call() {
        let mut cache = ToolCallCache::new();
        let call = obj(
            json!({"tool_call": {"id": "c1", "name": "read_file", "arguments": {"path": "src/main.py", "line": 4}}}),
        );
        tool_call_update(&call, Some(&mut cache)).unwrap();
        let res = tool_result_update(
            &obj(json!({"tool_call_id": "c1", "result": "fn main() {}"})),
            Some(&cache),
        );
        assert_eq!(res["title"], "Reading src/main.py");
        assert_eq!(res["kind"], "read");
        assert_eq!(res["toolName"], "read_file");
        assert_eq!(res["rawInput"], json!({"path": "src/main.py", "line": 4}));
        assert_eq!(res["locations"], json!([{"path": "src/main.py", "line": 4}]));
        assert_eq!(res["status"], "completed");
        assert_eq!(res["content"][0]["content"]["text"], "fn main() {}");
    }

    #[test]
    fn wait_for_exit_timed_out_stays_in_progress() {
        let res = tool_result_update(
            &obj(json!({"id": "w", "name": "wait_for_terminal_exit", "rawOutput": {"timedOut": true}, "result": "r"})),
            None,
        );
        assert_eq!(res["status"], "in_progress");
        assert_eq!(res["rawOutput"], json!({"timedOut": true}));
    }

    #[test]
    fn failed_with_content_text() {
        let res = tool_result_update(
            &obj(json!({"id": "f", "name": "bash", "content": "boom", "error": "x"})),
            None,
        );
        assert_eq!(res["status"], "failed");
        assert_eq!(res["result"], "boom");
        assert_eq!(res["content"][0]["content"]["text"], "boom");
    }

    #[test]
    fn list_directories_omits_raw_output() {
        let res = tool_result_update(
            &obj(json!({"id": "l", "tool_name": "list_directories", "rawOutput": {"x": 1}, "result": "a"})),
            None,
        );
        assert_eq!(res["title"], "Listing files");
        assert!(!res.contains_key("rawOutput"));
    }
}
