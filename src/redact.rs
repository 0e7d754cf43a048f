//! Secret redaction for everything that is printed or logged.
//!
//! Redacted: `auth.bearer_token`, `auth.api_key_ref`, `auth.credential_ref`, credential
//! headers (`Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`, any
//! `*-token` / `*-key` / `*-secret` header) and, anywhere in a message (`params`, `metadata`,
//! `channel_context`, bodies…), values under common secret names (`token`, `access_token`,
//! `api_key`, `password`, `secret`, `client_secret`, `private_key`, …). `Debug` of every
//! generated type and `Display` of [`E2AEnvelope`] and [`E2AResponse`] print redacted JSON.

use std::fmt;

use serde_json::Value;

use crate::types::{E2AEnvelope, E2AResponse};

/// The text that replaces a secret value.
pub const REDACTED: &str = "[REDACTED]";

/// True when a key (object key or header name) names a secret. Case-insensitive; `-` and `_`
/// are treated alike.
///
/// ```
/// use e2a::redact::is_secret_key;
/// assert!(is_secret_key("Authorization") && is_secret_key("x-api-key") && is_secret_key("refresh_token"));
/// assert!(!is_secret_key("token_count") && !is_secret_key("session_id"));
/// ```
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    const EXACT: [&str; 16] = [
        "authorization",
        "proxy_authorization",
        "cookie",
        "set_cookie",
        "token",
        "password",
        "passwd",
        "secret",
        "bearer_token",
        "api_key_ref",
        "credential_ref",
        "credentials",
        "apikey",
        "private_key",
        "x_auth",
        "session_key",
    ];
    EXACT.contains(&k.as_str())
        || k.ends_with("_token")
        || k.ends_with("_secret")
        || k.ends_with("_password")
        || k.ends_with("api_key")
        || k.ends_with("access_key")
        || k.ends_with("secret_key")
}

/// Replaces, in place, every non-null value under a secret key (at any depth).
///
/// ```
/// let mut v = serde_json::json!({"params": {"q": "hi", "api_key": "sk-1"}, "auth": {"bearer_token": "t"}});
/// e2a::redact::redact_value(&mut v);
/// assert_eq!(v["params"]["api_key"], "[REDACTED]");
/// assert_eq!(v["auth"]["bearer_token"], "[REDACTED]");
/// assert_eq!(v["params"]["q"], "hi");
/// ```
pub fn redact_value(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if is_secret_key(k) && !x.is_null() && !x.is_object() {
                    *x = Value::String(REDACTED.into());
                } else if k == "extra_headers" {
                    if let Value::Object(h) = x {
                        for (name, hv) in h.iter_mut() {
                            if is_secret_key(name) || name.to_ascii_lowercase().contains("key") {
                                *hv = Value::String(REDACTED.into());
                            }
                        }
                    }
                } else {
                    redact_value(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_value),
        _ => {}
    }
}

/// A redacted copy of a JSON value.
pub fn redacted(v: &Value) -> Value {
    let mut v = v.clone();
    redact_value(&mut v);
    v
}

impl E2AEnvelope {
    /// The canonical JSON with secrets redacted (what may be printed or logged).
    pub fn to_redacted_value(&self) -> Value {
        redacted(&self.to_value())
    }
}

impl E2AResponse {
    /// The canonical JSON with secrets redacted (what may be printed or logged).
    pub fn to_redacted_value(&self) -> Value {
        redacted(&self.to_value())
    }
}

/// `Debug` for generated types: the type name and its redacted JSON.
#[doc(hidden)]
pub fn debug_redacted<T: serde::Serialize>(f: &mut fmt::Formatter<'_>, name: &str, value: &T) -> fmt::Result {
    match serde_json::to_value(value) {
        Ok(v) => write!(f, "{name} {}", redacted(&v)),
        Err(_) => write!(f, "{name} {{..}}"),
    }
}

macro_rules! redacted_display {
    ($t:ty) => {
        impl fmt::Display for $t {
            /// Redacted canonical JSON.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.to_redacted_value())
            }
        }
    };
}

redacted_display!(E2AEnvelope);
redacted_display!(E2AResponse);
