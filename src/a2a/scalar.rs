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
/// decimal text (`"5"`), from the smallest signed to the largest unsigned 64-bit integer
/// (ProtoJSON's int64 and uint64). Each operation bounds its own: a page size is capped, a
/// history length refused above the signed range.
///
/// ```
/// use e2a::a2a::scalar::Count;
/// for text in ["5", "5.0", "\"5\"", "5e0"] {
///     assert_eq!(serde_json::from_str::<Count>(text).unwrap().get(), 5);
/// }
/// let max = serde_json::from_str::<Count>("\"18446744073709551615\"").unwrap();
/// assert_eq!(max.get(), i128::from(u64::MAX));
/// assert!(serde_json::from_str::<Count>("\"18446744073709551616\"").is_err());
/// assert!(serde_json::from_str::<Count>("2.5").is_err());
/// assert!(serde_json::from_str::<Count>("\"many\"").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Count(i128);

impl Count {
    /// The integer.
    pub fn get(self) -> i128 {
        self.0
    }

    /// The integer as a count of things: `None` when it is negative or above `i64::MAX` (a
    /// signed 64-bit count, as A2A declares `historyLength`).
    pub fn non_negative(self) -> Option<usize> {
        i64::try_from(self.0)
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

impl From<i64> for Count {
    fn from(n: i64) -> Self {
        Count(n.into())
    }
}

/// Whether `n` is a 64-bit integer, signed or unsigned.
fn in_range(n: i128) -> bool {
    (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&n)
}

struct CountVisitor;

impl Visitor<'_> for CountVisitor {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a 64-bit integer (a number or its decimal text)")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Count, E> {
        Ok(Count(n.into()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
        Ok(Count(n.into()))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Count, E> {
        if f.fract() == 0.0 && f.abs() < EXACT_F64 {
            // exact: |f| < 2^53
            Ok(Count(f as i128))
        } else {
            Err(E::invalid_value(de::Unexpected::Float(f), &self))
        }
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Count, E> {
        match s.parse::<i128>() {
            Ok(n) if in_range(n) => Ok(Count(n)),
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
