//! ACP `session/prompt` content blocks → text, file attachments and media items
//! (the reference's `acp/prompt_blocks.py`).

use serde::Serialize;
use serde_json::{Map, Value};

use crate::fields::truthy;
use crate::pyrepr::{is_blank, py_str, strip};

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
        !is_blank(&self.text) || !self.attachments.is_empty() || !self.media_items.is_empty()
    }
}

/// A string that is not blank (the reference's `isinstance(v, str) and v.strip()`).
fn nonblank(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !is_blank(s))
}

/// The reference's `str(block.get(key) or "").strip()`: any truthy value as Python's `str()`,
/// stripped; absent and falsy values are `""`.
fn text_field(block: &Map<String, Value>, key: &str) -> String {
    match block.get(key).filter(|v| truthy(v)) {
        Some(Value::String(s)) => strip(s).to_string(),
        Some(v) => strip(&py_str(v)).to_string(),
        None => String::new(),
    }
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
            let kind = text_field(b, "type");
            match kind.as_str() {
                "text" => {
                    if let Some(t) = b.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                        parts.push(t.to_string());
                    }
                }
                "resource" => resource_block(b, &mut parts, &mut out),
                "resource_link" => {
                    let uri = text_field(b, "uri");
                    if uri.is_empty() {
                        continue;
                    }
                    let name = text_field(b, "name");
                    match resource_uri_to_path(&uri).filter(|p| !p.is_empty()) {
                        Some(path) => {
                            let filename = if !name.is_empty() {
                                name
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
                            let name = if name.is_empty() { "resource" } else { &name };
                            parts.push(format!("[Linked resource] {name}: {uri}"));
                        }
                    }
                }
                "image" => {
                    if let Some(data) = nonblank(b.get("data")) {
                        let mime = text_field(b, "mimeType").to_lowercase();
                        let filename = Some(basename(&text_field(b, "uri"))).filter(|s| !s.is_empty());
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
            parts.push(strip(t).to_string());
        }
    }
    out.text = parts.join("\n");
    if is_blank(&out.text) && (!out.attachments.is_empty() || !out.media_items.is_empty()) {
        out.text = "(see attached context)".into();
    }
    out
}

fn resource_block(b: &Map<String, Value>, parts: &mut Vec<String>, out: &mut ParsedPrompt) {
    let Some(res) = b.get("resource").and_then(Value::as_object) else {
        return;
    };
    let uri = text_field(res, "uri");
    if let Some(text) = res.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        if uri.is_empty() {
            parts.push(format!("<context>\n{text}\n</context>"));
        } else {
            parts.push(format!("<context uri=\"{uri}\">\n{text}\n</context>"));
        }
        return;
    }
    let Some(blob) = nonblank(res.get("blob")) else { return };
    let mime = text_field(res, "mimeType").to_lowercase();
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

/// The file name of a path or URI, as the reference's `_basename_of` (the text stripped first):
/// `PureWindowsPath(text).name` when it has a backslash, else `PurePosixPath(p).name` of the
/// URL path (`urlparse(text).path`) for `scheme://` URIs or of the text itself. A `.name` is the
/// last component that is not empty or `.` (a trailing separator does not make it empty).
/// ```
/// use e2a::acp::prompt_blocks::basename;
/// assert_eq!(basename("C:\\x\\y.txt"), "y.txt");
/// assert_eq!(basename("file:///a/b.png?x=1"), "b.png");
/// assert_eq!(basename("/a/b/"), "b");
/// ```
pub fn basename(value: &str) -> String {
    let text = strip(value);
    if text.contains('\\') {
        return last_component(windows_path_without_drive(text), &['\\', '/']).to_string();
    }
    let path = if text.contains("://") {
        url_path(text)
    } else {
        text.to_string()
    };
    last_component(&path, &['/']).to_string()
}

/// The last component of `path` that is not empty or `.` (`""` when there is none).
fn last_component<'a>(path: &'a str, separators: &[char]) -> &'a str {
    path.rsplit(separators)
        .find(|p| !p.is_empty() && *p != ".")
        .unwrap_or("")
}

/// A Windows path without its drive (`X:`, or a UNC `\\\\server\\share`).
fn windows_path_without_drive(p: &str) -> &str {
    let sep = |c: char| c == '\\' || c == '/';
    let mut chars = p.chars();
    if let (Some(a), Some(b), Some(c)) = (chars.next(), chars.next(), chars.next()) {
        if sep(a) && sep(b) && !sep(c) {
            // UNC: the drive is `\\\\server\\share`
            let rest = &p[2..];
            return match rest.find(sep) {
                Some(i) => match rest[i + 1..].find(sep) {
                    Some(j) => &rest[i + 1 + j..],
                    None => "",
                },
                None => p,
            };
        }
    }
    match p.char_indices().nth(1) {
        Some((i, ':')) => &p[i + 1..],
        _ => p,
    }
}

/// The path of a URL as Python's `urlparse(url).path`: tabs and newlines removed, the scheme and
/// `//netloc` cut off when there is a valid scheme, then query, fragment and the last
/// segment's `;params`.
fn url_path(url: &str) -> String {
    let url: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut rest = url.as_str();
    if let Some(i) = rest.find(':') {
        let scheme = &rest[..i];
        let valid = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if valid {
            rest = &rest[i + 1..];
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        rest = after.find(['/', '?', '#']).map_or("", |j| &after[j..]);
    }
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let cut = match path.rfind('/') {
        Some(slash) => path[slash..].find(';').map(|k| slash + k),
        None => path.find(';'),
    };
    cut.map_or(path, |k| &path[..k]).to_string()
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
        assert_eq!(basename("/a/b/"), "b");
        assert_eq!(basename("a/."), "a");
        assert_eq!(basename("/"), "");
        assert_eq!(basename("C:\\x\\y\\"), "y");
        assert_eq!(basename("\\\\server\\share"), "");
        assert_eq!(basename("\\\\server\\share\\a"), "a");
        assert_eq!(basename("http://h"), "");
        assert_eq!(basename("http://h/a/"), "a");
        assert_eq!(basename("http://h/a;p?q"), "a");
        assert_eq!(basename(" zed://x/y/. "), "y");
        assert_eq!(basename("c.txt"), "c.txt");
    }
}
