//! Input limits applied before a message is parsed.

use crate::error::{Error, LimitKind, Result};

/// Limits on untrusted input. Readers check them on the raw bytes before building any JSON
/// value, so a hostile message costs one linear scan.
///
/// ```
/// let limits = e2a::Limits { max_depth: 8, ..e2a::Limits::default() };
/// let deep = format!("{}{}", "[".repeat(20), "]".repeat(20));
/// assert!(limits.check(&deep).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum message size in bytes. Default 16 MiB.
    pub max_bytes: usize,
    /// Maximum nesting depth of arrays/objects. Default 64.
    pub max_depth: usize,
    /// Maximum length in bytes of one JSON string (as written, escapes included). Default 8 MiB.
    pub max_string_bytes: usize,
    /// Maximum number of values: array elements, object members and the message itself
    /// (counted as the `[`, `{` and `,` outside strings, plus one). A parsed value costs far
    /// more memory than its text (`[0,0,…]` is 2 bytes a value as text, 32 as a
    /// `serde_json::Value`): this bounds what a message can make a reader hold. Default 2^20.
    pub max_values: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 << 20,
            max_depth: 64,
            max_string_bytes: 8 << 20,
            max_values: 1 << 20,
        }
    }
}

impl Limits {
    /// No limits at all (trusted input only).
    pub const UNLIMITED: Limits = Limits {
        max_bytes: usize::MAX,
        max_depth: usize::MAX,
        max_string_bytes: usize::MAX,
        max_values: usize::MAX,
    };

    /// Checks raw JSON text against the limits without parsing it.
    pub fn check(&self, input: &str) -> Result<()> {
        if input.len() > self.max_bytes {
            return Err(Error::Limit {
                limit: LimitKind::MessageBytes,
                max: self.max_bytes,
                actual: input.len(),
            });
        }
        if self.within_by_counts(input) {
            return Ok(());
        }
        self.scan(input)
    }

    /// The fast path of [`Limits::check`]: with no more openers than the depth limit, no more
    /// openers and commas than the value limit and a message no longer than the string limit,
    /// no limit can be exceeded (vectorizable counts, no state machine). A message shorter
    /// than the value limit cannot have too many values (each takes a byte of it, as an opener
    /// or after a comma), so only its openers are counted.
    fn within_by_counts(&self, input: &str) -> bool {
        if input.len() > self.max_string_bytes {
            return false;
        }
        // `[` is `{` without the 0x20 bit: one compare finds both
        let opener = |b: &u8| u8::from(*b | 0x20 == b'{');
        let bytes = input.as_bytes();
        if bytes.len() < self.max_values {
            let openers = bytes
                .chunks(255)
                .map(|chunk| usize::from(chunk.iter().map(opener).sum::<u8>()))
                .sum::<usize>();
            return openers <= self.max_depth;
        }
        let (openers, commas) = bytes.chunks(255).fold((0usize, 0usize), |(o, c), chunk| {
            let opened: u8 = chunk.iter().map(opener).sum();
            let separated: u8 = chunk.iter().map(|&b| u8::from(b == b',')).sum();
            (o + usize::from(opened), c + usize::from(separated))
        });
        openers <= self.max_depth && openers.saturating_add(commas) < self.max_values
    }

    /// The exact check of [`Limits::check`]: one pass over the text that, outside strings,
    /// counts values and tracks the depth, and measures every string.
    fn scan(&self, input: &str) -> Result<()> {
        let mut values = 1usize;
        let too_many = |values: usize| Error::Limit {
            limit: LimitKind::Values,
            max: self.max_values,
            actual: values,
        };
        let (mut depth, mut in_str, mut esc, mut str_start) = (0usize, false, false, 0usize);
        for (i, &b) in input.as_bytes().iter().enumerate() {
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                    let len = i - str_start;
                    if len > self.max_string_bytes {
                        return Err(Error::Limit {
                            limit: LimitKind::StringBytes,
                            max: self.max_string_bytes,
                            actual: len,
                        });
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    in_str = true;
                    str_start = i + 1;
                }
                b',' => {
                    values += 1;
                    if values > self.max_values {
                        return Err(too_many(values));
                    }
                }
                b'[' | b'{' => {
                    values += 1;
                    if values > self.max_values {
                        return Err(too_many(values));
                    }
                    depth += 1;
                    if depth > self.max_depth {
                        return Err(Error::Limit {
                            limit: LimitKind::Depth,
                            max: self.max_depth,
                            actual: depth,
                        });
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if in_str && input.len() - str_start > self.max_string_bytes {
            return Err(Error::Limit {
                limit: LimitKind::StringBytes,
                max: self.max_string_bytes,
                actual: input.len() - str_start,
            });
        }
        Ok(())
    }

    /// Checks an already parsed value against the limits: nesting depth, the length of every
    /// string (object keys included), the number of values and the size of its compact JSON
    /// text, without serializing it.
    ///
    /// ```
    /// let limits = e2a::Limits { max_depth: 2, ..e2a::Limits::default() };
    /// assert!(limits.check_value(&serde_json::json!({"a": [1]})).is_ok());
    /// assert!(limits.check_value(&serde_json::json!({"a": [[1]]})).is_err());
    /// ```
    pub fn check_value(&self, value: &serde_json::Value) -> Result<()> {
        let (mut bytes, mut values) = (0usize, 0usize);
        self.walk(value, 0, &mut bytes, &mut values)?;
        if bytes > self.max_bytes {
            return Err(Error::Limit {
                limit: LimitKind::MessageBytes,
                max: self.max_bytes,
                actual: bytes,
            });
        }
        Ok(())
    }

    fn string(&self, s: &str, bytes: &mut usize) -> Result<()> {
        if s.len() > self.max_string_bytes {
            return Err(Error::Limit {
                limit: LimitKind::StringBytes,
                max: self.max_string_bytes,
                actual: s.len(),
            });
        }
        *bytes = bytes.saturating_add(s.len() + 2);
        Ok(())
    }

    fn walk(&self, v: &serde_json::Value, depth: usize, bytes: &mut usize, values: &mut usize) -> Result<()> {
        use serde_json::Value;
        *values += 1;
        if *values > self.max_values {
            return Err(Error::Limit {
                limit: LimitKind::Values,
                max: self.max_values,
                actual: *values,
            });
        }
        let nested = || -> Result<usize> {
            let d = depth + 1;
            if d > self.max_depth {
                return Err(Error::Limit {
                    limit: LimitKind::Depth,
                    max: self.max_depth,
                    actual: d,
                });
            }
            Ok(d)
        };
        match v {
            Value::Null | Value::Bool(_) => *bytes = bytes.saturating_add(5),
            Value::Number(n) => *bytes = bytes.saturating_add(n.to_string().len()),
            Value::String(s) => self.string(s, bytes)?,
            Value::Array(a) => {
                let d = nested()?;
                *bytes = bytes.saturating_add(a.len() + 1);
                for x in a {
                    self.walk(x, d, bytes, values)?;
                }
            }
            Value::Object(m) => {
                let d = nested()?;
                *bytes = bytes.saturating_add(2 * m.len() + 1);
                for (k, x) in m {
                    self.string(k, bytes)?;
                    self.walk(x, d, bytes, values)?;
                }
            }
        }
        if *bytes > self.max_bytes {
            return Err(Error::Limit {
                limit: LimitKind::MessageBytes,
                max: self.max_bytes,
                actual: *bytes,
            });
        }
        Ok(())
    }

    /// Checks limits, then parses JSON text into a value.
    pub fn parse(&self, input: &str) -> Result<serde_json::Value> {
        self.parse_as(input)
    }

    /// Checks limits, then reads JSON text as a `T` (a typed read of a shape known ahead,
    /// without the maps of a [`serde_json::Value`]).
    pub fn parse_as<T: serde::de::DeserializeOwned>(&self, input: &str) -> Result<T> {
        self.check(input)?;
        serde_json::from_str(input).map_err(|e| Error::from_json(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The counting fast path never lets through what the exact scan refuses, on both of
        /// its paths (a text shorter than the value limit, and not).
        #[test]
        fn the_fast_path_accepts_only_what_the_scan_accepts(
            text in "[\\[\\]{},\"\\\\a ]{0,48}",
            max_depth in 0usize..8,
            max_values in 0usize..64,
            max_string_bytes in 0usize..16,
        ) {
            let limits = Limits { max_bytes: usize::MAX, max_depth, max_string_bytes, max_values };
            if limits.within_by_counts(&text) {
                prop_assert!(limits.scan(&text).is_ok(), "{text:?} {limits:?}");
            }
        }
    }
}
