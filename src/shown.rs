//! What a user is shown of the frames a client protocol has no slot of its own for, the same
//! way in every projector ([`crate::acp::stream::AcpStreamProjector`],
//! [`crate::agui::AguiProjector`]):
//!
//! - an **artifact** (any name, any kind) is shown as text: a line naming it when it starts,
//!   then its parts: text as it is, a file by its name and URL (or its media type and size),
//!   data as JSON ([`artifact_text`]);
//! - the **final content** (an answer's or a direct reply's `result.content`) that was not
//!   streamed as text is shown as a last piece of text ([`ShownText::owed`]): an agent that
//!   answers without streaming, a remote A2A agent's `Message`, a report whose summary comes
//!   only at the end.

use serde::Deserialize;
use serde_json::Value;

use crate::types::{A2aPart, AnswerResult, ArtifactDelta, E2AResponse};

/// The answer text one turn has shown so far, to tell what its final frame still owes.
#[derive(Debug, Clone, Default)]
pub struct ShownText {
    streamed: String,
}

impl ShownText {
    /// Records answer text streamed to the client.
    pub fn streamed(&mut self, text: &str) {
        self.streamed.push_str(text);
    }

    /// The text the final frame `frame` still owes the user: its content when no text was
    /// streamed, or what the content adds after the text that was (a content that does not
    /// start with the streamed text owes nothing: the stream was the answer).
    ///
    /// ```
    /// use e2a::{E2AEnvelope, shown::ShownText, stream::ResponseStream};
    /// let req = E2AEnvelope::new("chat.send", serde_json::json!({}));
    /// let never_streamed = ResponseStream::for_request(&req).answer("the summary", None);
    /// assert_eq!(ShownText::default().owed(&never_streamed).as_deref(), Some("the summary"));
    /// let mut shown = ShownText::default();
    /// shown.streamed("the summary");
    /// assert_eq!(shown.owed(&never_streamed), None);
    /// ```
    pub fn owed(&self, frame: &E2AResponse) -> Option<String> {
        if !frame.is_final {
            return None;
        }
        let content = AnswerResult::of(frame)?.content?;
        let rest = content.strip_prefix(self.streamed.as_str())?;
        (!rest.is_empty()).then(|| rest.to_string())
    }
}

/// The text shown for an artifact chunk's `delta` (an [`ArtifactDelta`]): on its first chunk
/// a line naming the artifact, then each part (text as it is; a file as `name <url>`, or its
/// name, media type and size when its bytes came inline; data as JSON). `None` when `delta` is
/// not an artifact or shows nothing.
///
/// ```
/// let delta = serde_json::json!({"artifact_id": "a1", "name": "answer", "parts": [{"text": "42"}]});
/// assert_eq!(e2a::shown::artifact_text(&delta).as_deref(), Some("\n[answer]\n42"));
/// let more = serde_json::json!({"artifact_id": "a1", "append": true, "parts": [{"url": "https://x/r.pdf", "filename": "r.pdf"}]});
/// assert_eq!(e2a::shown::artifact_text(&more).as_deref(), Some("r.pdf <https://x/r.pdf>\n"));
/// ```
pub fn artifact_text(delta: &Value) -> Option<String> {
    let artifact = ArtifactDelta::deserialize(delta).ok()?;
    let mut out = String::new();
    if !artifact.append {
        let name = artifact
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(&artifact.artifact_id);
        out.push_str(&format!("\n[{name}]\n"));
    }
    for part in &artifact.parts {
        let Ok(part) = A2aPart::deserialize(&Value::Object(part.clone())) else {
            continue;
        };
        part_text(&part, &mut out);
    }
    (!out.trim().is_empty()).then_some(out)
}

/// Appends what `part` shows as text to `out`.
fn part_text(part: &A2aPart, out: &mut String) {
    let name = part.filename.as_deref().unwrap_or("file");
    let media = part.media_type.as_deref().unwrap_or("application/octet-stream");
    if let Some(text) = &part.text {
        out.push_str(text);
    } else if let Some(url) = &part.url {
        out.push_str(&format!("{name} <{url}>\n"));
    } else if let Some(raw) = &part.raw {
        // base64: three bytes in four characters
        let bytes = raw.trim_end_matches('=').len() * 3 / 4;
        out.push_str(&format!("{name} ({media}, {bytes} bytes)\n"));
    } else if let Some(data) = &part.data {
        out.push_str(&data.to_string());
        out.push('\n');
    }
}
