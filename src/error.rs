//! The crate's error type. Every error names the offending field by JSON pointer and says why;
//! no error message ever contains a field's value (so secrets cannot leak through errors).

use std::fmt;

/// One problem found in a message: where (JSON pointer) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the offending value (`""` for the whole message).
    pub pointer: String,
    /// What is wrong, without the value itself.
    pub reason: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = if self.pointer.is_empty() { "/" } else { &self.pointer };
        write!(f, "{p}: {}", self.reason)
    }
}

/// Which input limit was exceeded (see [`crate::Limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// `Limits::max_bytes`: size of the whole message.
    MessageBytes,
    /// `Limits::max_depth`: nesting of arrays and objects.
    Depth,
    /// `Limits::max_string_bytes`: length of one string.
    StringBytes,
    /// `Limits::max_values`: number of values (array elements, object members).
    Values,
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitKind::MessageBytes => "max_bytes",
            LimitKind::Depth => "max_depth",
            LimitKind::StringBytes => "max_string_bytes",
            LimitKind::Values => "max_values",
        })
    }
}

/// Errors of the e2a SDK.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A field has the wrong JSON type or an invalid value.
    #[error("{0}")]
    Field(Violation),
    /// The input is not valid JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser found (never the input text).
        message: String,
    },
    /// The input exceeds a configured limit.
    #[error("input exceeds {limit}: {actual} > {max}")]
    Limit {
        /// Which limit.
        limit: LimitKind,
        /// The configured maximum.
        max: usize,
        /// What the input had (at least).
        actual: usize,
    },
    /// Strict reading: the message does not validate against the schema. Lists every violation.
    #[error("{} schema violation(s): {}", .0.len(), .0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; "))]
    Schema(Vec<Violation>),
    /// The message is well-formed but this operation does not support it
    /// (e.g. converting an `e2a.chunk` to a legacy unary `AgentResponse`).
    #[error("{0}")]
    Unsupported(String),
}

impl Error {
    /// A field error at `pointer` with `reason`.
    pub fn field(pointer: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Field(Violation {
            pointer: pointer.into(),
            reason: reason.into(),
        })
    }

    /// The violations carried by this error (one for [`Error::Field`], all for
    /// [`Error::Schema`], none otherwise).
    pub fn violations(&self) -> Vec<Violation> {
        match self {
            Error::Field(v) => vec![v.clone()],
            Error::Schema(v) => v.clone(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn from_json(e: &serde_json::Error) -> Self {
        // serde_json's syntax messages never quote the input; strip its own position suffix.
        let msg = e.to_string();
        let message = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        Error::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
