//! What a tool call shows: its arguments as an object, its human title and its locations.

use serde_json::{json, Map, Value};

use super::kinds::{aliased_name, canonical_name, is_list_like, tool_kind};
use crate::pyrepr::{is_blank, strip};

/// The argument keys that name a path, in the order they are looked for.
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
            Err(_) if !is_blank(s) => single("input", s),
            Err(_) => Map::new(),
        },
        _ => Map::new(),
    }
}

/// `{k: v}`.
fn single(k: &str, v: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(k.into(), v.into());
    m
}

/// The first string among `keys` that is not blank, stripped (`_first_string_value`).
pub(super) fn first_str<'a>(args: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| {
        args.get(*k)
            .and_then(Value::as_str)
            .map(strip)
            .filter(|s| !s.is_empty())
    })
}

/// The last three parts of a path joined by `/`, as the reference's `PurePath(p).parts` (POSIX:
/// empty and `.` parts dropped, a leading `//` kept as a part of its own, `/` dropped).
fn summarize_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    if p.starts_with("//") && !p.starts_with("///") {
        parts.push("//");
    }
    parts.extend(p.split('/').filter(|s| !s.is_empty() && *s != "."));
    if parts.is_empty() {
        return p.to_string();
    }
    parts[parts.len().saturating_sub(3)..].join("/")
}

/// The reference's `_humanize_tool_name`: parts between `_` and `.` (empty ones dropped),
/// each with its first character uppercased, joined by spaces.
fn humanize(name: &str) -> String {
    let words: Vec<String> = name
        .split(['_', '.'])
        .filter(|p| !p.is_empty())
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

/// The `line` of a tool call's locations: the first of `line`, `lineno`, `line_number` that is
/// a positive integer (a JSON `true` counts, as Python's `bool` is an `int`).
fn location_line(args: &Map<String, Value>) -> Option<&Value> {
    ["line", "lineno", "line_number"].iter().find_map(|k| {
        args.get(*k).filter(|v| match v {
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_u64().is_some_and(|n| n > 0),
            _ => false,
        })
    })
}

/// ACP `locations` of a tool call: every path key then the first five `paths`, deduplicated,
/// with a positive `line` when given.
/// ```
/// let args = serde_json::json!({"path": "/a/b.rs", "line": 3, "paths": ["/a/b.rs", "/c"]});
/// let locs = e2a::acp::tool_updates::tool_locations(args.as_object().unwrap());
/// assert_eq!(locs, vec![serde_json::json!({"path": "/a/b.rs", "line": 3}), serde_json::json!({"path": "/c", "line": 3})]);
/// ```
pub fn tool_locations(args: &Map<String, Value>) -> Vec<Value> {
    let line = location_line(args);
    let mut candidates: Vec<&str> = PATH_KEYS
        .iter()
        .filter_map(|k| args.get(*k).and_then(Value::as_str))
        .collect();
    if let Some(Value::Array(paths)) = args.get("paths") {
        candidates.extend(paths.iter().take(5).filter_map(Value::as_str));
    }
    // one `line` for all, so (path, line) pairs are unique when paths are
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for p in candidates.into_iter().map(strip).filter(|p| !p.is_empty()) {
        if seen.contains(&p) {
            continue;
        }
        seen.push(p);
        let mut loc = json!({"path": p});
        if let Some(l) = line {
            loc["line"] = l.clone();
        }
        out.push(loc);
    }
    out
}
