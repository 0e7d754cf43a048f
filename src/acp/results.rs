//! ACP results an agent returns for `session/new`, `session/list` and `session/prompt`.

use serde_json::{json, Value};

use crate::pyrepr::strip;

/// `session/new` result: `{"sessionId": <stripped id>, "configOptions": []}` (stripped as
/// Python's `str.strip()` does, see [`crate::pyrepr::strip`]).
///
/// ```
/// assert_eq!(e2a::acp::session_new_result(" s1 "), serde_json::json!({"sessionId": "s1", "configOptions": []}));
/// ```
pub fn session_new_result(session_id: &str) -> Value {
    json!({"sessionId": strip(session_id), "configOptions": []})
}

/// `session/list` result: ids stripped, blanks and duplicates dropped, order kept.
///
/// ```
/// let r = e2a::acp::session_list_result(["a", " a ", "", "b"]);
/// assert_eq!(r, serde_json::json!({"sessions": [{"sessionId": "a"}, {"sessionId": "b"}]}));
/// ```
pub fn session_list_result<I, S>(session_ids: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut seen: Vec<String> = Vec::new();
    for id in session_ids {
        let id = strip(id.as_ref());
        if !id.is_empty() && !seen.iter().any(|s| s == id) {
            seen.push(id.to_string());
        }
    }
    json!({"sessions": seen.into_iter().map(|s| json!({"sessionId": s})).collect::<Vec<_>>()})
}

/// `session/prompt` result: `{"stopReason"}` plus the stripped `userMessageId` when non-blank.
///
/// ```
/// let r = e2a::acp::prompt_result("end_turn", Some(" m1 "));
/// assert_eq!(r, serde_json::json!({"stopReason": "end_turn", "userMessageId": "m1"}));
/// ```
pub fn prompt_result(stop_reason: &str, user_message_id: Option<&str>) -> Value {
    let mut r = json!({"stopReason": stop_reason});
    if let Some(id) = user_message_id.map(strip).filter(|s| !s.is_empty()) {
        r["userMessageId"] = id.into();
    }
    r
}

/// `session/list` result in the ACP v1 schema's shape, where each session also carries its
/// working directory (`cwd`, required by ACP v1; the reference [`session_list_result`] omits
/// it). Ids are stripped; blanks and duplicates are dropped, order kept.
///
/// ```
/// let r = e2a::acp::results::session_list_result_v1([("a", "/work"), (" a ", "/x"), ("b", "/w2")]);
/// assert_eq!(r, serde_json::json!({"sessions": [{"sessionId": "a", "cwd": "/work"}, {"sessionId": "b", "cwd": "/w2"}]}));
/// ```
pub fn session_list_result_v1<'a>(sessions: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (id, cwd) in sessions {
        let id = strip(id);
        if !id.is_empty() && !seen.contains(&id) {
            seen.push(id);
            out.push(json!({"sessionId": id, "cwd": cwd}));
        }
    }
    json!({"sessions": out})
}

/// `initialize` result advertising what an E2A gateway supports (the reference's
/// `build_acp_initialize_result`, with the agent's identity supplied by the caller): protocol
/// version 1, session loading and listing, image and embedded-context prompts, no MCP
/// transports, no auth methods.
///
/// ```
/// let r = e2a::acp::results::initialize_result("my-agent", "My Agent", "1.2.3");
/// assert_eq!(r["protocolVersion"], 1);
/// assert_eq!(r["agentInfo"]["version"], "1.2.3");
/// assert_eq!(r["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
/// ```
pub fn initialize_result(name: &str, title: &str, version: &str) -> Value {
    json!({
        "protocolVersion": 1,
        "agentInfo": {"name": name, "title": title, "version": version},
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "sessionCapabilities": {"list": {}},
            "mcpCapabilities": {"http": false, "sse": false}
        },
        "authMethods": []
    })
}
