//! Typed field access on JSON objects with pointer-naming errors: the building blocks of the
//! lenient readers and the adapters. Missing keys and explicit nulls read as "absent".

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::types::JsonRpcId;

/// A JSON object being read, with the JSON pointer of where it sits in the message.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub base: &'a str,
}

/// Most members an object may have for [`member`] to look a key up by reading them in turn.
const SCAN_AT_MOST: usize = 8;

/// The member `key` of `object`, as `object.get(key)` finds it. A small object (the usual
/// request's: a message, its params, a configuration) is read member by member, comparing
/// keys, instead of hashing `key` (a map of `serde_json` hashes with SipHash: about a hundred
/// instructions a key, against a few for a compare that fails on the length).
///
/// ```
/// let object = serde_json::json!({"role": "ROLE_USER", "parts": []});
/// let object = object.as_object().unwrap();
/// assert_eq!(e2a::read::member(object, "role"), object.get("role"));
/// assert_eq!(e2a::read::member(object, "taskId"), None);
/// ```
#[inline]
pub fn member<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    match object.len() <= SCAN_AT_MOST {
        true => object.iter().find_map(|(k, v)| (k == key).then_some(v)),
        false => object.get(key),
    }
}

/// [`member`], to change.
#[inline]
pub(crate) fn member_mut<'a>(object: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    match object.len() <= SCAN_AT_MOST {
        true => object.iter_mut().find_map(|(k, v)| (k == key).then_some(v)),
        false => object.get_mut(key),
    }
}

/// Escapes a key for use in a JSON pointer (RFC 6901).
pub(crate) fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>, base: &'a str) -> Self {
        Fields { map, base }
    }

    /// The pointer of `key` below this object.
    pub fn ptr(&self, key: &str) -> String {
        format!("{}/{}", self.base, pointer_key(key))
    }

    pub fn err(&self, key: &str, expected: &str) -> Error {
        Error::field(self.ptr(key), format!("expected {expected}"))
    }

    /// The value of `key`, with JSON null treated as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        member(self.map, key).filter(|v| !v.is_null())
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<String>> {
        self.opt_str_ref(key).map(|o| o.map(str::to_string))
    }

    pub fn opt_str_ref(&self, key: &str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "string")),
        }
    }

    pub fn str_or(&self, key: &str, default: &str) -> Result<String> {
        Ok(self.opt_str(key)?.unwrap_or_else(|| default.to_string()))
    }

    pub fn opt_obj(&self, key: &str) -> Result<Option<&'a Map<String, Value>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.err(key, "object")),
        }
    }

    /// A copy of the object at `key`; absent/null → `{}`.
    pub fn obj(&self, key: &str) -> Result<Map<String, Value>> {
        Ok(self.opt_obj(key)?.cloned().unwrap_or_default())
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(key, "boolean")),
        }
    }

    pub fn str_array(&self, key: &str) -> Result<Vec<String>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.err(key, "array<string>"))
                })
                .collect(),
            Some(_) => Err(self.err(key, "array<string>")),
        }
    }

    pub fn rpc_id(&self, key: &str) -> Result<Option<JsonRpcId>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => rpc_id_of(v).map(Some).ok_or_else(|| self.err(key, "rpcid")),
        }
    }

    /// A non-negative integer (`sequence`); absent/null → `default`.
    pub fn seq(&self, key: &str, default: u64) -> Result<u64> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| self.err(key, "seq")),
            Some(_) => Err(self.err(key, "seq")),
        }
    }
}

/// A JSON-RPC id from JSON: a string or an integer that fits `i64`.
pub(crate) fn rpc_id_of(v: &Value) -> Option<JsonRpcId> {
    match v {
        Value::String(s) => Some(JsonRpcId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(JsonRpcId::Integer),
        _ => None,
    }
}

/// Python truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}
