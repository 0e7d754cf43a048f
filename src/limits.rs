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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 << 20,
            max_depth: 64,
            max_string_bytes: 8 << 20,
        }
    }
}

impl Limits {
    /// No limits at all (trusted input only).
    pub const UNLIMITED: Limits = Limits {
        max_bytes: usize::MAX,
        max_depth: usize::MAX,
        max_string_bytes: usize::MAX,
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
        // Fast path: with no more openers than the depth limit and a message no longer than the
        // string limit, neither limit can be exceeded (a vectorizable count, no state machine).
        let openers: usize = input
            .as_bytes()
            .chunks(255)
            .map(|c| c.iter().map(|&b| u8::from(b == b'[' || b == b'{')).sum::<u8>() as usize)
            .sum();
        if openers <= self.max_depth && input.len() <= self.max_string_bytes {
            return Ok(());
        }
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
                b'[' | b'{' => {
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

    /// Checks limits, then parses JSON text into a value.
    pub fn parse(&self, input: &str) -> Result<serde_json::Value> {
        self.check(input)?;
        serde_json::from_str(input).map_err(|e| Error::from_json(&e))
    }
}
