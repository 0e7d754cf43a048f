//! One line per message of each protocol: what it is (a label) and what it says (a short text).

use serde_json::Value;

/// The longest text a line shows.
const WIDTH: usize = 60;

/// `v` as a line's text: a string as it is, anything else as compact JSON; cut at [`WIDTH`].
fn text(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let s = s.trim_start_matches('\n').replace('\n', " ");
    match s.char_indices().nth(WIDTH) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s,
    }
}

/// The text parts of a message or artifact, joined (a data part as [`delta`] reads it).
fn parts_text(v: &Value) -> String {
    let parts = v.get("parts").and_then(Value::as_array);
    let said: Vec<String> = parts
        .into_iter()
        .flatten()
        .map(|p| match p.get("text") {
            Some(t) => text(t),
            None => delta(p.get("data").unwrap_or(p)).1,
        })
        .collect();
    said.join(" ")
}

/// What an E2A delta object says: a tool call (its name and arguments), a tool's result, an
/// artifact (its name and text), else its JSON; with what it is, when it is one of these.
fn delta(d: &Value) -> (Option<&'static str>, String) {
    if let Some(call) = d.get("tool_call") {
        let name = call.get("name").and_then(Value::as_str).unwrap_or("?");
        let arguments = call.get("arguments").unwrap_or(&Value::Null);
        return (Some("tool call"), text(&Value::String(format!("{name} {arguments}"))));
    }
    if let (Some(result), Some(_)) = (d.get("result"), d.get("tool_call_id")) {
        return (Some("tool result"), text(result));
    }
    if d.get("artifact_id").is_some() {
        let name = d.get("name").and_then(Value::as_str).unwrap_or("");
        return (Some("artifact"), format!("{name}: {}", parts_text(d)));
    }
    (None, text(d))
}

/// An E2A frame: its chunk's kind (`reasoning`, `text`, `tool_call`…) or its response kind,
/// and its delta or result.
pub fn e2a(frame: &Value) -> (String, String) {
    let kind = frame.get("response_kind").and_then(Value::as_str).unwrap_or("?");
    let body = frame.get("body").unwrap_or(&Value::Null);
    match body.get("delta_kind").and_then(Value::as_str) {
        Some(delta_kind) => match body.get("delta") {
            Some(d @ Value::Object(_)) => {
                let (what, said) = delta(d);
                (what.unwrap_or(delta_kind).to_string(), said)
            }
            d => (delta_kind.to_string(), text(d.unwrap_or(&Value::Null))),
        },
        None => {
            let said = body.pointer("/result/content").or_else(|| body.get("message"));
            (kind.to_string(), text(said.unwrap_or(&Value::Null)))
        }
    }
}

/// An A2A `StreamResponse`: which member (task, status, artifact, message), its state or
/// name, and what its message or artifact says (or the E2A frame a status carries).
pub fn a2a(event: &Value) -> (String, String) {
    if let Some(task) = event.get("task") {
        let state = task.pointer("/status/state").unwrap_or(&Value::Null);
        return ("task".into(), text(state));
    }
    if let Some(update) = event.get("statusUpdate") {
        let state = update.pointer("/status/state").and_then(Value::as_str).unwrap_or("?");
        let message = update.pointer("/status/message").unwrap_or(&Value::Null);
        let carried = message
            .pointer("/metadata/e2a_chunk/event_type")
            .and_then(Value::as_str);
        let label = match carried {
            Some(event) => format!("status ({event})"),
            None => "status".into(),
        };
        let state = state.trim_start_matches("TASK_STATE_");
        return (label, format!("{state} {}", parts_text(message)).trim().to_string());
    }
    if let Some(update) = event.get("artifactUpdate") {
        let artifact = update.get("artifact").unwrap_or(&Value::Null);
        let name = artifact.get("name").and_then(Value::as_str).unwrap_or("");
        return (format!("artifact {name}"), parts_text(artifact));
    }
    match event.get("message") {
        Some(message) => ("message".into(), parts_text(message)),
        None => ("?".into(), text(event)),
    }
}

/// An AG-UI event: its type, and its text delta, tool name or result, or outcome.
pub fn agui(event: &Value) -> (String, String) {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("?").to_string();
    if kind == "CUSTOM" {
        let name = event.get("name").and_then(Value::as_str).unwrap_or("");
        let value = event.get("value").unwrap_or(&Value::Null);
        return (format!("CUSTOM {name}"), delta(value).1);
    }
    let said = ["delta", "toolCallName", "content", "name"]
        .iter()
        .find_map(|k| event.get(*k))
        .or_else(|| event.pointer("/outcome/type"))
        .unwrap_or(&Value::Null);
    (kind, text(said))
}

/// An ACP message: a `session/update`'s kind and what it says, or the prompt's result.
pub fn acp(message: &Value) -> (String, String) {
    if let Some(update) = message.pointer("/params/update") {
        let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("?");
        let said = match kind {
            "tool_call" => {
                let title = update.get("title").and_then(Value::as_str).unwrap_or("");
                format!("{title} {}", update.get("rawInput").unwrap_or(&Value::Null))
            }
            "tool_call_update" => {
                let status = update.get("status").and_then(Value::as_str).unwrap_or("");
                let output = update.pointer("/content/0/content/text").unwrap_or(&Value::Null);
                format!("{status} {}", text(output))
            }
            _ => text(update.pointer("/content/text").unwrap_or(&Value::Null)),
        };
        return (kind.to_string(), text(&Value::String(said)));
    }
    match message.pointer("/result/stopReason") {
        Some(reason) => ("result".into(), format!("stopReason {}", text(reason))),
        None => (
            message.get("method").and_then(Value::as_str).unwrap_or("?").to_string(),
            text(message.get("params").unwrap_or(&Value::Null)),
        ),
    }
}
