//! Server-Sent Events framing of response frames, as the HTTP binding defines it
//! (`generated/openapi.json`): `id` = `sequence`, `event: e2a.response`, `data` = the
//! canonical frame on one line. A reconnecting client sends the last `id` as `Last-Event-ID`;
//! [`crate::stream::StreamValidator::replay_after`] gives the frames to resend.

use crate::error::Result;
use crate::types::E2AResponse;

/// The SSE event name of E2A response frames.
pub const EVENT: &str = "e2a.response";

/// One SSE event for a frame (ends with the blank line that terminates an event).
///
/// ```
/// let r = e2a::E2AResponse::new(e2a::ResponseKind::E2aChunk, serde_json::json!({"delta": "x"}));
/// let ev = e2a::sse::encode(&r);
/// assert!(ev.starts_with("id: 0\nevent: e2a.response\ndata: {"));
/// assert!(ev.ends_with("}\n\n"));
/// ```
pub fn encode(frame: &E2AResponse) -> String {
    format!("id: {}\nevent: {EVENT}\ndata: {}\n\n", frame.sequence, frame.to_json())
}

/// Parses an SSE stream into frames: each event's `data` lines are joined and read with the
/// lenient reader; comments, other fields and events of another name are skipped.
///
/// ```
/// let r = e2a::E2AResponse::new(e2a::ResponseKind::E2aChunk, serde_json::json!({"delta": "x"}));
/// let text = format!(": keep-alive\n\n{}", e2a::sse::encode(&r));
/// assert_eq!(e2a::sse::decode(&text).unwrap(), vec![r]);
/// ```
pub fn decode(text: &str) -> Result<Vec<E2AResponse>> {
    let mut out = Vec::new();
    let (mut data, mut event) = (String::new(), String::new());
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() && (event.is_empty() || event == EVENT) {
                out.push(E2AResponse::from_json(&data)?);
            }
            data.clear();
            event.clear();
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            "event" => event = value.to_string(),
            _ => {}
        }
    }
    Ok(out)
}
