//! Owned, move-out field access for the lenient readers: values are taken out of the parsed
//! message (no clones), with the same typed checks and pointer-naming errors as
//! [`crate::fields::Fields`]. A message is read either from a JSON map or, on the fast path,
//! straight from JSON text into one slot per known key (no map, no key allocations).

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fields::{pointer_key, rpc_id_of};
use crate::types::JsonRpcId;

/// Where fields are taken from.
pub(crate) trait Source {
    /// Removes and returns the value at `key` (a JSON null is `Some(Null)`).
    fn take(&mut self, key: &str) -> Option<Value>;
    /// The value at `key`, if present.
    fn peek(&self, key: &str) -> Option<&Value>;
}

impl Source for Map<String, Value> {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.remove(key)
    }
    fn peek(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

/// The most keys a message type may have (slots live on the stack).
pub(crate) const MAX_KEYS: usize = 40;

/// One slot per known key of a message type.
pub(crate) struct Slots {
    keys: &'static KeyTable,
    vals: [Option<Value>; MAX_KEYS],
    /// Whether the message had keys outside `keys`.
    pub unknown: bool,
}

/// An open-addressing hash table over a fixed key list: O(1) key → slot index with one string
/// comparison (the readers look up ~40 keys per message, so a linear scan would dominate).
pub(crate) struct KeyTable {
    keys: &'static [&'static str],
    table: [u8; 128],
}

#[inline]
fn hash(key: &str) -> usize {
    let b = key.as_bytes();
    let (first, mid, last) = match b.len() {
        0 => (0, 0, 0),
        n => (b[0] as usize, b[n / 2] as usize, b[n - 1] as usize),
    };
    (b.len().wrapping_mul(131) ^ first.wrapping_mul(7) ^ mid.wrapping_mul(31) ^ last.wrapping_mul(13)) & 127
}

impl KeyTable {
    /// A table for up to [`MAX_KEYS`] keys.
    pub fn new(keys: &'static [&'static str]) -> KeyTable {
        assert!(keys.len() <= MAX_KEYS, "KeyTable: too many keys");
        let mut table = [0u8; 128];
        for (i, k) in keys.iter().enumerate().take(100) {
            let mut h = hash(k);
            while table[h] != 0 {
                h = (h + 1) & 127;
            }
            table[h] = (i + 1) as u8;
        }
        KeyTable { keys, table }
    }

    /// The index of `key`, if it is one of the keys.
    #[inline]
    pub fn get(&self, key: &str) -> Option<usize> {
        let mut h = hash(key);
        loop {
            match self.table[h] {
                0 => return None,
                i if self.keys[i as usize - 1] == key => return Some(i as usize - 1),
                _ => h = (h + 1) & 127,
            }
        }
    }
}

fn index(keys: &KeyTable, key: &str) -> Option<usize> {
    keys.get(key)
}

impl Source for Slots {
    fn take(&mut self, key: &str) -> Option<Value> {
        self.vals[index(self.keys, key)?].take()
    }
    fn peek(&self, key: &str) -> Option<&Value> {
        self.vals[index(self.keys, key)?].as_ref()
    }
}

impl Slots {
    /// The known keys of `map`, cloned into slots.
    pub fn from_map(map: &Map<String, Value>, keys: &'static KeyTable) -> Slots {
        let mut vals = [const { None }; MAX_KEYS];
        let mut unknown = false;
        for (k, v) in map {
            match index(keys, k) {
                Some(i) => vals[i] = Some(v.clone()),
                None => unknown = true,
            }
        }
        Slots { keys, vals, unknown }
    }

    /// Parses JSON text (an object) straight into slots. Unknown keys are skipped without
    /// building their values; duplicate keys keep the last value (as `serde_json::Value`).
    pub fn from_str(input: &str, keys: &'static KeyTable) -> Result<Slots> {
        if !input.trim_start().starts_with('{') {
            // a syntax error is reported as such; valid non-objects are a field error
            serde_json::from_str::<IgnoredAny>(input).map_err(|e| Error::from_json(&e))?;
            return Err(Error::field("", "expected object"));
        }
        let mut de = serde_json::Deserializer::from_str(input);
        let slots = SlotsSeed { keys }
            .deserialize(&mut de)
            .map_err(|e| Error::from_json(&e))?;
        de.end().map_err(|e| Error::from_json(&e))?;
        Ok(slots)
    }
}

struct SlotsSeed {
    keys: &'static KeyTable,
}

impl<'de> DeserializeSeed<'de> for SlotsSeed {
    type Value = Slots;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Slots, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SlotsSeed {
    type Value = Slots;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> std::result::Result<Slots, A::Error> {
        let mut vals = [const { None }; MAX_KEYS];
        let mut unknown = false;
        while let Some(i) = a.next_key_seed(KeySeed { keys: self.keys })? {
            match i {
                Some(i) => vals[i] = Some(a.next_value::<Value>()?),
                None => {
                    unknown = true;
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Slots {
            keys: self.keys,
            vals,
            unknown,
        })
    }
}

struct KeySeed {
    keys: &'static KeyTable,
}

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Option<usize>, E> {
        Ok(index(self.keys, v))
    }
}

/// Typed, move-out access to the fields of one object.
pub(crate) struct Taker<'b, S: Source> {
    pub src: S,
    base: &'b str,
}

impl<'b, S: Source> Taker<'b, S> {
    pub fn new(src: S, base: &'b str) -> Self {
        Taker { src, base }
    }

    pub fn ptr(&self, key: &str) -> String {
        format!("{}/{}", self.base, pointer_key(key))
    }

    pub fn err(&self, key: &str, expected: &str) -> Error {
        Error::field(self.ptr(key), format!("expected {expected}"))
    }

    /// True when `key` is present with an explicit JSON null.
    pub fn is_null(&self, key: &str) -> bool {
        self.src.peek(key).is_some_and(Value::is_null)
    }

    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.src.peek(key).filter(|v| !v.is_null())
    }

    /// Takes the value at `key`; JSON null reads as absent.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.src.take(key).filter(|v| !v.is_null())
    }

    pub fn opt_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "string")),
        }
    }

    pub fn str_or(&mut self, key: &str, default: &str) -> Result<String> {
        Ok(self.opt_str(key)?.unwrap_or_else(|| default.to_string()))
    }

    pub fn opt_obj(&mut self, key: &str) -> Result<Option<Map<String, Value>>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "object")),
        }
    }

    pub fn obj(&mut self, key: &str) -> Result<Map<String, Value>> {
        Ok(self.opt_obj(key)?.unwrap_or_default())
    }

    pub fn bool_or(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(self.err(key, "boolean")),
        }
    }

    pub fn str_array(&mut self, key: &str) -> Result<Vec<String>> {
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    _ => Err(self.err(key, "array<string>")),
                })
                .collect(),
            Some(_) => Err(self.err(key, "array<string>")),
        }
    }

    pub fn rpc_id(&mut self, key: &str) -> Result<Option<JsonRpcId>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(JsonRpcId::String(s))),
            Some(v) => rpc_id_of(&v).map(Some).ok_or_else(|| self.err(key, "rpcid")),
        }
    }

    pub fn seq(&mut self, key: &str, default: u64) -> Result<u64> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| self.err(key, "seq")),
            Some(_) => Err(self.err(key, "seq")),
        }
    }

    pub fn timestamp(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) => {
                let s = match n.as_i64() {
                    Some(i) => crate::timestamp::from_epoch_secs(i),
                    None => n.as_f64().and_then(crate::timestamp::from_epoch_f64),
                };
                s.map(Some)
                    .ok_or_else(|| self.err(key, "timestamp within years 1-9999"))
            }
            Some(_) => Err(self.err(key, "timestamp")),
        }
    }

    /// A stripped, non-empty string at `key` (blank reads as absent).
    pub fn stripped(&mut self, key: &str) -> Result<Option<String>> {
        Ok(self.opt_str(key)?.and_then(|s| {
            let t = s.trim();
            if t.is_empty() {
                None
            } else if t.len() == s.len() {
                Some(s)
            } else {
                Some(t.to_string())
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_table_finds_every_key_and_nothing_else() {
        static KEYS: &[&str] = &[
            "a",
            "bb",
            "request_id",
            "response_id",
            "channel",
            "channel_id",
            "x",
            "is_stream",
        ];
        let t = KeyTable::new(KEYS);
        for (i, k) in KEYS.iter().enumerate() {
            assert_eq!(t.get(k), Some(i));
        }
        for k in ["", "c", "request", "channel_i", "is_streams"] {
            assert_eq!(t.get(k), None);
        }
    }
}
