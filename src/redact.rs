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

/// Token-shaped text, wherever it appears in a string: an `Authorization` scheme with its
/// credentials (`Bearer …`, `Basic …`), API keys by their well-known prefixes (`sk-…`,
/// `ghp_…` and GitHub's other token kinds, `github_pat_…`, Slack `xox?-…`, AWS `AKIA…`,
/// Google `AIza…`) and JWTs (`eyJ….eyJ….…`).
fn token_pattern() -> &'static regex::Regex {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| {
        regex::Regex::new(concat!(
            r"(?i:\b(bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}",
            r"|\bsk-[A-Za-z0-9_-]{16,}",
            r"|\bgh[pousr]_[A-Za-z0-9]{20,}",
            r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
            r"|\bAKIA[0-9A-Z]{16}\b",
            r"|\bAIza[0-9A-Za-z_-]{35}",
            r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        ))
        .expect("the token pattern is a valid regex")
    })
}

/// `text` with every token-shaped part replaced by [`REDACTED`] (an `Authorization` scheme
/// keeps its name); `None` when there is none.
///
/// ```
/// use e2a::redact::redact_tokens;
/// assert_eq!(redact_tokens("use Bearer abcdefgh12345678 now").as_deref(), Some("use Bearer [REDACTED] now"));
/// assert_eq!(redact_tokens("key sk-proj-0123456789abcdefXYZ").as_deref(), Some("key [REDACTED]"));
/// assert_eq!(redact_tokens("a task-0123456789abcdefghij and skeleton keys"), None);
/// ```
pub fn redact_tokens(text: &str) -> Option<String> {
    let pattern = token_pattern();
    if !pattern.is_match(text) {
        return None;
    }
    Some(
        pattern
            .replace_all(text, |c: &regex::Captures<'_>| match c.get(1) {
                Some(scheme) => format!("{} {REDACTED}", scheme.as_str()),
                None => REDACTED.to_string(),
            })
            .into_owned(),
    )
}

/// What a gateway sends an editor or a client: [`redact_value`], and token-shaped text
/// ([`redact_tokens`]) in every string, object keys excepted.
///
/// ```
/// let mut v = serde_json::json!({"update": {"content": {"text": "your key: ghp_0123456789abcdefghijABCD"}}, "api_key": "k"});
/// e2a::redact::redact_outbound(&mut v);
/// assert_eq!(v, serde_json::json!({"update": {"content": {"text": "your key: [REDACTED]"}}, "api_key": "[REDACTED]"}));
/// ```
pub fn redact_outbound(v: &mut Value) {
    redact_value(v);
    redact_strings(v);
}

fn redact_strings(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(clean) = redact_tokens(s) {
                *s = clean;
            }
        }
        Value::Object(m) => m.values_mut().for_each(redact_strings),
        Value::Array(a) => a.iter_mut().for_each(redact_strings),
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
