//! GoAI-HMAC-SHA256: the machine identity of GoAI's A2A gateways, an agent or gateway signing
//! each request with a key both sides hold (`[callers.NAME] hmac_key_file`).
//!
//! A signed request carries five headers:
//!
//! | header | value |
//! |---|---|
//! | `X-GoAI-Agent-Code` | who signs: the caller's name in `[callers]` |
//! | `X-GoAI-Timestamp` | when, RFC 3339 (`2026-08-08T10:00:00Z`); within `hmac_window_secs` (300) of the gateway's clock, either way |
//! | `X-GoAI-Nonce` | 1–128 printable ASCII characters, never used twice by the agent within the window |
//! | `X-GoAI-Content-SHA256` | the SHA-256 of the body as sent, 64 lowercase hex digits (of the empty string for no body) |
//! | `Authorization` | `GoAI-HMAC-SHA256 Signature=<hex>`: HMAC-SHA256 with the key over the canonical string, 64 lowercase hex digits |
//!
//! The **canonical string** is seven lines joined by `\n` (no trailing newline):
//!
//! ```text
//! GoAI-HMAC-SHA256
//! <METHOD, upper case>
//! <path and query as sent: /a2a/agents/writer/message:send?x=1>
//! <X-GoAI-Agent-Code>
//! <X-GoAI-Timestamp>
//! <X-GoAI-Nonce>
//! <X-GoAI-Content-SHA256>
//! ```
//!
//! ```
//! use e2a_gateway::web::hmac::{content_sha256, signature, Signed};
//! let body = br#"{"message":{}}"#;
//! let digest = content_sha256(body);
//! let signed = Signed {
//!     method: "POST",
//!     path: "/a2a/agents/writer/message:send",
//!     agent_code: "planner",
//!     timestamp: "2026-08-08T10:00:00Z",
//!     nonce: "nonce-001",
//!     content_sha256: &digest,
//! };
//! assert!(signed.canonical().starts_with("GoAI-HMAC-SHA256\nPOST\n/a2a/agents/writer/message:send\nplanner\n"));
//! // (computed apart, with Python's `hmac` and `hashlib`)
//! assert_eq!(digest, "c6c9d69f94a41c0fa07dbf928b22b701d820e97f200fa20fd7008f9729a31e1d");
//! assert_eq!(
//!     signature(b"key", &signed.canonical()),
//!     "5c4203115f47a4f8f0cd4c2405d847cf74c66316339ccb29a6517f2e9b5afb21"
//! );
//! ```
//!
//! A gateway verifies the headers, the timestamp, the signature (in constant time), then the
//! nonce (remembered for the window, in the store when it keeps them: every gateway of a shared
//! PostgreSQL sees it) and the body's digest. Every failure is `401`; its reason goes to the log
//! (never the key), the client is told only that the signature was not accepted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName};
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The `Authorization` scheme.
pub const SCHEME: &str = "GoAI-HMAC-SHA256";
/// Who signs.
pub const AGENT_CODE: HeaderName = HeaderName::from_static("x-goai-agent-code");
/// When.
pub const TIMESTAMP: HeaderName = HeaderName::from_static("x-goai-timestamp");
/// A value never used twice.
pub const NONCE: HeaderName = HeaderName::from_static("x-goai-nonce");
/// The body's SHA-256.
pub const CONTENT_SHA256: HeaderName = HeaderName::from_static("x-goai-content-sha256");

/// Longest nonce accepted.
const MAX_NONCE: usize = 128;

/// What a signature covers (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The path and query, as sent.
    pub path: &'a str,
    /// `X-GoAI-Agent-Code`.
    pub agent_code: &'a str,
    /// `X-GoAI-Timestamp`.
    pub timestamp: &'a str,
    /// `X-GoAI-Nonce`.
    pub nonce: &'a str,
    /// `X-GoAI-Content-SHA256`.
    pub content_sha256: &'a str,
}

impl Signed<'_> {
    /// The canonical string (see the module docs).
    pub fn canonical(&self) -> String {
        [
            SCHEME,
            &self.method.to_ascii_uppercase(),
            self.path,
            self.agent_code,
            self.timestamp,
            self.nonce,
            self.content_sha256,
        ]
        .join("\n")
    }
}

/// HMAC-SHA256 of `canonical` with `key`, as 64 lowercase hex digits.
pub fn signature(key: &[u8], canonical: &str) -> String {
    hex(&mac(key, canonical))
}

fn mac(key: &[u8], canonical: &str) -> [u8; 32] {
    // (HMAC takes a key of any length: the error cannot happen, and would match nothing)
    let Ok(mut m) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        return [0; 32];
    };
    m.update(canonical.as_bytes());
    m.finalize().into_bytes().into()
}

/// The SHA-256 of `body`, as 64 lowercase hex digits (a signed request's
/// `X-GoAI-Content-SHA256`; also what a send's fingerprint is made of).
pub fn content_sha256(body: &[u8]) -> String {
    hex(&Sha256::digest(body))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The headers signing a request of `agent_code` with `key`: `method` to `path` (with its
/// query) carrying `body`, at the current time with a fresh nonce.
pub fn sign(key: &[u8], agent_code: &str, method: &str, path: &str, body: &[u8]) -> Vec<(HeaderName, String)> {
    let timestamp = e2a::timestamp::utc_now_iso();
    let nonce = uuid::Uuid::new_v4().to_string();
    let digest = content_sha256(body);
    let signed = Signed {
        method,
        path,
        agent_code,
        timestamp: &timestamp,
        nonce: &nonce,
        content_sha256: &digest,
    };
    let authorization = format!("{SCHEME} Signature={}", signature(key, &signed.canonical()));
    vec![
        (axum::http::header::AUTHORIZATION, authorization),
        (AGENT_CODE, agent_code.to_string()),
        (TIMESTAMP, timestamp),
        (NONCE, nonce),
        (CONTENT_SHA256, digest),
    ]
}

/// A machine identity requests are signed with: the agent code and its key (never shown).
#[derive(Clone, PartialEq, Eq)]
pub struct Signer {
    /// The `X-GoAI-Agent-Code` signed as.
    pub agent_code: String,
    /// The key.
    pub key: e2a::SecretString,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("agent_code", &self.agent_code).finish()
    }
}

impl Signer {
    /// The headers signing `method` to `url` (its path and query are signed) with `body`.
    pub fn headers(&self, method: &str, url: &str, body: &[u8]) -> Vec<(HeaderName, String)> {
        let path = reqwest::Url::parse(url)
            .map(|u| match u.query() {
                Some(q) => format!("{}?{q}", u.path()),
                None => u.path().to_string(),
            })
            .unwrap_or_else(|_| "/".into());
        sign(self.key.expose().as_bytes(), &self.agent_code, method, &path, body)
    }
}

/// Whether `headers` carry a GoAI-HMAC-SHA256 `Authorization`.
pub(crate) fn is_signed(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
}

/// A signed request's headers, read (not yet verified).
#[derive(Debug)]
pub(crate) struct Presented {
    pub(crate) agent_code: String,
    timestamp: String,
    pub(crate) nonce: String,
    pub(crate) content_sha256: String,
    signature: [u8; 32],
}

/// Why a signed request is refused (for the log; the client is told only `401`).
pub(crate) type Refusal = &'static str;

impl Presented {
    /// The signed headers of a request, each present and well formed.
    pub(crate) fn read(headers: &HeaderMap) -> Result<Self, Refusal> {
        let text = |name: &HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let authorization = text(&axum::http::header::AUTHORIZATION).ok_or("no Authorization")?;
        let (_, params) = authorization.split_once(' ').ok_or("no signature")?;
        let signature = params
            .split(',')
            .filter_map(|p| p.trim().split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("signature"))
            .map(|(_, v)| v.trim())
            .and_then(unhex)
            .ok_or("the Authorization carries no 64-hex-digit Signature")?;
        let agent_code = text(&AGENT_CODE).ok_or("no X-GoAI-Agent-Code")?;
        let timestamp = text(&TIMESTAMP).ok_or("no X-GoAI-Timestamp")?;
        let nonce = text(&NONCE).ok_or("no X-GoAI-Nonce")?;
        if nonce.len() > MAX_NONCE || !nonce.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("X-GoAI-Nonce is not 1-128 printable ASCII characters");
        }
        let content_sha256 = text(&CONTENT_SHA256)
            .filter(|d| unhex(d).is_some())
            .ok_or("X-GoAI-Content-SHA256 is not 64 hex digits")?;
        Ok(Presented {
            agent_code: agent_code.to_string(),
            timestamp: timestamp.to_string(),
            nonce: nonce.to_string(),
            content_sha256: content_sha256.to_ascii_lowercase(),
            signature,
        })
    }

    /// Checks the timestamp (within `window_ms` of `now_ms`) and the signature of `method`
    /// to `path` with `key`, in constant time.
    pub(crate) fn verify(
        &self,
        key: &[u8],
        method: &str,
        path: &str,
        now_ms: i64,
        window_ms: i64,
    ) -> Result<(), Refusal> {
        let at = e2a::timestamp::parse_rfc3339_ms(&self.timestamp).ok_or("X-GoAI-Timestamp is not RFC 3339")?;
        if at.abs_diff(now_ms) > window_ms.unsigned_abs() {
            return Err("X-GoAI-Timestamp is outside the window");
        }
        let signed = Signed {
            method,
            path,
            agent_code: &self.agent_code,
            timestamp: &self.timestamp,
            nonce: &self.nonce,
            content_sha256: &self.content_sha256,
        };
        match bool::from(mac(key, &signed.canonical()).ct_eq(&self.signature)) {
            true => Ok(()),
            false => Err("the signature does not match"),
        }
    }
}

/// Checks that `body` is what `X-GoAI-Content-SHA256` said.
pub(crate) fn body_matches(presented: &Presented, body: &[u8]) -> bool {
    let digest: [u8; 32] = Sha256::digest(body).into();
    unhex(&presented.content_sha256).is_some_and(|d| bool::from(d.ct_eq(&digest)))
}

/// 64 hex digits (a SHA-256) as 32 bytes.
pub(crate) fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Why a nonce could not be checked (the store failed; never holds the nonce's request).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NonceError(pub String);

/// What [`Nonces::remember_nonce`] returns.
pub type NonceFuture<'a> = BoxFuture<'a, Result<bool, NonceError>>;

/// Where the nonces of signed requests are remembered, each for its window: a nonce seen
/// again within it is a replay. A store keeps them for every gateway sharing it
/// ([`crate::store::Stores::nonces`]); without one, [`SeenNonces`] in this process's memory.
pub trait Nonces: Send + Sync + 'static {
    /// Remembers `nonce` of `agent` for `ttl` from now, unless it is remembered already;
    /// whether it was new (atomically across the gateways sharing the store). Nonces past
    /// their time are forgotten.
    fn remember_nonce<'a>(&'a self, agent: &'a str, nonce: &'a str, ttl: Duration) -> NonceFuture<'a>;
}

/// Nonces in this process's memory, each until its time is up. Only requests whose
/// signature was verified reach it, so what it keeps is bounded by the callers' rates.
#[derive(Debug, Default)]
pub struct SeenNonces {
    seen: parking_lot::Mutex<Seen>,
}

/// Until when each nonce (by agent) is remembered, and when the expired ones last went.
#[derive(Debug, Default)]
struct Seen {
    until: HashMap<(String, String), Instant>,
    swept: Option<Instant>,
}

impl SeenNonces {
    /// [`Nonces::remember_nonce`], at once.
    pub fn remember(&self, agent: &str, nonce: &str, ttl: Duration) -> bool {
        let now = Instant::now();
        let mut seen = self.seen.lock();
        let Seen { until, swept } = &mut *seen;
        // the expired ones go once a second at most
        if swept.is_none_or(|at| now.duration_since(at) > Duration::from_secs(1)) {
            until.retain(|_, u| *u > now);
            *swept = Some(now);
        }
        let key = (agent.to_string(), nonce.to_string());
        match until.get(&key) {
            Some(u) if *u > now => false,
            _ => {
                until.insert(key, now + ttl);
                true
            }
        }
    }
}

impl Nonces for SeenNonces {
    fn remember_nonce<'a>(&'a self, agent: &'a str, nonce: &'a str, ttl: Duration) -> NonceFuture<'a> {
        let fresh = self.remember(agent, nonce, ttl);
        Box::pin(async move { Ok(fresh) })
    }
}
