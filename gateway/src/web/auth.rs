//! Bearer-token authentication. Tokens are held as [`SecretString`] (never printed), compared
//! in constant time, and never logged or echoed in errors.

use std::path::Path;

use axum::http::{header, HeaderMap};
use e2a::SecretString;
use subtle::{Choice, ConstantTimeEq};

use crate::agent::Caller;
use crate::web::problem::Problem;

/// The accepted bearer tokens; empty means no authentication.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    tokens: Vec<SecretString>,
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

impl Auth {
    /// No authentication: every request is accepted as [`Caller::anonymous`].
    pub fn none() -> Self {
        Auth::default()
    }

    /// One accepted token.
    pub fn token(token: impl Into<SecretString>) -> Self {
        Auth {
            tokens: vec![token.into()],
        }
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
        Ok(Auth { tokens })
    }

    /// The token in environment variable `var` (`Ok(None)` when it is unset).
    pub fn from_env(var: &str) -> Result<Option<Self>, AuthError> {
        match std::env::var(var) {
            Ok(v) if v.trim().is_empty() => Err(AuthError::Empty(var.to_string())),
            Ok(v) => Ok(Some(Auth::token(v.trim()))),
            Err(_) => Ok(None),
        }
    }

    /// Whether any token is configured.
    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Checks the `Authorization` header: the caller, or a `401` problem.
    pub fn check(&self, headers: &HeaderMap) -> Result<Caller, Problem> {
        if self.tokens.is_empty() {
            return Ok(Caller::anonymous());
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
            })
            .ok_or_else(Problem::unauthorized)?;
        // every token is compared, so the time does not depend on which one matched
        let mut found: Option<usize> = None;
        for (i, t) in self.tokens.iter().enumerate() {
            let eq: Choice = t.expose().as_bytes().ct_eq(presented.as_bytes());
            if bool::from(eq) && found.is_none() {
                found = Some(i);
            }
        }
        found
            .map(|i| Caller::named(format!("token-{}", i + 1)))
            .ok_or_else(Problem::unauthorized)
    }
}

/// The authentication of every binding, as a route layer on `router`: a request with a valid
/// token (or any request, without authentication) goes on with its [`Caller`] in the
/// request's extensions; any other is answered `401` (problem+json with `WWW-Authenticate`).
/// Around it, the trace context layer ([`crate::web::trace`]) echoes `X-Trace-ID`.
pub(crate) fn require<S>(router: axum::Router<S>, auth: &Auth) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router
        .route_layer(axum::middleware::from_fn_with_state(auth.clone(), authenticate))
        .route_layer(axum::middleware::from_fn(crate::web::trace::layer))
}

async fn authenticate(
    axum::extract::State(auth): axum::extract::State<Auth>,
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match auth.check(req.headers()) {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(p) => p.into_response(),
    }
}
