//! [`SecretString`]: a string that is sent on the wire but never printed.

use std::fmt;

/// A secret string (bearer token, API key reference, credential header value).
///
/// It serializes to (and deserializes from) the plain JSON string, so messages are unchanged
/// on the wire, but `Debug` and `Display` print `[REDACTED]`. Use [`SecretString::expose`]
/// where the value is really needed.
///
/// ```
/// let s = e2a::SecretString::from("tok-123");
/// assert_eq!(format!("{s:?} {s}"), "[REDACTED] [REDACTED]");
/// assert_eq!(s.expose(), "tok-123");
/// assert_eq!(serde_json::to_string(&s).unwrap(), "\"tok-123\"");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The secret value itself. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for SecretString {
    fn from(v: String) -> Self {
        Self(v)
    }
}

impl From<&str> for SecretString {
    fn from(v: &str) -> Self {
        Self(v.to_string())
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// HTTP header name → secret value (`E2AAuth.extra_headers`). Serialized as a plain JSON
/// object of strings; `Debug` shows the header names only.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SecretHeaders(pub std::collections::BTreeMap<String, SecretString>);

impl fmt::Debug for SecretHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|k| (k, "[REDACTED]"))).finish()
    }
}
