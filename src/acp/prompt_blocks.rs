//! ACP `session/prompt` content blocks → text, file attachments and media items
//! (the reference's `acp/prompt_blocks.py`).

use serde::Serialize;
use serde_json::{Map, Value};

/// Image MIME types accepted from embedded `resource` blobs.
const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// The default fallback keys read when the prompt has no text block.
pub const DEFAULT_FALLBACK_KEYS: [&str; 3] = ["text", "content", "query"];

/// A local file referenced by a `resource_link` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// Local path (from [`resource_uri_to_path`]).
    pub path: String,
    /// Always `file`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Display name: the block's `name`, else the path's basename, else `resource`.
    pub filename: String,
}

/// An inline image (`image` block or image `resource` blob).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MediaItem {
    /// Always `image`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Base64 data, as sent.
    #[serde(rename = "base64Data")]
    pub base64_data: String,
    /// MIME type, lowercased (`""` when absent).
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// File name from the block's URI, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// What a prompt carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParsedPrompt {
    /// Text parts joined by newlines (`(see attached context)` when only attachments/media).
    pub text: String,
    /// Local files.
    pub attachments: Vec<Attachment>,
    /// Inline images.
    pub media_items: Vec<MediaItem>,
}

impl ParsedPrompt {
    /// True when there is non-blank text or any attachment or media item.
    pub fn has_content(&self) -> bool {
        !self.text.trim().is_empty() || !self.attachments.is_empty() || !self.media_items.is_empty()
    }
}

fn nonblank(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// Parses `params.prompt` (a list of ACP content blocks) with the default fallback keys.
///
/// ```
/// let p = serde_json::json!({"prompt": [
///     {"type": "text", "text": "look"},
///     {"type": "resource_link", "uri": "file:///tmp/a%20b.txt"}
/// ]});
/// let parsed = e2a::acp::parse_prompt_blocks(p.as_object().unwrap());
/// assert_eq!(parsed.text, "look");
/// assert_eq!(parsed.attachments[0].path, "/tmp/a b.txt");
/// assert_eq!(parsed.attachments[0].filename, "a b.txt");
/// ```
pub fn parse_prompt_blocks(params: &Map<String, Value>) -> ParsedPrompt {
    parse_prompt_blocks_with(params, &DEFAULT_FALLBACK_KEYS)
}

/// [`parse_prompt_blocks`] with custom fallback keys (first non-blank string, stripped, is used
/// when no text block was found).
/// ```
/// let p = serde_json::json!({"query": " q ", "text": "t"});
/// let parsed = e2a::acp::prompt_blocks::parse_prompt_blocks_with(p.as_object().unwrap(), &["query"]);
/// assert_eq!(parsed.text, "q");
/// ```
pub fn parse_prompt_blocks_with(params: &Map<String, Value>, fallback_keys: &[&str]) -> ParsedPrompt {
    let mut parts: Vec<String> = Vec::new();
    let mut out = ParsedPrompt::default();
    if let Some(Value::Array(blocks)) = params.get("prompt") {
        for b in blocks.iter().filter_map(Value::as_object) {
            let kind = b.get("type").and_then(Value::as_str).map(str::trim).unwrap_or("");
            match kind {
                "text" => {
                    if let Some(t) = b.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                        parts.push(t.to_string());
                    }
                }
                "resource" => resource_block(b, &mut parts, &mut out),
                "resource_link" => {
                    let uri = b.get("uri").and_then(Value::as_str).map(str::trim).unwrap_or("");
                    if uri.is_empty() {
                        continue;
                    }
                    let name = b.get("name").and_then(Value::as_str).map(str::trim).unwrap_or("");
                    match resource_uri_to_path(uri) {
                        Some(path) => {
                            let filename = if !name.is_empty() {
                                name.to_string()
                            } else {
                                Some(basename(&path))
                                    .filter(|s| !s.is_empty())
                                    .unwrap_or_else(|| "resource".into())
                            };
                            out.attachments.push(Attachment {
                                path,
                                kind: "file".into(),
                                filename,
                            });
                        }
                        None => {
                            let name = if name.is_empty() { "resource" } else { name };
                            parts.push(format!("[Linked resource] {name}: {uri}"));
                        }
                    }
                }
                "image" => {
                    if let Some(data) = nonblank(b.get("data")) {
                        let mime = b
                            .get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .trim()
                            .to_lowercase();
                        let filename = b
                            .get("uri")
                            .and_then(Value::as_str)
                            .map(basename)
                            .filter(|s| !s.is_empty());
                        out.media_items.push(MediaItem {
                            kind: "image".into(),
                            base64_data: data.to_string(),
                            mime_type: mime,
                            filename,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    if parts.is_empty() {
        if let Some(t) = fallback_keys.iter().find_map(|k| nonblank(params.get(*k))) {
            parts.push(t.trim().to_string());
        }
    }
    out.text = parts.join("\n");
    if out.text.trim().is_empty() && (!out.attachments.is_empty() || !out.media_items.is_empty()) {
        out.text = "(see attached context)".into();
    }
    out
}

fn resource_block(b: &Map<String, Value>, parts: &mut Vec<String>, out: &mut ParsedPrompt) {
    let Some(res) = b.get("resource").and_then(Value::as_object) else {
        return;
    };
    let uri = res
        .get("uri")
        .map(|u| crate::pyrepr::py_str(u).trim().to_string())
        .unwrap_or_default();
    if let Some(text) = res.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        if uri.is_empty() {
            parts.push(format!("<context>\n{text}\n</context>"));
        } else {
            parts.push(format!("<context uri=\"{uri}\">\n{text}\n</context>"));
        }
        return;
    }
    let Some(blob) = nonblank(res.get("blob")) else { return };
    let mime = res
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_lowercase();
    if IMAGE_MIME_TYPES.contains(&mime.as_str()) {
        let filename = Some(basename(&uri)).filter(|s| !s.is_empty());
        out.media_items.push(MediaItem {
            kind: "image".into(),
            base64_data: blob.to_string(),
            mime_type: mime,
            filename,
        });
    }
}

/// Maps a resource URI to a local path: `file://` URIs (percent-decoded; `localhost` host
/// dropped; other hosts as UNC `//host/path`; `/C:/…` → `C:/…`), absolute POSIX paths and
/// Windows drive paths as they are. Anything else (`https:`, `zed:` …) → `None`.
///
/// ```
/// use e2a::acp::resource_uri_to_path as p;
/// assert_eq!(p("file:///C:/proj/a%20b.py").as_deref(), Some("C:/proj/a b.py"));
/// assert_eq!(p("file://server/share/a.py").as_deref(), Some("//server/share/a.py"));
/// assert_eq!(p("C:\\p\\a.py").as_deref(), Some("C:\\p\\a.py"));
/// assert_eq!(p("https://x/a"), None);
/// ```
pub fn resource_uri_to_path(uri: &str) -> Option<String> {
    if let Some(rest) = uri.strip_prefix("file://") {
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let path = path.split(['?', '#']).next().unwrap_or("");
        let host = host.split(['?', '#']).next().unwrap_or("");
        let mut path = percent_decode(path);
        if !host.is_empty() && host != "localhost" {
            path = format!("//{host}{path}");
        } else if is_slash_drive(&path) {
            path.remove(0);
        }
        return (!path.is_empty()).then_some(path);
    }
    if uri.starts_with('/') || is_drive_path(uri) {
        return Some(uri.to_string());
    }
    None
}

fn is_drive_path(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')
}

fn is_slash_drive(s: &str) -> bool {
    s.starts_with('/') && is_drive_path(&s[1..]) && s.as_bytes()[3] == b'/'
}

/// Percent-decodes a URI path (UTF-8, invalid sequences replaced like Python's `unquote`).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The file name of a path or URI: Windows rules when it has a backslash, the URI path's last
/// segment for `scheme://` URIs, else the POSIX basename.
/// ```
/// use e2a::acp::prompt_blocks::basename;
/// assert_eq!(basename("C:\\x\\y.txt"), "y.txt");
/// assert_eq!(basename("file:///a/b.png?x=1"), "b.png");
/// ```
pub fn basename(value: &str) -> String {
    if value.contains('\\') {
        let v = if is_drive_path(value) || value.len() == 2 && value.ends_with(':') {
            &value[2..]
        } else {
            value
        };
        return v.rsplit(['\\', '/']).next().unwrap_or("").to_string();
    }
    let path = match value.find("://") {
        Some(i) => {
            let rest = &value[i + 3..];
            let p = rest.find('/').map(|j| &rest[j..]).unwrap_or("");
            p.split(['?', '#']).next().unwrap_or("")
        }
        None => value,
    };
    path.rsplit('/').next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_variants() {
        assert_eq!(
            resource_uri_to_path("file://localhost/etc/hosts").as_deref(),
            Some("/etc/hosts")
        );
        assert_eq!(resource_uri_to_path("file:///").as_deref(), Some("/"));
        assert_eq!(resource_uri_to_path("file://"), None);
        assert_eq!(resource_uri_to_path("D:\\").as_deref(), Some("D:\\"));
        assert_eq!(resource_uri_to_path("zed://x"), None);
        assert_eq!(resource_uri_to_path("file:///a%2"), Some("/a%2".into()));
        assert_eq!(resource_uri_to_path("file:///%E4%BD%A0").as_deref(), Some("/你"));
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("C:\\x\\y.txt"), "y.txt");
        assert_eq!(basename("file:///a/b.png"), "b.png");
        assert_eq!(basename("/a/b/"), "");
        assert_eq!(basename("c.txt"), "c.txt");
    }
}
