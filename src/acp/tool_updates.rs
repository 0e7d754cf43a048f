//! ACP `session/update` objects for tool calls, tool results, todos and usage
//! (the reference's `acp/acp_tool_updates.py`): tool-kind inference, titles, locations,
//! terminal embedding, status rules and the tool-call cache that lets a result reuse what the
//! call announced.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::fields::truthy;

/// What a `tool_call` update announced, kept so the matching result can reuse it.
pub type ToolCallCache = HashMap<String, Map<String, Value>>;

const PATH_KEYS: [&str; 9] = [
    "path",
    "file_path",
    "file",
    "dir_path",
    "target_path",
    "destination",
    "source",
    "cwd",
    "root",
];
const LIST_LIKE: [&str; 8] = [
    "list",
    "list_dir",
    "list_directories",
    "list_directory",
    "list_files",
    "list_paths",
    "ls",
    "glob",
];

/// The ACP tool kinds this module infers.
const KINDS: [(&str, &[&str]); 7] = [
    ("delete", &["delete", "remove", "remove_file", "rm"]),
    ("move", &["move", "move_file", "rename", "rename_file"]),
    (
        "edit",
        &[
            "apply_patch",
            "edit",
            "edit_file",
            "search_replace",
            "write",
            "write_file",
            "write_text_file",
        ],
    ),
    (
        "execute",
        &[
            "bash",
            "create_terminal",
            "exec",
            "exec_command",
            "mcp_exec_command",
            "release_terminal",
            "run",
            "shell",
            "terminal_create",
            "wait_for_terminal_exit",
        ],
    ),
    ("fetch", &["fetch", "fetch_webpage", "mcp_fetch_webpage"]),
    (
        "search",
        &[
            "grep",
            "glob",
            "glob_file_search",
            "mcp_free_search",
            "mcp_paid_search",
            "search",
        ],
    ),
    // list-like names (LIST_LIKE) are `read` too
    (
        "read",
        &["read", "read_file", "read_terminal_output", "read_text_file", "view"],
    ),
];

/// The stripped name with the reference's aliases applied (case kept, as the reference's dict
/// lookup does): this is what titles humanize.
fn aliased_name(name: &str) -> &str {
    match name.trim() {
        "free_search" => "mcp_free_search",
        "paid_search" => "mcp_paid_search",
        "fetch_webpage" => "mcp_fetch_webpage",
        "exec_command" => "mcp_exec_command",
        n => n,
    }
}

/// The lowercased aliased name that kinds are inferred from.
fn canonical_name(name: &str) -> String {
    let n = name.trim().to_lowercase();
    aliased_name(&n).to_string()
}

/// The ACP tool kind of a tool name (`read`, `edit`, `delete`, `move`, `search`, `execute`,
/// `fetch` or `other`).
///
/// ```
/// assert_eq!(e2a::acp::tool_updates::tool_kind("Read_File"), "read");
/// assert_eq!(e2a::acp::tool_updates::tool_kind("free_search"), "search");
/// assert_eq!(e2a::acp::tool_updates::tool_kind("mystery"), "other");
/// ```
pub fn tool_kind(name: &str) -> &'static str {
    let n = canonical_name(name);
    KINDS
        .iter()
        .find(|(_, names)| names.contains(&n.as_str()))
        .map(|(k, _)| *k)
        .unwrap_or(if LIST_LIKE.contains(&n.as_str()) {
            "read"
        } else {
            "other"
        })
}

fn is_list_like(name: &str) -> bool {
    LIST_LIKE.contains(&canonical_name(name).as_str())
}

/// Tool arguments as an object: objects as is; JSON text parsed (non-objects wrapped as
/// `{"input": text}`); blank or other values → `{}`.
/// ```
/// use e2a::acp::tool_updates::normalize_arguments;
/// assert_eq!(normalize_arguments(Some(&serde_json::json!("{\"a\": 1}")))["a"], 1);
/// assert_eq!(normalize_arguments(Some(&serde_json::json!("ls -la")))["input"], "ls -la");
/// assert!(normalize_arguments(Some(&serde_json::json!(5))).is_empty());
/// ```
pub fn normalize_arguments(v: Option<&Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(_) => single("input", s),
            Err(_) if !s.trim().is_empty() => single("input", s),
            Err(_) => Map::new(),
        },
        _ => Map::new(),
    }
}

fn single(k: &str, v: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(k.into(), v.into());
    m
}

fn first_str<'a>(args: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| {
        args.get(*k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    })
}

fn summarize_path(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
    if parts.is_empty() {
        return p.to_string();
    }
    parts[parts.len().saturating_sub(3)..].join("/")
}

fn humanize(name: &str) -> String {
    let words: Vec<String> = name
        .trim()
        .split(['_', '.'])
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        })
        .collect();
    if words.is_empty() {
        "Using tool".into()
    } else {
        words.join(" ")
    }
}

/// The human title of a tool call (`Reading src/main.py`, `Running ls -la`, …).
/// ```
/// let args = serde_json::json!({"command": "ls -la"});
/// assert_eq!(e2a::acp::tool_updates::tool_title("bash", args.as_object().unwrap()), "Running ls -la");
/// ```
pub fn tool_title(name: &str, args: &Map<String, Value>) -> String {
    let kind = tool_kind(name);
    let canonical = canonical_name(name);
    let path = first_str(args, &PATH_KEYS).map(summarize_path);
    let terminal = first_str(args, &["terminalId", "terminal_id"]);
    match kind {
        "execute" => {
            if let (Some(id), "release_terminal") = (terminal, canonical.as_str()) {
                return format!("Releasing terminal {id}");
            }
            if let (Some(id), "wait_for_terminal_exit") = (terminal, canonical.as_str()) {
                return format!("Waiting for terminal exit {id}");
            }
            if let Some(cmd) = first_str(args, &["command", "cmd"]) {
                return format!("Running {cmd}");
            }
            return match path {
                Some(p) => format!("Running in {p}"),
                None => "Running command".into(),
            };
        }
        "fetch" => {
            if let Some(url) = first_str(args, &["url"]) {
                return format!("Fetching {url}");
            }
        }
        "search" => {
            let q = first_str(args, &["pattern", "query", "term", "text"]);
            return match (q, path) {
                (Some(q), Some(p)) => format!("Searching {q} in {p}"),
                (Some(q), None) => format!("Searching {q}"),
                (None, Some(p)) => format!("Searching in {p}"),
                (None, None) => "Searching".into(),
            };
        }
        "edit" => return path.map_or("Editing files".into(), |p| format!("Editing {p}")),
        "delete" => return path.map_or("Deleting files".into(), |p| format!("Deleting {p}")),
        "move" => {
            let dest = first_str(args, &["destination", "dest", "target_path"]).map(summarize_path);
            return match (path, dest) {
                (Some(p), Some(d)) => format!("Moving {p} to {d}"),
                (Some(p), None) => format!("Moving {p}"),
                _ => "Moving files".into(),
            };
        }
        _ => {}
    }
    if is_list_like(name) {
        return path.map_or("Listing files".into(), |p| format!("Listing {p}"));
    }
    if kind == "read" {
        return path.map_or("Reading data".into(), |p| format!("Reading {p}"));
    }
    humanize(aliased_name(name))
}

/// ACP `locations` of a tool call: every path key then the first five `paths`, deduplicated,
/// with a positive `line` when given.
/// ```
/// let args = serde_json::json!({"path": "/a/b.rs", "line": 3, "paths": ["/a/b.rs", "/c"]});
/// let locs = e2a::acp::tool_updates::tool_locations(args.as_object().unwrap());
/// assert_eq!(locs, vec![serde_json::json!({"path": "/a/b.rs", "line": 3}), serde_json::json!({"path": "/c", "line": 3})]);
/// ```
pub fn tool_locations(args: &Map<String, Value>) -> Vec<Value> {
    let line = ["line", "lineno", "line_number"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_u64).filter(|n| *n > 0));
    let mut candidates: Vec<&str> = PATH_KEYS
        .iter()
        .filter_map(|k| args.get(*k).and_then(Value::as_str))
        .collect();
    if let Some(Value::Array(paths)) = args.get("paths") {
        candidates.extend(paths.iter().take(5).filter_map(Value::as_str));
    }
    let mut seen: Vec<(String, Option<u64>)> = Vec::new();
    let mut out = Vec::new();
    for p in candidates.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        if seen.iter().any(|(sp, sl)| sp == p && *sl == line) {
            continue;
        }
        seen.push((p.to_string(), line));
        let mut loc = json!({"path": p});
        if let Some(l) = line {
            loc["line"] = l.into();
        }
        out.push(loc);
    }
    out
}

fn descriptor(
    id: &str,
    name: &str,
    args: &Map<String, Value>,
    status: Option<&str>,
    raw_output: Option<&Value>,
) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert("toolCallId".into(), id.into());
    d.insert("title".into(), tool_title(name, args).into());
    d.insert("kind".into(), tool_kind(name).into());
    if let Some(s) = status.filter(|s| !s.is_empty()) {
        d.insert("status".into(), s.into());
    }
    if !args.is_empty() {
        d.insert("rawInput".into(), Value::Object(args.clone()));
    }
    let locations = tool_locations(args);
    if !locations.is_empty() {
        d.insert("locations".into(), Value::Array(locations));
    }
    if let Some(r) = raw_output.filter(|r| !r.is_null() && !is_list_like(name)) {
        d.insert("rawOutput".into(), r.clone());
    }
    d
}

/// The first non-empty string among `keys` (Python's `a or b or c` on string values).
fn str_at<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
}

/// A tool-call id: the first truthy of `tool_call_id`, `toolCallId`, `id`, as a string,
/// stripped (the reference's `str(a or b or c).strip()`); `None` when that is empty.
fn tool_id(m: &Map<String, Value>) -> Option<String> {
    let v = ["tool_call_id", "toolCallId", "id"]
        .iter()
        .find_map(|k| m.get(*k).filter(|v| truthy(v)))?;
    Some(crate::pyrepr::py_str(v).trim().to_string()).filter(|s| !s.is_empty())
}

/// The `tool_call` session update for a tool-call event payload (`{"tool_call": {id, name,
/// arguments, status?, title?, kind?}, status?, title?, kind?}`), or `None` without an id.
/// Records the call in `cache` for the matching result.
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
    let id = tool_id(call)?;
    let name = call.get("name").and_then(Value::as_str).unwrap_or("");
    let raw_args = call.get("arguments");
    let args = normalize_arguments(raw_args);
    let status = str_at(call, &["status"])
        .or_else(|| str_at(payload, &["status"]))
        .unwrap_or("pending");
    let mut desc = descriptor(&id, name, &args, Some(status), None);
    for key in ["title", "kind"] {
        if let Some(v) = str_at(call, &[key]).or_else(|| str_at(payload, &[key])) {
            desc.insert(key.into(), v.into());
        }
    }
    let arguments = match raw_args {
        Some(Value::Object(m)) => Value::Object(m.clone()),
        _ if !args.is_empty() => Value::Object(args.clone()),
        Some(v) if truthy(v) => v.clone(),
        _ => Value::Object(Map::new()),
    };
    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "tool_call".into());
    out.insert(
        "toolCall".into(),
        json!({"id": id, "name": call.get("name").cloned().unwrap_or(Value::Null), "arguments": arguments}),
    );
    out.extend(desc.clone());
    if let Some(cache) = cache {
        let mut entry = desc;
        entry.insert("toolName".into(), name.into());
        cache.insert(id, entry);
    }
    Some(out)
}

/// The `tool_call_update` session update for a tool-result event payload. Never `None`:
/// terminals are embedded (`{"type":"terminal","terminalId"}`), text results become content,
/// and the status follows the reference rules (explicit status; running terminals stay
/// `in_progress`; `error` → `failed`; a result → `completed`).
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
        _ => payload
            .get("content")
            .cloned()
            .unwrap_or_else(|| Value::String(String::new())),
    };
    let id = tool_id(payload).unwrap_or_default();
    let cached = cache.and_then(|c| c.get(&id));
    let tool_call = payload.get("toolCall").and_then(Value::as_object);
    // The reference's `str(a or b or c or d or "").strip()`: the first truthy value wins even
    // when it strips to nothing.
    let tool_name = ["tool_name", "name"]
        .iter()
        .find_map(|k| payload.get(*k).filter(|v| truthy(v)))
        .or_else(|| tool_call.and_then(|t| t.get("name")).filter(|v| truthy(v)))
        .or_else(|| cached.and_then(|c| c.get("toolName")).filter(|v| truthy(v)))
        .map(|v| crate::pyrepr::py_str(v).trim().to_string())
        .filter(|s| !s.is_empty());
    let name = tool_name.clone().unwrap_or_default();
    let raw_args = ["arguments", "rawInput"]
        .iter()
        .find_map(|k| payload.get(*k).filter(|v| truthy(v)))
        .or_else(|| tool_call.and_then(|t| t.get("arguments")).filter(|v| truthy(v)))
        .or_else(|| cached.and_then(|c| c.get("rawInput")));
    let args = normalize_arguments(raw_args);
    let raw_output = ["rawOutput", "raw_output"]
        .iter()
        .find_map(|k| payload.get(*k).filter(|v| !v.is_null()));
    let terminal = raw_output
        .and_then(Value::as_object)
        .and_then(|o| {
            ["terminalId", "terminal_id"]
                .iter()
                .find_map(|k| o.get(*k).filter(|v| truthy(v)))
        })
        .cloned();
    let canonical = canonical_name(&name);
    let explicit = payload
        .get("status")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    let status = if let Some(s) = explicit {
        s.to_string()
    } else if (terminal.is_some() && matches!(canonical.as_str(), "create_terminal" | "terminal_create"))
        || (canonical == "wait_for_terminal_exit" && raw_output.and_then(|r| r.get("timedOut")).is_some_and(truthy))
    {
        "in_progress".into()
    } else if payload.get("error").is_some_and(truthy) {
        "failed".into()
    } else if truthy(&result) {
        "completed".into()
    } else {
        "in_progress".into()
    };

    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "tool_call_update".into());
    out.insert("toolCallId".into(), id.clone().into());
    let has_result = !(result.is_null() || result.as_str() == Some(""));
    if has_result && terminal.is_none() {
        out.insert("result".into(), result.clone());
    }
    if let Some(n) = &tool_name {
        out.insert("toolName".into(), n.clone().into());
    }
    if let Some(c) = cached {
        for k in ["title", "kind", "rawInput", "locations"] {
            if let Some(v) = c.get(k).filter(|v| truthy(v)) {
                out.insert(k.into(), v.clone());
            }
        }
    }
    let desc = descriptor(&id, &name, &args, Some(&status), raw_output);
    for k in ["title", "kind", "status", "rawOutput"] {
        if let Some(v) = desc.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(t) = terminal {
        out.insert("content".into(), json!([{"type": "terminal", "terminalId": t}]));
    } else {
        let text = crate::pyrepr::py_str(&result);
        let text = text.trim();
        if !text.is_empty() && !result.is_null() {
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
