//! The lenient reader: every legacy rule of the Python reference's `from_dict`, plus the three
//! deliberate deviations of this SDK (a wrong JSON type is an error naming the field; a null
//! on a defaulted field means the default; a boolean is not a number).
//!
//! This is what a gateway uses on its wire. Each legacy rule that fires is reported as a
//! [`LegacyRule`], so operators can see which old shapes are still in use.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::take::{AsKey, NestedSlots, Slots, Source, Taker};
use crate::types::readers;
use crate::types::{E2AEnvelope, E2AProvenance, E2AResponse};
use crate::{SecretHeaders, SecretString};

/// A message read by [`crate::read::Message::read`], with the legacy rules that fired (lenient mode only;
/// sorted, deduplicated, empty in the other modes).
#[derive(Debug, Clone, PartialEq)]
pub struct Read<T> {
    /// The message.
    pub value: T,
    /// Legacy rules applied while reading.
    pub rules: Vec<LegacyRule>,
}

pub use crate::types::LegacyRule;

/// The reading state the generated readers (`crate::types::readers`, from the `x-e2a` keywords
/// of `schema/`) work on: the fields still to read and the legacy rules that fired. Its methods
/// are the typed reads that cannot be data.
pub(crate) struct Ctx<'b, S: Source> {
    pub f: Taker<'b, S>,
    rules: Vec<LegacyRule>,
}

/// How a legacy key is merged into an object property (existing keys always win).
pub(crate) enum Merge {
    /// Every key of a legacy object, except null, `[]` and `{}` values.
    SkipEmptyValues,
    /// Every key of a legacy object, except keys for which this returns true.
    SkipKeys(fn(&str) -> bool),
    /// A non-empty legacy string, inserted under this key (any other JSON type is an error).
    As(&'static str),
}

impl<'b, S: Source> Ctx<'b, S> {
    fn new(src: S, base: &'b str) -> Self {
        Ctx {
            f: Taker::new(src, base),
            rules: Vec::new(),
        }
    }

    #[inline]
    pub fn fire(&mut self, r: LegacyRule) {
        self.rules.push(r);
    }

    /// Fires `null_default` when `key` holds an explicit null (it then reads as the default).
    #[inline]
    pub fn null_default(&mut self, key: impl AsKey) {
        if self.f.is_null(key) {
            self.fire(LegacyRule::NullDefault);
        }
    }

    /// A string enum at `key`, `default` when absent or null.
    #[inline]
    pub fn parse_or<T: std::str::FromStr>(&mut self, key: impl AsKey, default: T) -> Result<T> {
        match self.f.take(key) {
            None => Ok(default),
            Some(Value::String(s)) => s.parse().map_err(|_| self.f.err(key, "origin")),
            Some(_) => Err(self.f.err(key, "origin")),
        }
    }

    /// A string timestamp kept verbatim, or epoch seconds converted to ISO-8601 UTC (fires
    /// `epoch_timestamp`).
    #[inline]
    pub fn timestamp(&mut self, key: impl AsKey) -> Result<Option<String>> {
        if self.f.peek(key).is_some_and(Value::is_number) {
            self.fire(LegacyRule::EpochTimestamp);
        }
        self.f.timestamp(key)
    }

    /// A header name → secret value map.
    pub fn secret_headers(&mut self, key: impl AsKey) -> Result<SecretHeaders> {
        let mut headers = SecretHeaders::default();
        if let Some(h) = self.f.opt_obj(key)? {
            for (k, v) in h {
                match v {
                    Value::String(v) => {
                        headers.0.insert(k, SecretString::from(v));
                    }
                    _ => return Err(self.f.err(key, "strmap")),
                }
            }
        }
        Ok(headers)
    }

    /// The object at `key` read by `read` (its default when absent or null). `read` and
    /// `read_slots` are the same generated reader, over a map and over slots.
    #[inline]
    pub fn nested_or_default<T: Default>(
        &mut self,
        key: impl AsKey,
        read: fn(&mut Ctx<'_, Map<String, Value>>) -> Result<T>,
        read_slots: fn(&mut Ctx<'_, NestedSlots>) -> Result<T>,
    ) -> Result<T> {
        Ok(self.nested_opt(key, read, read_slots)?.unwrap_or_default())
    }

    /// The object at `key` read by `read` (over a map) or `read_slots` (over the slots the text
    /// path parsed it into), `None` when absent or null.
    #[inline]
    pub fn nested_opt<T>(
        &mut self,
        key: impl AsKey,
        read: fn(&mut Ctx<'_, Map<String, Value>>) -> Result<T>,
        read_slots: fn(&mut Ctx<'_, NestedSlots>) -> Result<T>,
    ) -> Result<Option<T>> {
        if let Some(slots) = self.f.src.take_nested(key) {
            // nested keys outside the reader's table are dropped, as on the map path
            return self.read_nested(slots, key, read_slots).map(Some);
        }
        match self.f.opt_obj(key)? {
            Some(map) => self.read_nested(map, key, read).map(Some),
            None => Ok(None),
        }
    }

    /// Reads the object `src` found at `key` with `read`, carrying the rules that fire.
    fn read_nested<N: Source, T>(
        &mut self,
        src: N,
        key: impl AsKey,
        read: fn(&mut Ctx<'_, N>) -> Result<T>,
    ) -> Result<T> {
        let base = self.f.here();
        let mut inner = Ctx {
            f: Taker::nested(src, &base, key.name()),
            rules: std::mem::take(&mut self.rules),
        };
        let read = read(&mut inner);
        self.rules = inner.rules;
        read
    }

    /// Merges the legacy `key` into `into` as `how` says; fires `rule` when a non-empty legacy
    /// object was merged or a value was inserted.
    pub fn merge(
        &mut self,
        into: &mut Map<String, Value>,
        key: impl AsKey,
        how: Merge,
        rule: LegacyRule,
    ) -> Result<()> {
        match how {
            Merge::As(as_key) => {
                // a string like every other legacy key: a number or a list is an error naming it
                if let Some(v) = self.f.opt_str(key)?.filter(|s| !s.is_empty()) {
                    if !into.contains_key(as_key) {
                        into.insert(as_key.into(), v.into());
                        self.fire(rule);
                    }
                }
            }
            Merge::SkipEmptyValues | Merge::SkipKeys(_) => {
                let Some(legacy) = self.f.opt_obj(key)? else {
                    return Ok(());
                };
                if !legacy.is_empty() {
                    self.fire(rule);
                }
                for (k, v) in legacy {
                    let skip = match how {
                        Merge::SkipKeys(f) => f(&k),
                        _ => {
                            v.is_null()
                                || v.as_array().is_some_and(Vec::is_empty)
                                || v.as_object().is_some_and(Map::is_empty)
                        }
                    };
                    if !skip && !into.contains_key(&k) {
                        into.insert(k, v);
                    }
                }
            }
        }
        Ok(())
    }

    fn finish<T>(mut self, value: T) -> Read<T> {
        self.rules.sort();
        self.rules.dedup();
        Read {
            value,
            rules: self.rules,
        }
    }
}

/// A stripped copy of `s`, `None` when blank (the `x-e2a-strip` rule for an alias that is itself
/// a property).
pub(crate) fn stripped(s: Option<&str>) -> Option<String> {
    s.map(crate::pyrepr::strip)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// The legacy `binding` (`x-e2a-legacy-keys`): a string, or an object with `value`, recorded as
/// `provenance.details.migrated_from_binding` unless already set; `acp`/`a2a` become the
/// `source_protocol` while it is still `e2a`.
pub(crate) fn binding_migration<S: Source>(
    c: &mut Ctx<'_, S>,
    key: impl AsKey,
    binding: Value,
    prov: &mut E2AProvenance,
) -> Result<()> {
    if !matches!(binding, Value::String(_) | Value::Object(_)) {
        return Err(c.f.err(key, "string or object"));
    }
    if prov.details.get("migrated_from_binding").is_some_and(|v| !v.is_null()) {
        return Ok(());
    }
    let value = match &binding {
        Value::Object(m) if m.contains_key("value") => &m["value"],
        other => other,
    };
    let text = if value.is_null() {
        String::new()
    } else {
        crate::pyrepr::py_str(value)
    };
    prov.details.insert("migrated_from_binding".into(), Value::String(text));
    if prov.source_protocol == "e2a" {
        match value.as_str() {
            Some("acp") => prov.source_protocol = "acp".into(),
            Some("a2a") => prov.source_protocol = "a2a".into(),
            _ => {}
        }
    }
    Ok(())
}

fn read_slots<'s, T>(slots: &'s mut Slots, read: fn(&mut Ctx<'static, &'s mut Slots>) -> Result<T>) -> Result<Read<T>> {
    let unknown = slots.unknown;
    let mut c = Ctx::new(slots, "");
    if unknown {
        c.fire(LegacyRule::UnknownKeys);
    }
    let value = read(&mut c)?;
    Ok(c.finish(value))
}

/// Reads an envelope leniently from a JSON object (the reference's `E2AEnvelope.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::E2AEnvelope::read_value(&json!({
///     "request_id": "r1", "channel_id": "feishu", "req_method": "chat.send",
///     "timestamp": 1774524781.15, "metadata": {"open_id": "ou"}
/// }), &e2a::ReadOptions::lenient()).unwrap();
/// assert_eq!(r.value.channel.as_deref(), Some("feishu"));
/// assert_eq!(r.value.method.as_deref(), Some("chat.send"));
/// assert_eq!(r.value.timestamp.as_deref(), Some("2026-03-26T11:33:01.150000+00:00"));
/// assert_eq!(r.value.channel_context["open_id"], "ou");
/// assert!(r.rules.contains(&e2a::LegacyRule::ReqMethod));
/// ```
pub(crate) fn envelope(input: &Value) -> Result<Read<E2AEnvelope>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let mut slots = Slots::new(&readers::E2A_ENVELOPE_TABLE);
    slots.fill_from_map(map);
    read_slots(&mut slots, readers::e2a_envelope)
}

/// Reads an envelope leniently from JSON text, straight into the struct (no intermediate
/// `serde_json::Value` for the top level). The caller checks [`crate::Limits`] first.
pub(crate) fn envelope_str(input: &str) -> Result<Read<E2AEnvelope>> {
    let mut slots = Slots::new(&readers::E2A_ENVELOPE_TABLE);
    slots.fill_from_str(input)?;
    read_slots(&mut slots, readers::e2a_envelope)
}

/// Reads a response leniently from a JSON object (the reference's `E2AResponse.from_dict`).
///
/// ```
/// use serde_json::json;
/// let r = e2a::E2AResponse::read_value(&json!({"response_kind": "e2a.chunk", "sequence": 2, "status": null}), &e2a::ReadOptions::lenient()).unwrap();
/// assert_eq!(r.value.sequence, 2);
/// assert_eq!(r.value.status, "in_progress");
/// assert!(e2a::E2AResponse::read_value(&json!({"sequence": "2"}), &e2a::ReadOptions::lenient()).is_err());
/// ```
pub(crate) fn response(input: &Value) -> Result<Read<E2AResponse>> {
    let map = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let mut slots = Slots::new(&readers::E2A_RESPONSE_TABLE);
    slots.fill_from_map(map);
    read_slots(&mut slots, readers::e2a_response)
}

/// Reads a response leniently from JSON text, straight into the struct. The caller checks
/// [`crate::Limits`] first.
pub(crate) fn response_str(input: &str) -> Result<Read<E2AResponse>> {
    let mut slots = Slots::new(&readers::E2A_RESPONSE_TABLE);
    slots.fill_from_str(input)?;
    read_slots(&mut slots, readers::e2a_response)
}

#[cfg(test)]
mod tests {
    use crate::types::readers;

    /// Every `(index, "key")` a generated reader passes names that slot of its own key table
    /// (the slot reader trusts the index in release builds).
    #[test]
    fn generated_key_indices_match_their_tables() {
        let code = include_str!(concat!(env!("OUT_DIR"), "/e2a_types.rs"));
        for (func, table) in [
            ("fn e2a_envelope<", readers::E2A_ENVELOPE_KEYS),
            ("fn e2a_response<", readers::E2A_RESPONSE_KEYS),
        ] {
            let start = code.find(func).expect("reader");
            let body = &code[start..];
            let body = &body[..body[1..].find("pub(crate) fn").map_or(body.len(), |e| e + 1)];
            let mut checked = 0;
            for (i, _) in body.match_indices('(') {
                let rest = &body[i + 1..];
                let Some((num, tail)) = rest.split_once(", \"") else {
                    continue;
                };
                let Ok(idx) = num.parse::<usize>() else { continue };
                let name = &tail[..tail.find('"').unwrap_or(0)];
                assert_eq!(table[idx], name, "{func}: index {idx}");
                checked += 1;
            }
            assert!(checked > 20, "{func}: {checked} keyed reads");
        }
    }
}
