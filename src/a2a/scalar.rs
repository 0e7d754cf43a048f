//! The lenient scalars of A2A requests (`x-e2a-scalar` in `schema/a2a.json`): what clients
//! really send for an integer or a boolean parameter. HTTP+JSON carries every query parameter
//! as text, ProtoJSON writes 64-bit integers as strings, and JSON encoders write `5.0`; each
//! reads as the value it stands for, and anything else is refused with a reason serde attaches
//! to the field.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// Integers up to 2^53 are exact in an `f64` (JSON Schema's and ProtoJSON's integers).
const EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// An integer parameter (`A2aCount`): a JSON integer, an integral number (`5.0`), or its
/// decimal text (`"5"`). Integers above `i64::MAX` up to `u64::MAX` (a uint64's range) read
/// as `i64::MAX`: a listing caps a page size, it does not refuse a large one.
///
/// ```
/// use e2a::a2a::scalar::Count;
/// for text in ["5", "5.0", "\"5\"", "5e0"] {
///     assert_eq!(serde_json::from_str::<Count>(text).unwrap().get(), 5);
/// }
/// assert_eq!(serde_json::from_str::<Count>("\"18446744073709551615\"").unwrap().get(), i64::MAX);
/// assert!(serde_json::from_str::<Count>("2.5").is_err());
/// assert!(serde_json::from_str::<Count>("\"many\"").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Count(pub i64);

impl Count {
    /// The integer.
    pub fn get(self) -> i64 {
        self.0
    }

    /// The integer as a count of things: `None` when it is negative.
    pub fn non_negative(self) -> Option<usize> {
        u64::try_from(self.0)
            .ok()
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

impl From<i64> for Count {
    fn from(n: i64) -> Self {
        Count(n)
    }
}

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer (a number or its decimal text)")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Count, E> {
        Ok(Count(n))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
        Ok(Count(i64::try_from(n).unwrap_or(i64::MAX)))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Count, E> {
        if f.fract() == 0.0 && f.abs() < EXACT_F64 {
            // exact: |f| < 2^53
            Ok(Count(f as i64))
        } else {
            Err(E::invalid_value(de::Unexpected::Float(f), &self))
        }
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Count, E> {
        match (s.parse::<i64>(), s.parse::<u64>()) {
            (Ok(n), _) => Ok(Count(n)),
            (_, Ok(_)) => Ok(Count(i64::MAX)),
            _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CountVisitor)
    }
}

/// A boolean parameter (`A2aFlag`): a JSON boolean, or the text `"true"` / `"false"`.
///
/// ```
/// use e2a::a2a::scalar::Flag;
/// assert!(serde_json::from_str::<Flag>("\"true\"").unwrap().get());
/// assert!(!serde_json::from_str::<Flag>("false").unwrap().get());
/// assert!(serde_json::from_str::<Flag>("3").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Flag(pub bool);

impl Flag {
    /// The boolean.
    pub fn get(self) -> bool {
        self.0
    }
}

struct FlagVisitor;

impl Visitor<'_> for FlagVisitor {
    type Value = Flag;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a boolean (or its text `true` / `false`)")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Flag, E> {
        Ok(Flag(b))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Flag, E> {
        match s {
            "true" => Ok(Flag(true)),
            "false" => Ok(Flag(false)),
            _ => Err(E::invalid_value(de::Unexpected::Str(s), &self)),
        }
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FlagVisitor)
    }
}
