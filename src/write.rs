//! The canonical JSON writer behind `to_json`: byte for byte what `serde_json` writes for the
//! generated types (a test checks it on arbitrary messages), without serde's per-field work.
//!
//! The generated code (`crate::types`: the message structs of `schema/`, and the externally
//! tagged enums of them) implements [`WriteJson`] with the struct's keys as literal text
//! (`,"key":`), so a key is copied, not escaped; every field is one [`JsonWriter::value`] of a
//! type that implements [`WriteJson`] too (strings, booleans, integers, objects, options and
//! arrays of them, below): strings that need no escaping are copied whole, and empty containers
//! are written without a serializer. Anything else goes through `serde_json`
//! ([`JsonWriter::serde`]). [`to_json`] is the entry point.

use serde::Serialize;
use serde_json::{Map, Value};

/// A value written by the canonical writer.
pub trait WriteJson {
    /// Bytes of the literal text the writer adds (keys, braces, quotes): a lower bound of the
    /// output's length.
    const FIXED_LEN: usize;
    /// Appends this value's canonical JSON to `w`.
    fn write_json(&self, w: &mut JsonWriter);
}

/// A JSON output buffer: literal text, values, and what `serde_json` writes.
#[derive(Debug, Default)]
pub struct JsonWriter {
    buf: Vec<u8>,
}

/// Whether `s` can be written between quotes as it is (`serde_json` escapes `"`, `\` and the
/// control characters below U+0020, nothing else). Eight bytes at a time, with the word tricks
/// of "Bit Twiddling Hacks" (`haszero`, `hasless`: exact as yes/no answers); a text of eight
/// bytes or more ends with its last eight (read again where they overlap), a shorter one is
/// padded with a plain byte.
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
    #[inline]
    fn word(w: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        u64::from_ne_bytes(b)
    }
    if s.len() < 8 {
        let mut b = [b'a'; 8];
        b[..s.len()].copy_from_slice(s);
        return word_plain(u64::from_ne_bytes(b));
    }
    let mut words = s.chunks_exact(8);
    if !words.by_ref().all(|w| word_plain(word(w))) {
        return false;
    }
    words.remainder().is_empty() || word_plain(word(&s[s.len() - 8..]))
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

    /// Appends a value's canonical JSON.
    #[inline]
    pub fn value<T: WriteJson + ?Sized>(&mut self, v: &T) {
        v.write_json(self);
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

    /// A member of an object whose key is data (a flattened map's): the separator (`first`
    /// says whether a member was written yet), the key escaped, the value.
    #[inline]
    pub fn member(&mut self, first: &mut bool, key: &str, value: &Value) {
        if !std::mem::take(first) {
            self.buf.push(b',');
        }
        key.write_json(self);
        self.buf.push(b':');
        value.write_json(self);
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

    /// The JSON text written so far, as bytes (UTF-8).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Drops the first `n` bytes written (`n` must be where a value the caller wrote starts
    /// or ends, so the rest stays whole UTF-8 JSON text; past the end: all of it).
    pub(crate) fn drain_front(&mut self, n: usize) {
        self.buf.drain(..n.min(self.buf.len()));
    }

    /// Drops what was written from byte `n` on (`n` must be where a value the caller wrote
    /// starts or ends).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.buf.truncate(n);
    }

    /// Gives back the buffer's room beyond what was written.
    pub fn shrink_to_fit(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// Forgets what was written, keeping the buffer's room: one writer writes several texts,
    /// each taken with [`JsonWriter::to_shared`], growing its buffer once.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// The JSON text written so far, shared: copied once into an allocation of its own size.
    pub fn to_shared(&self) -> std::sync::Arc<str> {
        // every write appends UTF-8 (see `into_string`); `from_utf8_lossy` checks it many
        // times slower than `from_utf8`
        match std::str::from_utf8(&self.buf) {
            Ok(text) => std::sync::Arc::from(text),
            Err(_) => std::sync::Arc::from(String::from_utf8_lossy(&self.buf)),
        }
    }

    /// The JSON text written.
    pub fn into_string(self) -> String {
        // every write appends UTF-8 (copied `&str`s, ASCII, or serde_json's output)
        String::from_utf8(self.buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// A JSON string.
impl WriteJson for str {
    const FIXED_LEN: usize = 2;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        if plain(self.as_bytes()) {
            w.buf.reserve(self.len() + 2);
            w.buf.push(b'"');
            w.buf.extend_from_slice(self.as_bytes());
            w.buf.push(b'"');
        } else {
            w.serde(self);
        }
    }
}

/// A JSON string.
impl WriteJson for String {
    const FIXED_LEN: usize = 2;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        self.as_str().write_json(w);
    }
}

/// `true` or `false`.
impl WriteJson for bool {
    const FIXED_LEN: usize = 4;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        w.raw(if *self { "true" } else { "false" });
    }
}

/// An unsigned integer.
impl WriteJson for u64 {
    const FIXED_LEN: usize = 1;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        w.raw(itoa::Buffer::new().format(*self));
    }
}

/// A signed integer.
impl WriteJson for i64 {
    const FIXED_LEN: usize = 1;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        w.raw(itoa::Buffer::new().format(*self));
    }
}

/// A JSON object: each member's key and value written as [`Value`]'s writer writes them.
impl WriteJson for Map<String, Value> {
    const FIXED_LEN: usize = 2;
    fn write_json(&self, w: &mut JsonWriter) {
        w.buf.push(b'{');
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                w.buf.push(b',');
            }
            k.as_str().write_json(w);
            w.buf.push(b':');
            v.write_json(w);
        }
        w.buf.push(b'}');
    }
}

/// Any JSON value: strings, booleans, null, arrays and objects written here; numbers by
/// `serde_json` (its integer and shortest float forms).
impl WriteJson for Value {
    const FIXED_LEN: usize = 1;
    fn write_json(&self, w: &mut JsonWriter) {
        match self {
            Value::Null => w.raw("null"),
            Value::Bool(b) => b.write_json(w),
            Value::Number(n) => w.serde(n),
            Value::String(s) => s.as_str().write_json(w),
            Value::Array(items) => items.write_json(w),
            Value::Object(m) => m.write_json(w),
        }
    }
}

/// The value, or `null`.
impl<T: WriteJson> WriteJson for Option<T> {
    const FIXED_LEN: usize = 0;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        match self {
            Some(v) => v.write_json(w),
            None => w.raw("null"),
        }
    }
}

/// `[` the items, `,` between them `]`.
impl<T: WriteJson> WriteJson for [T] {
    const FIXED_LEN: usize = 2;
    fn write_json(&self, w: &mut JsonWriter) {
        w.buf.push(b'[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                w.buf.push(b',');
            }
            v.write_json(w);
        }
        w.buf.push(b']');
    }
}

/// An array.
impl<T: WriteJson> WriteJson for Vec<T> {
    const FIXED_LEN: usize = 2;
    #[inline]
    fn write_json(&self, w: &mut JsonWriter) {
        self.as_slice().write_json(w);
    }
}

/// Appends the canonical JSON text of `v` to `out` (written straight into it: no second
/// buffer, no copy).
pub fn append_json<T: WriteJson + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let mut w = JsonWriter {
        buf: std::mem::take(out),
    };
    v.write_json(&mut w);
    *out = w.buf;
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
    fn one_writer_writes_several_texts_each_whole() {
        let mut w = JsonWriter::with_capacity(4);
        let texts: Vec<_> = ["first \"one\"", "é"]
            .iter()
            .map(|s| {
                w.clear();
                w.value(*s);
                w.to_shared()
            })
            .collect();
        assert_eq!(&*texts[0], serde_json::to_string("first \"one\"").unwrap());
        assert_eq!(&*texts[1], "\"é\"");
    }

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
            w.value(s);
            assert_eq!(w.into_string(), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }
}
