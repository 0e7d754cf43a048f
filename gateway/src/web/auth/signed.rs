//! Signed requests (GoAI-HMAC-SHA256, [`crate::web::hmac`]): the caller a signature proves,
//! checked whole — signature, time, nonce, the body's digest.

use axum::extract::Request;
use axum::http::StatusCode;
use e2a::taxonomy::ErrorKind;

use super::{Auth, Credential};
use crate::agent::Caller;
use crate::web::hmac;
use crate::web::problem::Problem;

impl Auth {
    /// The caller a signed request proves (see [`Auth::check_request`]), before its scope.
    pub(super) async fn check_signed(&self, request: Request) -> Result<(Caller, Request), Problem> {
        let presented = hmac::Presented::read(request.headers()).map_err(|why| refused("", why))?;
        let agent = presented.agent_code.clone();
        let creds = self.creds.read().clone();
        let found = creds.callers.iter().find_map(|c| match &c.credential {
            Credential::Hmac { key, window } if c.name == agent => Some((c, key, *window)),
            _ => None,
        });
        let Some((check, key, window)) = found else {
            return Err(refused(&agent, "no caller of this agent code has an HMAC key"));
        };
        let uri = request
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map_or_else(|| request.uri().clone(), |u| u.0.clone());
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let window_ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        presented
            .verify(
                key.expose().as_bytes(),
                request.method().as_str(),
                path,
                e2a::timestamp::now_ms(),
                window_ms,
            )
            .map_err(|why| refused(&agent, why))?;
        self.allows(check)?;
        let caller = check.caller(HMAC_METHOD);
        check.within_rate_limit(&caller)?;
        // a time up to the window ahead is good for twice the window: its nonce is kept as long
        let ttl = window.saturating_mul(2);
        let fresh = match self.signed.nonces.get() {
            Some(store) => store.remember_nonce(&agent, &presented.nonce, ttl).await,
            None => Ok(self.signed.in_memory.remember(&agent, &presented.nonce, ttl)),
        };
        match fresh {
            Ok(true) => {}
            Ok(false) => return Err(refused(&agent, "the nonce was used before")),
            Err(e) => {
                tracing::error!(error = %e, "cannot remember a signed request's nonce");
                return Err(Problem::unavailable("the gateway cannot check this request now", 1));
            }
        }
        let (parts, body) = request.into_parts();
        let max = match self.signed.max_body.load(std::sync::atomic::Ordering::Relaxed) {
            0 => e2a::Limits::default().max_bytes,
            n => n,
        };
        let bytes = axum::body::to_bytes(body, max).await.map_err(|_| {
            Problem::new(
                ErrorKind::InvalidRequest,
                format!("a signed request's body must be at most {max} bytes, read whole"),
            )
            .with_status(StatusCode::PAYLOAD_TOO_LARGE)
        })?;
        if !hmac::body_matches(&presented, &bytes) {
            return Err(refused(&agent, "the body does not match X-GoAI-Content-SHA256"));
        }
        Ok((caller, Request::from_parts(parts, axum::body::Body::from(bytes))))
    }
}

/// How a signed request's caller proved itself (`CallerClaims.method`).
pub(super) const HMAC_METHOD: &str = "goai_hmac_sha256";

/// `401` for a signed request, its reason logged (never the key; the client is told only that
/// the signature was not accepted).
fn refused(agent_code: &str, why: &str) -> Problem {
    tracing::info!(agent_code, reason = why, "a signed request was refused");
    let mut p = Problem::new(
        ErrorKind::AuthRequired,
        "the GoAI-HMAC-SHA256 signature was not accepted",
    );
    p.authenticate = true;
    p
}
