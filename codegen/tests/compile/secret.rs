//! Stand-ins for `e2a::secret` (src/secret.rs): the same names, derives and serde shape, so the
//! generated code type-checks exactly as it does inside the `e2a` crate.

use std::fmt;

/// Mirrors `e2a::SecretString`: serialized verbatim, `Debug` prints `[REDACTED]`.
#[derive(Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    /// The secret value itself.
    pub fn expose(&self) -> &str {
        &self.0
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

/// Mirrors `e2a::SecretHeaders`: header name → secret value, serialized as a plain object.
#[derive(Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SecretHeaders(pub std::collections::BTreeMap<String, SecretString>);

impl fmt::Debug for SecretHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|k| (k, "[REDACTED]"))).finish()
    }
}
