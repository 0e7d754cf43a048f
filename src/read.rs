//! The one reader surface: [`ReadOptions`] (a [`ReadMode`] and [`Limits`]) in, [`Read<T>`]
//! out, for JSON text ([`Message::read`]) and for parsed values ([`Message::read_value`]);
//! and the [`Lenient`] / [`Strict`] wrappers that implement `Deserialize`, so a service can
//! take `axum::Json<Lenient<E2AEnvelope>>` or `serde_json::from_str::<Strict<E2AResponse>>`.
//!
//! ```
//! use e2a::{E2AResponse, Message, ReadMode, ReadOptions};
//!
//! // The ten keys the protocol requires are a valid response; the rest take their defaults.
//! let chunk = r#"{"protocol_version":"1.0","response_id":"r1","request_id":"req_1","sequence":0,
//!   "is_final":false,"status":"in_progress","response_kind":"e2a.chunk",
//!   "timestamp":"2026-03-29T12:00:00+00:00","provenance":{"source_protocol":"e2a"},
//!   "body":{"delta_kind":"text","delta":"Hello"}}"#;
//! let read = E2AResponse::read(chunk, &ReadOptions::strict())?;
//! assert_eq!(read.value.sequence, 0);
//!
//! // Canonical mode also wants what e2a itself writes: every key.
//! let err = E2AResponse::read(chunk, &ReadOptions::canonical()).unwrap_err();
//! assert!(err.violations().iter().any(|v| v.pointer == "/identity_origin"));
//!
//! // A wrong type names the field.
//! let bad = chunk.replace(r#""sequence":0"#, r#""sequence":"1""#);
//! let err = E2AResponse::read(&bad, &ReadOptions::strict()).unwrap_err();
//! assert_eq!(err.violations()[0].pointer, "/sequence");
//! # Ok::<(), e2a::Error>(())
//! ```

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _};
use serde_json::Value;

use crate::error::{Error, Result, Violation};
use crate::limits::Limits;
use crate::{E2AEnvelope, E2AResponse};

/// How strictly a message is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ReadMode {
    /// Every legacy shape the reference `from_dict` accepts; the rules that fired are reported
    /// in [`Read::rules`]. What a gateway uses on its wire.
    #[default]
    Lenient,
    /// Valid against the schema: types, enums, the protocol's `required` set, no unknown
    /// top-level keys. Omitted optional fields take their defaults.
    Strict,
    /// Strict, and exactly what e2a writes: every field present (nulls and empty containers
    /// included) and already normalized (e.g. stripped ids).
    Canonical,
}

impl ReadMode {
    /// Every mode, from the most to the least permissive.
    pub const ALL: [ReadMode; 3] = [ReadMode::Lenient, ReadMode::Strict, ReadMode::Canonical];

    /// The mode's name (`lenient`, `strict`, `canonical`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ReadMode::Lenient => "lenient",
            ReadMode::Strict => "strict",
            ReadMode::Canonical => "canonical",
        }
    }
}

/// What a reader needs: a mode and the input limits (always applied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadOptions {
    /// How strictly to read.
    pub mode: ReadMode,
    /// Limits checked before any parsing (on values: before any reading).
    pub limits: Limits,
}

impl ReadOptions {
    /// Lenient reading under the default limits.
    pub fn lenient() -> Self {
        Self::default()
    }

    /// Strict reading under the default limits.
    pub fn strict() -> Self {
        ReadOptions {
            mode: ReadMode::Strict,
            ..Self::default()
        }
    }

    /// Canonical reading under the default limits.
    pub fn canonical() -> Self {
        ReadOptions {
            mode: ReadMode::Canonical,
            ..Self::default()
        }
    }

    /// These options with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

pub use crate::fields::member;
/// A message read, with the legacy rules that fired (kept with the rules, in `lenient`).
pub use crate::lenient::Read;

/// An E2A message type that the readers know: [`E2AEnvelope`] and [`E2AResponse`].
pub trait Message: Sized + Clone + PartialEq + DeserializeOwned + sealed::Sealed {
    /// Reads JSON text under `options`.
    fn read(input: &str, options: &ReadOptions) -> Result<Read<Self>> {
        options.limits.check(input)?;
        match options.mode {
            ReadMode::Lenient => Self::lenient_str(input),
            ReadMode::Strict => match decode_objects_only::<Self>(input) {
                // The generated types carry the schema (types, enums, required sets, no unknown
                // keys, defaults), so a typed decode is a valid message (tests/properties.rs
                // checks this against the validator) when every struct is read from an object
                // (serde alone also takes an array); only a failure needs the validator, to
                // report every violation with its pointer.
                Ok(value) => Ok(Read {
                    value,
                    rules: Vec::new(),
                }),
                Err(_) => {
                    let value = serde_json::from_str(input).map_err(|e| Error::from_json(&e))?;
                    Self::schema_read(&value, ReadMode::Strict)
                }
            },
            mode => {
                let value = serde_json::from_str(input).map_err(|e| Error::from_json(&e))?;
                Self::schema_read(&value, mode)
            }
        }
    }

    /// Reads a parsed JSON value under `options` (the limits are checked on the value).
    fn read_value(input: &Value, options: &ReadOptions) -> Result<Read<Self>> {
        options.limits.check_value(input)?;
        match options.mode {
            ReadMode::Lenient => Self::lenient_value(input),
            mode => Self::schema_read(input, mode),
        }
    }

    /// Reads JSON text leniently under the default [`Limits`].
    fn from_json(input: &str) -> Result<Self> {
        Self::read(input, &ReadOptions::default()).map(|r| r.value)
    }

    /// Reads a JSON value leniently under the default [`Limits`] (the reference's `from_dict`).
    fn from_value(input: &Value) -> Result<Self> {
        Self::read_value(input, &ReadOptions::default()).map(|r| r.value)
    }

    /// The canonical JSON object: every field, nulls and empty containers included.
    fn to_value(&self) -> Value;

    #[doc(hidden)]
    fn lenient_str(input: &str) -> Result<Read<Self>>;
    #[doc(hidden)]
    fn lenient_value(input: &Value) -> Result<Read<Self>>;
    #[doc(hidden)]
    fn validator() -> Result<&'static jsonschema::Validator>;

    #[doc(hidden)]
    fn schema_read(value: &Value, mode: ReadMode) -> Result<Read<Self>> {
        let validator = Self::validator()?;
        if !validator.is_valid(value) {
            return Err(Error::Schema(crate::strict::violations(validator, value)));
        }
        let decoded = Self::deserialize(value).map_err(|_| Error::field("", "does not match the generated type"))?;
        if mode == ReadMode::Canonical {
            let problems = non_canonical(value, &decoded)?;
            if !problems.is_empty() {
                return Err(Error::Schema(problems));
            }
        }
        Ok(Read {
            value: decoded,
            rules: Vec::new(),
        })
    }
}

/// The inherent reading and writing methods of a [`Message`] type (so callers need not import
/// the trait): `to_value`, `to_json`, `read`, `read_value`, `from_json`, `from_value`.
macro_rules! message_methods {
    ($ty:ident) => {
        impl $ty {
            /// The canonical JSON object: every field, nulls and empty containers included (the
            /// reference `to_dict()` key set).
            pub fn to_value(&self) -> serde_json::Value {
                <Self as $crate::read::Message>::to_value(self)
            }

            /// Canonical compact JSON text (what `serde_json` writes for this type, by the
            /// generated writer of [`crate::write`]).
            pub fn to_json(&self) -> String {
                $crate::write::to_json(self)
            }

            /// Reads JSON text under `options` (mode and limits); see [`crate::read`].
            pub fn read(
                input: &str,
                options: &$crate::read::ReadOptions,
            ) -> $crate::Result<$crate::read::Read<Self>> {
                <Self as $crate::read::Message>::read(input, options)
            }

            /// Reads a parsed JSON value under `options` (mode and limits); see [`crate::read`].
            pub fn read_value(
                input: &serde_json::Value,
                options: &$crate::read::ReadOptions,
            ) -> $crate::Result<$crate::read::Read<Self>> {
                <Self as $crate::read::Message>::read_value(input, options)
            }

            /// Reads JSON text leniently (legacy shapes accepted) under the default
            /// [`crate::Limits`].
            ///
            /// ```
            #[doc = concat!("let m = e2a::", stringify!($ty), r##"::from_json(r#"{"request_id":"r1","channel_id":"web"}"#).unwrap();"##)]
            /// assert_eq!(m.channel.as_deref(), Some("web"));
            #[doc = concat!("assert!(e2a::", stringify!($ty), r##"::from_json(r#"{"request_id":"#).is_err());"##)]
            /// ```
            pub fn from_json(input: &str) -> $crate::Result<Self> {
                <Self as $crate::read::Message>::from_json(input)
            }

            /// Reads a JSON value leniently (the reference's `from_dict`) under the default
            /// [`crate::Limits`].
            pub fn from_value(input: &serde_json::Value) -> $crate::Result<Self> {
                <Self as $crate::read::Message>::from_value(input)
            }
        }
    };
}
pub(crate) use message_methods;

/// `input` decoded into `T`, every struct from a JSON object
/// ([`ObjectsOnly`](crate::objects_only::ObjectsOnly)), nothing but
/// whitespace after it.
fn decode_objects_only<T: DeserializeOwned>(input: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(input);
    let value = T::deserialize(crate::objects_only::ObjectsOnly(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Where a schema-valid `value` is not what e2a writes: a missing key, or a field the lenient
/// reader normalizes (so "canonical-valid ⇒ lenient-valid with the same value" holds).
fn non_canonical<T: Message>(value: &Value, decoded: &T) -> Result<Vec<Violation>> {
    let written = decoded.to_value();
    let (Some(given), Some(written)) = (value.as_object(), written.as_object()) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Violation> = written
        .keys()
        .filter(|k| !given.contains_key(*k))
        .map(|k| Violation {
            pointer: format!("/{}", crate::fields::pointer_key(k)),
            reason: "missing (the canonical form carries every field, nulls and empty containers included)".into(),
        })
        .collect();
    if out.is_empty() {
        let normalized = T::lenient_value(value)?.value.to_value();
        let normalized = normalized.as_object().cloned().unwrap_or_default();
        out.extend(
            given
                .iter()
                .filter(|(k, v)| normalized.get(*k) != Some(*v))
                .map(|(k, _)| Violation {
                    pointer: format!("/{}", crate::fields::pointer_key(k)),
                    reason: "not in canonical form (the lenient reader normalizes it; e.g. ids are stripped)".into(),
                }),
        );
    }
    Ok(out)
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::E2AEnvelope {}
    impl Sealed for crate::E2AResponse {}
}

impl Message for E2AEnvelope {
    fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
    fn lenient_str(input: &str) -> Result<Read<Self>> {
        crate::lenient::envelope_str(input)
    }
    fn lenient_value(input: &Value) -> Result<Read<Self>> {
        crate::lenient::envelope(input)
    }
    fn validator() -> Result<&'static jsonschema::Validator> {
        crate::strict::envelope_validator()
    }
}

impl Message for E2AResponse {
    fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
    fn lenient_str(input: &str) -> Result<Read<Self>> {
        crate::lenient::response_str(input)
    }
    fn lenient_value(input: &Value) -> Result<Read<Self>> {
        crate::lenient::response(input)
    }
    fn validator() -> Result<&'static jsonschema::Validator> {
        crate::strict::response_validator()
    }
}

/// A message read leniently when deserialized (legacy shapes accepted, default [`Limits`]):
/// `axum::Json<Lenient<E2AEnvelope>>` in a service.
///
/// ```
/// use e2a::{E2AEnvelope, Lenient};
/// let Lenient(env) = serde_json::from_str::<Lenient<E2AEnvelope>>(r#"{"req_method":"chat.send"}"#)?;
/// assert_eq!(env.method.as_deref(), Some("chat.send"));
/// assert!(serde_json::from_str::<Lenient<E2AEnvelope>>(r#"{"is_stream":"yes"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Lenient<T>(pub T);

/// A message read strictly when deserialized (schema-valid, protocol `required` set, defaults
/// for the rest, default [`Limits`]).
///
/// ```
/// use e2a::{E2AEnvelope, Strict};
/// let Strict(env) = serde_json::from_str::<Strict<E2AEnvelope>>(r#"{"method":"x","params":{"q":1}}"#)?;
/// assert_eq!(env.method.as_deref(), Some("x"));
/// assert!(serde_json::from_str::<Strict<E2AEnvelope>>(r#"{"req_method":"x"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Strict<T>(pub T);

fn deserialize_in<'de, D: Deserializer<'de>, T: Message>(d: D, options: &ReadOptions) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    T::read_value(&value, options)
        .map(|r| r.value)
        .map_err(D::Error::custom)
}

impl<'de, T: Message> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_in(d, &ReadOptions::lenient()).map(Lenient)
    }
}

impl<'de, T: Message> Deserialize<'de> for Strict<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_in(d, &ReadOptions::strict()).map(Strict)
    }
}

impl<T> std::ops::Deref for Lenient<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::Deref for Strict<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
