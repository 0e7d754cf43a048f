//! The canonical JSON writer behind `to_json`: byte for byte what `serde_json` writes for the
//! generated types (a test checks it on arbitrary messages), without serde's per-field work.
//!
//! The generated code (`crate::types`: the message structs of `schema/`, and the externally
//! tagged enums of them) implements [`WriteJson`] with the struct's keys as literal text
//! (`,"key":`), so a key is copied, not escaped; strings that need no escaping are copied whole,
//! and empty containers are written without a serializer. Anything else goes through
//! `serde_json`. [`to_json`] is the entry point.

use serde::Serialize;
use serde_json::{Map, Value};

/// A type written by the generated canonical writer.
pub trait WriteJson {
    /// Bytes of the literal text the writer adds (keys, braces): a lower bound of the output's
    /// length.
    const FIXED_LEN: usize;
    /// Appends this value's canonical JSON to `w`.
    fn write_json(&self, w: &mut JsonWriter);
}

/// A JSON output buffer with the typed writes the generated code calls.
#[derive(Debug, Default)]
pub struct JsonWriter {
    buf: Vec<u8>,
}

/// Whether `s` can be written between quotes as it is (`serde_json` escapes `"`, `\` and the
/// control characters below U+0020, nothing else). Eight bytes at a time, with the word tricks
/// of "Bit Twiddling Hacks" (`haszero`, `hasless`: exact as yes/no answers); the tail is padded
/// with a plain byte.
#[inline]
fn plain(s: &[u8]) -> bool {
    const LO: u64 = u64::from_ne_bytes([0x01; 8]);
    const HI: u64 = u64::from_ne_bytes([0x80; 8]);
    const SPACE: u64 = u64::from_ne_bytes([0x20; 8]);
    const QUOTE: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASH: u64 = u64::from_ne_bytes([b'\\'; 8]);
    #[inline]
    fn word_plain(x: u64) -> bool {
        let has_zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
        let below_space = x.wrapping_sub(SPACE) & !x & HI;
        (below_space | has_zero(x ^ QUOTE) | has_zero(x ^ BACKSLASH)) == 0
    }
    let mut words = s.chunks_exact(8);
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        if !word_plain(u64::from_ne_bytes(b)) {
            return false;
        }
    }
    let tail = words.remainder();
    let mut b = [b'a'; 8];
    b[..tail.len()].copy_from_slice(tail);
    word_plain(u64::from_ne_bytes(b))
}

impl JsonWriter {
    /// A writer whose buffer starts with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        JsonWriter {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// Appends text that is already JSON (the generated keys: `,"key":`).
    #[inline]
    pub fn raw(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A JSON string.
    #[inline]
    pub fn str(&mut self, s: &str) {
        if plain(s.as_bytes()) {
            self.buf.reserve(s.len() + 2);
            self.buf.push(b'"');
            self.buf.extend_from_slice(s.as_bytes());
            self.buf.push(b'"');
        } else {
            self.serde(s);
        }
    }

    /// A JSON string or `null`.
    #[inline]
    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.raw("null"),
        }
    }

    /// `true` or `false`.
    #[inline]
    pub fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    /// An unsigned integer.
    #[inline]
    pub fn u64(&mut self, n: u64) {
        self.raw(itoa::Buffer::new().format(n));
    }

    /// A signed integer.
    #[inline]
    pub fn i64(&mut self, n: i64) {
        self.raw(itoa::Buffer::new().format(n));
    }

    /// The separator and key of an object's member (`key` is literal text: `"name":`); `first`
    /// says whether a member was written yet.
    #[inline]
    pub fn key(&mut self, first: &mut bool, key: &str) {
        if !std::mem::take(first) {
            self.buf.push(b',');
        }
        self.raw(key);
    }

    /// An array of strings.
    pub fn str_array(&mut self, items: &[String]) {
        self.seq(items, |w, s| w.str(s));
    }

    /// An array of generated types.
    pub fn array<T: WriteJson>(&mut self, items: &[T]) {
        self.seq(items, |w, v| v.write_json(w));
    }

    /// `[` the items, each written by `one`, `,` between them `]`.
    #[inline]
    fn seq<T>(&mut self, items: &[T], mut one: impl FnMut(&mut Self, &T)) {
        self.buf.push(b'[');
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            one(self, v);
        }
        self.buf.push(b']');
    }

    /// A JSON object (`{}` without a serializer when empty).
    #[inline]
    pub fn map(&mut self, m: &Map<String, Value>) {
        if m.is_empty() {
            self.raw("{}");
        } else {
            self.serde(m);
        }
    }

    /// A JSON object or `null`.
    #[inline]
    pub fn opt_map(&mut self, m: Option<&Map<String, Value>>) {
        match m {
            Some(m) => self.map(m),
            None => self.raw("null"),
        }
    }

    /// A nested generated type, or `null`.
    #[inline]
    pub fn opt<T: WriteJson>(&mut self, v: Option<&T>) {
        match v {
            Some(v) => v.write_json(self),
            None => self.raw("null"),
        }
    }

    /// Any serializable value, written by `serde_json`.
    pub fn serde<T: Serialize + ?Sized>(&mut self, v: &T) {
        // writing to a Vec fails only when a value's own Serialize fails (a map with non-string
        // keys); the generated types have none, and the output stays valid JSON up to there
        let _ = serde_json::to_writer(&mut self.buf, v);
    }

    /// Bytes written so far (where the next value starts: several values written one after
    /// the other are told apart by it).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The JSON text written.
    pub fn into_string(self) -> String {
        // every write above appends UTF-8 (copied `&str`s, ASCII, or serde_json's output)
        String::from_utf8(self.buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Room for the values of a typical message, beyond its keys.
const VALUES_ROOM: usize = 256;

/// The canonical JSON text of `v`.
pub fn to_json<T: WriteJson>(v: &T) -> String {
    let mut w = JsonWriter::with_capacity(T::FIXED_LEN + VALUES_ROOM);
    v.write_json(&mut w);
    w.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_exactly_like_serde_json() {
        for s in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "nl\n",
            "\u{1}\u{1f}",
            "é ü 🎉",
            "\u{7f}",
            "</script>",
            "exactly8",
            "sixteen bytes!!!",
            "seventeen bytes!\u{1f}",
            "0123456789abcdef\"",
            "01234567\\",
            "\u{80}\u{ff}\u{100} !#[]~",
        ] {
            let mut w = JsonWriter::default();
            w.str(s);
            assert_eq!(w.into_string(), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }
}
