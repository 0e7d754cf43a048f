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

mod slots;

pub(crate) use slots::{KeyTable, Slot, SlotArray, SlotStore, SparseSlots};

/// A key to read: its name, and (from the generated readers) its index in the type's key
/// table, so a slot is found without hashing or comparing the name.
pub(crate) trait AsKey: Copy {
    /// The key's name (for maps and for error pointers).
    fn name(&self) -> &str;
    /// The key's index in the reader's key table, when known.
    fn index(&self) -> Option<usize> {
        None
    }
}

impl AsKey for &str {
    #[inline]
    fn name(&self) -> &str {
        self
    }
}

/// A key with its index in the generated key table (`(index, name)`).
impl AsKey for (usize, &str) {
    #[inline]
    fn name(&self) -> &str {
        self.1
    }
    #[inline]
    fn index(&self) -> Option<usize> {
        Some(self.0)
    }
}

/// Where fields are taken from.
pub(crate) trait Source {
    /// Removes and returns the value at `key` (a JSON null is `Some(Null)`).
    fn take(&mut self, key: impl AsKey) -> Option<Value>;
    /// The value at `key`, if present.
    fn peek(&self, key: impl AsKey) -> Option<&Value>;
    /// Removes and returns the object at `key` when it was parsed straight into slots of its
    /// own (a nested reader's object on the text path); `None` otherwise.
    fn take_nested(&mut self, _key: impl AsKey) -> Option<NestedSlots> {
        None
    }
}

impl Source for Map<String, Value> {
    fn take(&mut self, key: impl AsKey) -> Option<Value> {
        self.remove(key.name())
    }
    fn peek(&self, key: impl AsKey) -> Option<&Value> {
        self.get(key.name())
    }
}

/// One slot per known key of a message type: on the stack for a message, only those present
/// for a nested object ([`NestedSlots`]).
pub(crate) struct Slots<V = SlotArray> {
    keys: &'static KeyTable,
    vals: V,
    /// Whether the message had keys outside `keys`.
    pub unknown: bool,
}

/// The slots of a nested reader's object.
pub(crate) type NestedSlots = Slots<SparseSlots>;

fn index(keys: &KeyTable, key: &str) -> Option<usize> {
    keys.get(key)
}

impl<V: SlotStore> Slots<V> {
    /// The slot of `key`: its known index (checked against the table), else a table lookup.
    #[inline]
    fn slot(&self, key: impl AsKey) -> Option<usize> {
        match key.index() {
            // generated readers pass the index of their own key table (checked in debug builds
            // and by `generated_key_indices_match_their_tables`)
            Some(i) if i < self.keys.keys.len() => {
                debug_assert_eq!(self.keys.keys[i], key.name());
                Some(i)
            }
            _ => index(self.keys, key.name()),
        }
    }

    #[inline]
    fn take_value(&mut self, key: impl AsKey) -> Option<Value> {
        let i = self.slot(key)?;
        // a nested reader's key is only read by `take_nested`: left in place (checked before
        // the move, so an empty or nested slot is neither moved nor dropped)
        if !matches!(self.vals.get(i)?, Slot::Value(_)) {
            return None;
        }
        match self.vals.remove(i) {
            Slot::Value(v) => Some(v),
            _ => None,
        }
    }

    #[inline]
    fn peek_value(&self, key: impl AsKey) -> Option<&Value> {
        match self.vals.get(self.slot(key)?)? {
            Slot::Value(v) => Some(v),
            _ => None,
        }
    }

    #[inline]
    fn take_slots(&mut self, key: impl AsKey) -> Option<NestedSlots> {
        let i = self.slot(key)?;
        let keys = self.keys.nested[i]?;
        if !matches!(self.vals.get(i)?, Slot::Nested(_)) {
            return None;
        }
        match self.vals.remove(i) {
            Slot::Nested(vals) => Some(Slots {
                keys,
                vals,
                unknown: false,
            }),
            _ => None,
        }
    }

    /// Reads the entries of a JSON object into these slots.
    fn fill<'de, A: MapAccess<'de>>(&mut self, mut a: A) -> std::result::Result<(), A::Error> {
        let keys = self.keys;
        while let Some(i) = a.next_key_seed(KeySeed { keys })? {
            let Some(i) = i else {
                self.unknown = true;
                a.next_value::<IgnoredAny>()?;
                continue;
            };
            let value = match keys.nested[i] {
                Some(table) => a.next_value_seed(NestedSeed { keys: table })?,
                None => Slot::Value(a.next_value::<Value>()?),
            };
            self.vals.put(i, value);
        }
        Ok(())
    }
}

/// Slots are read in place (`&mut Slots`: a message's slots on the stack) or owned (a
/// nested object's [`NestedSlots`]).
impl<V: SlotStore> Source for Slots<V> {
    #[inline]
    fn take(&mut self, key: impl AsKey) -> Option<Value> {
        self.take_value(key)
    }
    #[inline]
    fn peek(&self, key: impl AsKey) -> Option<&Value> {
        self.peek_value(key)
    }
    #[inline]
    fn take_nested(&mut self, key: impl AsKey) -> Option<NestedSlots> {
        self.take_slots(key)
    }
}

impl<T: Source> Source for &mut T {
    #[inline(always)]
    fn take(&mut self, key: impl AsKey) -> Option<Value> {
        (**self).take(key)
    }
    #[inline(always)]
    fn peek(&self, key: impl AsKey) -> Option<&Value> {
        (**self).peek(key)
    }
    #[inline(always)]
    fn take_nested(&mut self, key: impl AsKey) -> Option<NestedSlots> {
        (**self).take_nested(key)
    }
}

impl Slots {
    /// Empty slots for the keys of `keys`.
    pub fn new(keys: &'static KeyTable) -> Slots {
        Slots {
            keys,
            vals: SlotArray::new(),
            unknown: false,
        }
    }

    /// The known keys of `map`, cloned into these slots.
    pub fn fill_from_map(&mut self, map: &Map<String, Value>) {
        for (k, v) in map {
            match index(self.keys, k) {
                Some(i) => self.vals.put(i, Slot::Value(v.clone())),
                None => self.unknown = true,
            }
        }
    }

    /// Parses JSON text (an object) straight into these slots, in place (the slot array is
    /// never moved). Unknown keys are skipped without building their values; duplicate keys
    /// keep the last value (as `serde_json::Value`); the object of a nested reader's key is
    /// parsed into slots of its own.
    pub fn fill_from_str(&mut self, input: &str) -> Result<()> {
        if !input.trim_start().starts_with('{') {
            // a syntax error is reported as such; valid non-objects are a field error
            serde_json::from_str::<IgnoredAny>(input).map_err(|e| Error::from_json(&e))?;
            return Err(Error::field("", "expected object"));
        }
        let mut de = serde_json::Deserializer::from_str(input);
        SlotsSeed { slots: self }
            .deserialize(&mut de)
            .map_err(|e| Error::from_json(&e))?;
        de.end().map_err(|e| Error::from_json(&e))
    }
}

struct SlotsSeed<'s> {
    slots: &'s mut Slots,
}

impl<'de> DeserializeSeed<'de> for SlotsSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SlotsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> std::result::Result<(), A::Error> {
        self.slots.fill(a)
    }
}

/// The value of a nested reader's key: an object into slots of its own, anything else as a
/// [`Value`] (which the reader then reports as the wrong type, or reads as absent when null).
struct NestedSeed {
    keys: &'static KeyTable,
}

impl<'de> DeserializeSeed<'de> for NestedSeed {
    type Value = Slot;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Slot, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NestedSeed {
    type Value = Slot;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> std::result::Result<Slot, A::Error> {
        let mut slots = Slots {
            keys: self.keys,
            vals: SparseSlots::with_capacity(self.keys.keys.len()),
            unknown: false,
        };
        slots.fill(a)?;
        Ok(Slot::Nested(slots.vals))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Slot, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = a.next_element::<Value>()? {
            items.push(v);
        }
        Ok(Slot::Value(Value::Array(items)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::Null))
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Slot, E> {
        Ok(Slot::Value(Value::String(v)))
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
    /// The key of this object inside `base` (a nested object); the pointer is only built when
    /// an error needs it.
    sub: Option<&'b str>,
}

impl<'b, S: Source> Taker<'b, S> {
    pub fn new(src: S, base: &'b str) -> Self {
        Taker { src, base, sub: None }
    }

    /// A taker for the object found at `key` of an object at `base`.
    pub fn nested(src: S, base: &'b str, key: &'b str) -> Self {
        Taker {
            src,
            base,
            sub: Some(key),
        }
    }

    /// The JSON pointer of this object (`base`, plus the nested key).
    pub fn here(&self) -> String {
        match self.sub {
            Some(k) => format!("{}/{}", self.base, pointer_key(k)),
            None => self.base.to_string(),
        }
    }

    pub fn ptr(&self, key: impl AsKey) -> String {
        format!("{}/{}", self.here(), pointer_key(key.name()))
    }

    pub fn err(&self, key: impl AsKey, expected: &str) -> Error {
        Error::field(self.ptr(key), format!("expected {expected}"))
    }

    /// True when `key` is present with an explicit JSON null.
    #[inline]
    pub fn is_null(&self, key: impl AsKey) -> bool {
        self.src.peek(key).is_some_and(Value::is_null)
    }

    #[inline]
    pub fn peek(&self, key: impl AsKey) -> Option<&Value> {
        self.src.peek(key).filter(|v| !v.is_null())
    }

    /// Takes the value at `key`; JSON null reads as absent.
    #[inline]
    pub fn take(&mut self, key: impl AsKey) -> Option<Value> {
        self.src.take(key).filter(|v| !v.is_null())
    }

    #[inline]
    pub fn opt_str(&mut self, key: impl AsKey) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "string")),
        }
    }

    #[inline]
    pub fn str_or(&mut self, key: impl AsKey, default: &str) -> Result<String> {
        Ok(self.opt_str(key)?.unwrap_or_else(|| default.to_string()))
    }

    #[inline]
    pub fn opt_obj(&mut self, key: impl AsKey) -> Result<Option<Map<String, Value>>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "object")),
        }
    }

    #[inline]
    pub fn obj(&mut self, key: impl AsKey) -> Result<Map<String, Value>> {
        Ok(self.opt_obj(key)?.unwrap_or_default())
    }

    #[inline]
    pub fn bool_or(&mut self, key: impl AsKey, default: bool) -> Result<bool> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(self.err(key, "boolean")),
        }
    }

    pub fn str_array(&mut self, key: impl AsKey) -> Result<Vec<String>> {
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

    pub fn rpc_id(&mut self, key: impl AsKey) -> Result<Option<JsonRpcId>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(JsonRpcId::String(s))),
            Some(v) => rpc_id_of(&v).map(Some).ok_or_else(|| self.err(key, "rpcid")),
        }
    }

    #[inline]
    pub fn seq(&mut self, key: impl AsKey, default: u64) -> Result<u64> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| self.err(key, "seq")),
            Some(_) => Err(self.err(key, "seq")),
        }
    }

    pub fn timestamp(&mut self, key: impl AsKey) -> Result<Option<String>> {
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
    #[inline]
    pub fn stripped(&mut self, key: impl AsKey) -> Result<Option<String>> {
        Ok(self.opt_str(key)?.and_then(|s| {
            let t = crate::pyrepr::strip(&s);
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
        let t = KeyTable::new(KEYS, &[]);
        for (i, k) in KEYS.iter().enumerate() {
            assert_eq!(t.get(k), Some(i));
        }
        for k in ["", "c", "request", "channel_i", "is_streams"] {
            assert_eq!(t.get(k), None);
        }
    }

    /// Text read into slots: duplicate keys keep the last value (top level and nested), a
    /// nested object is taken whole, a slot taken is gone, what nobody took is dropped with
    /// the slots, and unknown keys are only noted.
    #[test]
    fn slots_read_text_keep_the_last_duplicate_and_move_values_out() {
        static INNER: &[&str] = &["p", "q"];
        static INNER_TABLE: KeyTable = KeyTable::new(INNER, &[]);
        static OUTER: &[&str] = &["a", "n", "b"];
        static OUTER_TABLE: KeyTable = KeyTable::new(OUTER, &[(1, &INNER_TABLE)]);
        let mut slots = Slots::new(&OUTER_TABLE);
        slots
            .fill_from_str(
                r#"{"a": 1, "zz": [1], "n": {"p": "x", "q": 1, "p": "y", "r": 0}, "a": "last", "b": [true]}"#,
            )
            .unwrap();
        assert!(slots.unknown);
        assert_eq!(slots.peek("a"), Some(&Value::from("last")));
        assert_eq!(slots.take((0, "a")), Some(Value::from("last")));
        assert_eq!(slots.take("a"), None, "a slot taken is gone");
        // a nested reader's key is not read as a value
        assert_eq!(slots.take("n"), None);
        let mut nested = slots.take_nested("n").unwrap();
        assert_eq!(nested.take("p"), Some(Value::from("y")));
        assert_eq!(nested.take("p"), None);
        assert_eq!(nested.peek((1, "q")), Some(&Value::from(1)));
        assert!(slots.take_nested("n").is_none());
        // "b" and the nested "q" are left for the drops
        let mut from_map = Slots::new(&OUTER_TABLE);
        from_map.fill_from_map(serde_json::json!({"b": 2, "c": 3}).as_object().unwrap());
        assert!(from_map.unknown);
        assert_eq!(from_map.take("b"), Some(Value::from(2)));
    }
}
