//! Server-Sent Events framing of response frames, as the HTTP binding defines it
//! (`generated/openapi.json`): `id` = `sequence`, `event: e2a.response`, `data` = the
//! canonical frame on one line. A reconnecting client sends the last `id` as `Last-Event-ID`;
//! [`crate::stream::StreamValidator::replay_after`] gives the frames to resend.

use crate::error::Result;
use crate::types::E2AResponse;

/// The SSE event name of E2A response frames.
pub const EVENT: &str = "e2a.response";

/// One SSE event for a frame (a record or a [`crate::frame::Frame`]; ends with the blank
/// line that terminates an event).
///
/// ```
/// let r = e2a::E2AResponse::new(e2a::ResponseKind::E2aChunk, serde_json::json!({"delta": "x"}));
/// let ev = e2a::sse::encode(&r);
/// assert!(ev.starts_with("id: 0\nevent: e2a.response\ndata: {"));
/// assert!(ev.ends_with("}\n\n"));
/// ```
pub fn encode<'a, F>(frame: &'a F) -> String
where
    F: crate::write::WriteJson,
    &'a F: Into<crate::stream::StreamPosition<'a>>,
{
    let sequence = frame.into().sequence;
    let mut out = Vec::with_capacity(1024);
    encode_text(sequence, &mut out, |out| crate::write::append_json(frame, out));
    String::from_utf8(out).unwrap_or_default()
}

/// What ends an SSE event: the blank line.
pub const EVENT_END: &[u8] = b"\n\n";

/// One SSE event for the frame of `sequence` whose canonical JSON `write_json` appends
/// (JSON text, which holds no line break), appended to `out`: what [`encode`] writes, for a
/// frame already held as text.
///
/// ```
/// let mut out = Vec::new();
/// e2a::sse::encode_text(7, &mut out, |out| out.extend_from_slice(b"{}"));
/// assert_eq!(out, b"id: 7\nevent: e2a.response\ndata: {}\n\n");
/// ```
pub fn encode_text(sequence: u64, out: &mut Vec<u8>, write_json: impl FnOnce(&mut Vec<u8>)) {
    event_head(sequence, out);
    write_json(out);
    out.extend_from_slice(EVENT_END);
}

/// What comes before the frame's JSON in its SSE event (`id`, `event`, `data: `), appended
/// to `out`; the JSON and [`EVENT_END`] follow.
pub fn event_head(sequence: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(itoa::Buffer::new().format(sequence).as_bytes());
    out.extend_from_slice(b"\nevent: ");
    out.extend_from_slice(EVENT.as_bytes());
    out.extend_from_slice(b"\ndata: ");
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
