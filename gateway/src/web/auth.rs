//! Authentication: bearer tokens, and the callers of a config file (API keys, JWTs) with their
//! allow-lists and rate limits. Tokens are held as [`SecretString`] (never printed), API keys
//! only as SHA-256 digests; both are compared in constant time and never logged or echoed in
//! errors.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use e2a::taxonomy::ErrorKind;
use e2a::types::{CallerClaims, CallerEntry, CallerKind, JwtAlgorithm, JwtSettings};
use e2a::SecretString;
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

mod signed;

use crate::agent::Caller;
use crate::web::hmac;
use crate::web::problem::Problem;
use signed::HMAC_METHOD;

/// The environment variable holding the gateway's own bearer token(s) (`e2a serve`).
pub const TOKEN_ENV: &str = "E2A_TOKEN";

/// The name a caller's allow-list uses for the agent at the root routes.
pub const ROOT_AGENT: &str = "default";

/// Who may call: bearer tokens (callers `token-1`, `token-2`…) and the callers of a config
/// file (`[callers.NAME]`: API keys kept as SHA-256 digests, JWT verification, per-agent
/// allow-lists, rate limits); none of them means no authentication.
///
/// Clones share the credentials: [`Auth::reload_from`] on one (SIGHUP) changes them for all.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    creds: Arc<parking_lot::RwLock<Credentials>>,
    agent: Option<Arc<str>>,
    /// Any valid credential will do, whatever agents its caller may call (`/metrics`).
    any_agent: bool,
    /// What signed requests need besides the credentials (shared by clones).
    signed: Arc<SignedRequests>,
}

/// What checking signed requests (GoAI-HMAC-SHA256) needs: where their nonces are
/// remembered (the store's, once the gateway has one; else this process's memory) and the
/// largest body read to check its digest.
#[derive(Default)]
struct SignedRequests {
    nonces: std::sync::OnceLock<Arc<dyn hmac::Nonces>>,
    in_memory: hmac::SeenNonces,
    max_body: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for SignedRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedRequests")
            .field("nonces_stored", &self.nonces.get().is_some())
            .finish()
    }
}

/// The tokens and callers an [`Auth`] accepts.
#[derive(Debug, Clone, Default)]
struct Credentials {
    tokens: Arc<Vec<SecretString>>,
    callers: Arc<Vec<CallerCheck>>,
}

/// Why tokens cannot be loaded (never contains a token).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token file cannot be read.
    #[error("cannot read token file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file or variable holds no token.
    #[error("{0} holds no token")]
    Empty(String),
}

/// One configured caller: its name, kind, how it proves itself, what it may call (made by
/// [`CallerCheck::api_key`] or [`CallerCheck::jwt`] from a config file's `[callers]`).
pub(crate) struct CallerCheck {
    name: String,
    kind: CallerKind,
    credential: Credential,
    agents: Option<Vec<String>>,
    limiter: Option<Limiter>,
}

impl std::fmt::Debug for CallerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.credential {
            Credential::KeyDigest(_) => "api key",
            Credential::Jwt(_) => "jwt",
            Credential::Hmac { .. } => "goai hmac",
        };
        f.debug_struct("CallerCheck")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("credential", &how)
            .field("agents", &self.agents)
            .finish()
    }
}

enum Credential {
    /// SHA-256 of the API key.
    KeyDigest([u8; 32]),
    Jwt(Box<JwtCheck>),
    /// A GoAI-HMAC-SHA256 key, and how far a signed request's time may be from the clock.
    Hmac {
        key: SecretString,
        window: std::time::Duration,
    },
}

struct JwtCheck {
    /// The keys, by `kid` (`None`: the key of a PEM file or secret, for any `kid`).
    keys: Vec<(Option<String>, jsonwebtoken::DecodingKey)>,
    validation: jsonwebtoken::Validation,
}

/// Rate-limit buckets kept per caller before the full (idle) ones are dropped.
const MAX_BUCKETS: usize = 10_000;

type Limiter = Arc<
    governor::RateLimiter<
        String,
        governor::state::keyed::DefaultKeyedStateStore<String>,
        governor::clock::DefaultClock,
    >,
>;

impl Auth {
    fn of(tokens: Arc<Vec<SecretString>>, callers: Arc<Vec<CallerCheck>>) -> Self {
        Auth {
            creds: Arc::new(parking_lot::RwLock::new(Credentials { tokens, callers })),
            ..Auth::default()
        }
    }

    /// Remembers the nonces of signed requests in `nonces` (a store every gateway of it
    /// shares) instead of this process's memory; the first given wins.
    pub(crate) fn keep_nonces_in(&self, nonces: Arc<dyn hmac::Nonces>) {
        let _ = self.signed.nonces.set(nonces);
    }

    /// Reads at most `max` bytes of a signed request's body to check its digest.
    pub(crate) fn limit_signed_bodies(&self, max: usize) {
        self.signed.max_body.store(max, std::sync::atomic::Ordering::Relaxed);
    }

    /// Takes `other`'s tokens and callers, for this `Auth` and every clone of it (the named
    /// agents' too): what SIGHUP does with a reloaded config file. Requests already admitted
    /// and open streams go on; rate limits start afresh.
    pub fn reload_from(&self, other: &Auth) {
        let fresh = other.creds.read().clone();
        *self.creds.write() = fresh;
    }

    /// No authentication: every request is accepted as [`Caller::anonymous`].
    pub fn none() -> Self {
        Auth::default()
    }

    /// One accepted token.
    pub fn token(token: impl Into<SecretString>) -> Self {
        Auth::of(Arc::new(vec![token.into()]), Arc::default())
    }

    /// Tokens from a file, one per line (blank lines and `#` comments skipped). The caller of
    /// the token on the n-th token line is `token-n`.
    pub fn from_file(path: &Path) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let tokens: Vec<SecretString> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(SecretString::from)
            .collect();
        if tokens.is_empty() {
            return Err(AuthError::Empty(path.display().to_string()));
        }
        Ok(Auth::of(Arc::new(tokens), Arc::default()))
    }

    /// The token in environment variable `var` (`Ok(None)` when it is unset).
    pub fn from_env(var: &str) -> Result<Option<Self>, AuthError> {
        match std::env::var(var) {
            Ok(v) if v.trim().is_empty() => Err(AuthError::Empty(var.to_string())),
            Ok(v) => Ok(Some(Auth::token(v.trim()))),
            Err(_) => Ok(None),
        }
    }

    /// Bearer `tokens` and config `callers`.
    pub(crate) fn with_callers(tokens: Arc<Vec<SecretString>>, callers: Vec<CallerCheck>) -> Self {
        Auth::of(tokens, Arc::new(callers))
    }

    /// The bearer tokens accepted.
    pub(crate) fn tokens(&self) -> Arc<Vec<SecretString>> {
        self.creds.read().tokens.clone()
    }

    /// This authentication for the routes of the named agent `name`: callers not allowed to
    /// call it get `403`, and what its callers create is kept apart from other agents'.
    pub fn for_agent(&self, name: &str) -> Self {
        Auth {
            agent: Some(name.into()),
            ..self.clone()
        }
    }

    /// This authentication for the gateway's own routes (`/metrics`): any caller with a valid
    /// credential, whatever agents it may call.
    pub fn any_caller(&self) -> Self {
        Auth {
            agent: None,
            any_agent: true,
            ..self.clone()
        }
    }

    /// Whether any token or caller is configured.
    pub fn is_enabled(&self) -> bool {
        let creds = self.creds.read();
        !creds.tokens.is_empty() || !creds.callers.is_empty()
    }

    /// Checks the `Authorization` header: the caller, or the problem to answer: `401` (no or
    /// a wrong credential, an expired JWT), `403` (a caller this agent is not allowed to),
    /// `429` with `Retry-After` (over the caller's rate limit).
    pub fn check(&self, headers: &HeaderMap) -> Result<Caller, Problem> {
        let mut caller = self.identify(headers)?;
        caller.scope = self.agent.clone();
        Ok(caller)
    }

    /// Checks a request's credential: [`Auth::check`] for a bearer token; a signed request
    /// (GoAI-HMAC-SHA256, [`crate::web::hmac`]) has its signature, time, nonce and body's
    /// digest checked — its body read here, and given back with the request.
    pub(crate) async fn check_request(&self, request: Request) -> Result<(Caller, Request), Problem> {
        if !hmac::is_signed(request.headers()) {
            let caller = self.check(request.headers())?;
            return Ok((caller, request));
        }
        let (mut caller, request) = self.check_signed(request).await?;
        caller.scope = self.agent.clone();
        Ok((caller, request))
    }

    /// [`Auth::check`] of a caller already identified at the edge, for another agent (A2A's
    /// `tenant`): a signed request is not verified twice (its nonce is spent), its caller's
    /// allow-list is.
    pub(crate) fn rescope(&self, caller: &Caller, headers: &HeaderMap) -> Result<Caller, Problem> {
        let signed = caller.claims.as_ref().filter(|c| c.method == HMAC_METHOD);
        let Some(claims) = signed else {
            return self.check(headers);
        };
        let creds = self.creds.read().clone();
        let check = creds
            .callers
            .iter()
            .find(|c| c.name == claims.caller)
            .ok_or_else(Problem::unauthorized)?;
        self.allows(check)?;
        let mut caller = caller.clone();
        caller.scope = self.agent.clone();
        Ok(caller)
    }

    /// The caller a request's credential proves (see [`Auth::check`]), before its scope.
    fn identify(&self, headers: &HeaderMap) -> Result<Caller, Problem> {
        let creds = self.creds.read().clone();
        if creds.tokens.is_empty() && creds.callers.is_empty() {
            return Ok(Caller::anonymous());
        }
        let presented = bearer(headers).ok_or_else(|| refused("no bearer credential"))?;
        if let Some(i) = token_index(&creds.tokens, presented) {
            return Ok(Caller::named(format!("token-{}", i + 1)));
        }
        if creds.callers.is_empty() {
            return Err(refused("not a token of the gateway's"));
        }
        let (check, caller) = match key_caller(&creds.callers, presented) {
            Some(found) => found,
            None => jwt_caller(&creds.callers, presented).map_err(|why| refused(&why))?,
        };
        self.allows(check)?;
        check.within_rate_limit(&caller)?;
        Ok(caller)
    }

    /// Whether `check`'s caller may call this agent (`403` when it may not): its allow-list
    /// names the agent (or [`ROOT_AGENT`] at the root routes); anything goes for the gateway's
    /// own routes.
    fn allows(&self, check: &CallerCheck) -> Result<(), Problem> {
        if self.any_agent {
            // no agent is called
        } else if let (Some(agent), Some(allowed)) = (&self.agent, &check.agents) {
            if !allowed.iter().any(|a| **a == **agent) {
                tracing::info!(caller = %check.name, agent = %agent, "request refused (403): the caller may not call this agent");
                return Err(Problem::new(
                    ErrorKind::AuthRequired,
                    format!("caller `{}` may not call agent `{agent}`", check.name),
                )
                .with_status(StatusCode::FORBIDDEN));
            }
        } else if let (None, Some(allowed)) = (&self.agent, &check.agents) {
            if !allowed.iter().any(|a| a == ROOT_AGENT) {
                tracing::info!(caller = %check.name, "request refused (403): the caller may not call the root agent");
                return Err(Problem::new(
                    ErrorKind::AuthRequired,
                    format!("caller `{}` may not call the root agent", check.name),
                )
                .with_status(StatusCode::FORBIDDEN));
            }
        }
        Ok(())
    }
}

/// The token of a `Bearer` `Authorization` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
        })
}

/// Which of `tokens` is `presented` (the first that is). Every token is compared, in constant
/// time, so the time does not depend on which one matched.
fn token_index(tokens: &[SecretString], presented: &str) -> Option<usize> {
    let mut found: Option<usize> = None;
    for (i, t) in tokens.iter().enumerate() {
        let eq: Choice = t.expose().as_bytes().ct_eq(presented.as_bytes());
        if bool::from(eq) && found.is_none() {
            found = Some(i);
        }
    }
    found
}

/// The API-key caller whose key `presented` is, and the caller it is: every digest is compared,
/// in constant time.
fn key_caller<'a>(callers: &'a [CallerCheck], presented: &str) -> Option<(&'a CallerCheck, Caller)> {
    let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    let mut by_key: Option<&CallerCheck> = None;
    for c in callers.iter() {
        if let Credential::KeyDigest(d) = &c.credential {
            if bool::from(d.ct_eq(&digest)) && by_key.is_none() {
                by_key = Some(c);
            }
        }
    }
    by_key.map(|c| (c, c.caller("api_key")))
}

/// The claims of a JWT the agent may see (`exp` and the others are checked by the validation).
#[derive(serde::Deserialize)]
struct JwtClaims {
    sub: String,
    iss: Option<String>,
    aud: Option<Value>,
    scope: Option<Value>,
}

/// The JWT caller whose keys verify `token`, and the caller it is.
fn jwt_caller<'a>(callers: &'a [CallerCheck], token: &str) -> Result<(&'a CallerCheck, Caller), String> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| "not an API key of a caller, nor a JWT".to_string())?;
    let mut why = "a JWT no caller's key signed (or of a key id no caller has)".to_string();
    for c in callers.iter() {
        let Credential::Jwt(jwt) = &c.credential else { continue };
        for (kid, key) in &jwt.keys {
            if kid.is_some() && *kid != header.kid {
                continue;
            }
            let data = match jsonwebtoken::decode::<JwtClaims>(token, key, &jwt.validation) {
                Ok(data) => data,
                Err(e) => {
                    // what the validation says (an expired token, a wrong audience…): never the token
                    why = format!("a JWT refused for caller `{}`: {}", c.name, jwt_refusal(&e));
                    continue;
                }
            };
            let JwtClaims { sub, iss, aud, scope } = data.claims;
            let mut caller = Caller::named(format!("{}/{sub}", c.name));
            caller.name = Some(sub.clone());
            caller.kind = Some(c.kind);
            caller.claims = Some(Arc::new(CallerClaims {
                caller: c.name.clone(),
                method: "jwt".into(),
                iss,
                sub: Some(sub),
                aud,
                scope,
            }));
            return Ok((c, caller));
        }
    }
    Err(why)
}

/// Why a JWT was refused, in words (the kinds `jsonwebtoken` tells apart).
fn jwt_refusal(e: &jsonwebtoken::errors::Error) -> &'static str {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "expired",
        K::ImmatureSignature => "not valid yet (nbf)",
        K::InvalidAudience => "wrong audience",
        K::InvalidIssuer => "wrong issuer",
        K::InvalidSubject => "wrong subject",
        K::InvalidSignature => "bad signature",
        K::InvalidAlgorithm => "an algorithm the caller's key does not use",
        K::MissingRequiredClaim(_) => "a required claim is missing",
        _ => "malformed",
    }
}

/// `401`, its reason logged at `info` (never in the body: a client learns only that its
/// credential was not accepted).
fn refused(reason: &str) -> Problem {
    tracing::info!(reason, "request refused (401)");
    Problem::unauthorized()
}

/// Why `name` cannot name a config caller, if it cannot: the identities of bearer tokens
/// (`token-N`) and of JWT subjects (`CALLER/SUB`) are not names a config caller may take, or
/// one caller would read another's tasks.
pub(crate) fn reserved_caller_name(name: &str) -> Option<&'static str> {
    if name.contains('/') {
        return Some("a caller's name may not contain `/`: `NAME/SUB` is the identity of a JWT caller's subject");
    }
    let token_n = name
        .strip_prefix("token-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    token_n.then_some("`token-N` is the identity of the N-th bearer token; choose another name")
}

impl CallerCheck {
    /// The caller this one is when it proved itself by `method` (`CallerClaims.method`) with a
    /// credential of its own (an API key, a signature): its name, kind and claims.
    pub(crate) fn caller(&self, method: &str) -> Caller {
        let mut caller = Caller::named(self.name.clone());
        caller.name = Some(self.name.clone());
        caller.kind = Some(self.kind);
        caller.claims = Some(Arc::new(CallerClaims {
            caller: self.name.clone(),
            method: method.into(),
            iss: None,
            sub: None,
            aud: None,
            scope: None,
        }));
        caller
    }

    /// Whether `caller` is within this caller's rate limit (one bucket per JWT subject): `429`
    /// with `Retry-After` when it is over.
    fn within_rate_limit(&self, caller: &Caller) -> Result<(), Problem> {
        if let Some(limiter) = &self.limiter {
            // one bucket per JWT subject: the full ones are forgotten once there are many
            if limiter.len() > MAX_BUCKETS {
                limiter.retain_recent();
            }
            let key = caller.subject.clone().unwrap_or_default();
            if let Err(not_until) = limiter.check_key(&key) {
                use governor::clock::Clock;
                let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let mut p = Problem::new(
                    ErrorKind::Internal,
                    format!("caller `{}` is over its rate limit; retry later", self.name),
                )
                .with_status(StatusCode::TOO_MANY_REQUESTS);
                p.retry_after = Some(secs.max(1));
                return Err(p);
            }
        }
        Ok(())
    }

    /// A caller proving itself with an API key whose SHA-256 is `digest`.
    pub(crate) fn api_key(name: &str, entry: &CallerEntry, digest: [u8; 32]) -> Self {
        CallerCheck::of(name, entry, Credential::KeyDigest(digest))
    }

    /// A machine caller signing its requests with the GoAI-HMAC-SHA256 `key`; its name is the
    /// `X-GoAI-Agent-Code` it signs as.
    pub(crate) fn hmac(name: &str, entry: &CallerEntry, key: SecretString) -> Self {
        let window = std::time::Duration::from_secs(entry.hmac_window_secs.get());
        CallerCheck::of(name, entry, Credential::Hmac { key, window })
    }

    /// A caller proving itself with JWTs signed by one of `keys` (by `kid`; `None`: any),
    /// checked as `j` says.
    pub(crate) fn jwt(
        name: &str,
        entry: &CallerEntry,
        keys: Vec<(Option<String>, jsonwebtoken::DecodingKey)>,
        j: &JwtSettings,
    ) -> Self {
        let mut validation = jsonwebtoken::Validation::new(jwt_algorithm(j));
        validation.leeway = j.leeway_secs;
        validation.validate_nbf = true;
        // a claim the caller is configured to check must be there: a token without it is refused
        let mut required = vec!["exp", "sub"];
        required.extend(j.issuer.as_ref().map(|_| "iss"));
        required.extend(j.audience.as_ref().map(|_| "aud"));
        validation.set_required_spec_claims(&required);
        match &j.issuer {
            Some(iss) => validation.set_issuer(&[iss]),
            None => validation.iss = None,
        }
        match &j.audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        CallerCheck::of(name, entry, Credential::Jwt(Box::new(JwtCheck { keys, validation })))
    }

    fn of(name: &str, entry: &CallerEntry, credential: Credential) -> Self {
        let limiter = entry.rate_limit.as_ref().map(|r| {
            let period = std::time::Duration::from_secs_f64(1.0 / r.per_second);
            let burst = r
                .burst
                .map(|b| u32::try_from(b.get()).unwrap_or(u32::MAX))
                .unwrap_or_else(|| r.per_second.ceil().clamp(1.0, f64::from(u32::MAX)) as u32);
            let quota = governor::Quota::with_period(period.max(std::time::Duration::from_nanos(1)))
                .unwrap_or_else(|| governor::Quota::per_second(NonZeroU32::MIN))
                .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
            Arc::new(governor::RateLimiter::keyed(quota))
        });
        CallerCheck {
            name: name.to_string(),
            kind: entry.kind,
            credential,
            agents: entry.agents.clone(),
            limiter,
        }
    }
}

/// The signature algorithm of a JWT caller.
pub(crate) fn jwt_algorithm(j: &JwtSettings) -> jsonwebtoken::Algorithm {
    match j.algorithm {
        JwtAlgorithm::Hs256 => jsonwebtoken::Algorithm::HS256,
        JwtAlgorithm::Rs256 => jsonwebtoken::Algorithm::RS256,
        JwtAlgorithm::Es256 => jsonwebtoken::Algorithm::ES256,
    }
}
