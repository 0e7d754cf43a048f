//! The callers of a config file (`[callers]`) and the gateway's bearer tokens, read into an
//! [`Auth`]: every secret read from the files and variables the file names, every key checked,
//! errors naming the file, line and key. (The checks themselves are `web::auth`'s.)

use std::sync::Arc;

use e2a::types::{CallerEntry, JwtSettings};
use sha2::{Digest, Sha256};

use super::{pointer_key, ConfigError, ConfigFile};
use crate::web::auth::{jwt_algorithm, reserved_caller_name, Auth, CallerCheck, TOKEN_ENV};

impl Auth {
    /// The callers of a config file (`[callers]`), with the bearer tokens of its
    /// `server.token_file` (else `$E2A_TOKEN`): every secret read from the files and variables
    /// the file names, every key checked. Errors name the file, line and key.
    pub fn from_config(file: &ConfigFile) -> Result<Self, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let server = &file.settings.server;
        let tokens = match &server.token_file {
            Some(f) => match Auth::from_file(&file.path(f)) {
                Ok(a) => a.tokens(),
                Err(e) => {
                    errors.push(file.error("/server/token_file", e.to_string()));
                    Arc::default()
                }
            },
            None => match Auth::from_env(TOKEN_ENV) {
                Ok(a) => a.map(|a| a.tokens()).unwrap_or_default(),
                Err(e) => {
                    errors.push(file.error("", e.to_string()));
                    Arc::default()
                }
            },
        };
        let mut callers = Vec::new();
        for (name, entry) in &file.settings.callers {
            match caller_check(file, name, entry) {
                Ok(c) => callers.push(c),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Auth::with_callers(tokens, callers))
        } else {
            Err(errors)
        }
    }
}

/// The check of caller `name`, its secrets read.
fn caller_check(file: &ConfigFile, name: &str, entry: &CallerEntry) -> Result<CallerCheck, ConfigError> {
    let at = |k: &str| format!("/callers/{}{k}", pointer_key(name));
    if let Some(why) = reserved_caller_name(name) {
        return Err(file.error(&at(""), why));
    }
    if let Some(hex) = &entry.api_key_sha256 {
        let d =
            crate::web::hmac::unhex(hex).ok_or_else(|| file.error(&at("/api_key_sha256"), "expected 64 hex digits"))?;
        return Ok(CallerCheck::api_key(name, entry, d));
    }
    if let Some(j) = &entry.jwt {
        return Ok(CallerCheck::jwt(name, entry, jwt_keys(file, &at("/jwt"), j)?, j));
    }
    if entry.hmac_key_file.is_some() || entry.hmac_key_env.is_some() {
        let pointer = at(match entry.hmac_key_file {
            Some(_) => "/hmac_key_file",
            None => "/hmac_key_env",
        });
        let key = file
            .secret(&pointer, entry.hmac_key_file.as_deref(), entry.hmac_key_env.as_deref())?
            .ok_or_else(|| file.error(&pointer, "no key"))?;
        return Ok(CallerCheck::hmac(name, entry, key));
    }
    let key = file
        .secret(
            &at(if entry.api_key_file.is_some() {
                "/api_key_file"
            } else {
                "/api_key_env"
            }),
            entry.api_key_file.as_deref(),
            entry.api_key_env.as_deref(),
        )?
        .ok_or_else(|| file.error(&at(""), "no credential"))?;
    Ok(CallerCheck::api_key(
        name,
        entry,
        Sha256::digest(key.expose().as_bytes()).into(),
    ))
}

/// The keys of a JWT caller (by `kid`; `None`: any), read from the files `j` names.
fn jwt_keys(
    file: &ConfigFile,
    at: &str,
    j: &JwtSettings,
) -> Result<Vec<(Option<String>, jsonwebtoken::DecodingKey)>, ConfigError> {
    use jsonwebtoken::{Algorithm, DecodingKey};
    let read = |key: &str, f: &str| {
        let path = file.path(f);
        std::fs::read(&path)
            .map_err(|e| file.error(&format!("{at}/{key}"), format!("cannot read {}: {e}", path.display())))
    };
    let bad =
        |key: &str, e: &dyn std::fmt::Display| file.error(&format!("{at}/{key}"), format!("not a usable key: {e}"));
    let mut keys = Vec::new();
    if let Some(f) = &j.secret_file {
        let secret = file
            .secret(&format!("{at}/secret_file"), Some(f), None)?
            .ok_or_else(|| file.error(&format!("{at}/secret_file"), "empty"))?;
        keys.push((None, DecodingKey::from_secret(secret.expose().as_bytes())));
    }
    if let Some(f) = &j.public_key_file {
        let pem = read("public_key_file", f)?;
        let key = match jwt_algorithm(j) {
            Algorithm::ES256 => DecodingKey::from_ec_pem(&pem),
            _ => DecodingKey::from_rsa_pem(&pem),
        }
        .map_err(|e| bad("public_key_file", &e))?;
        keys.push((None, key));
    }
    if let Some(f) = &j.jwks_file {
        let text = read("jwks_file", f)?;
        let set: jsonwebtoken::jwk::JwkSet = serde_json::from_slice(&text).map_err(|e| bad("jwks_file", &e))?;
        for jwk in &set.keys {
            let key = DecodingKey::from_jwk(jwk).map_err(|e| bad("jwks_file", &e))?;
            keys.push((jwk.common.key_id.clone(), key));
        }
        if keys.is_empty() {
            return Err(file.error(&format!("{at}/jwks_file"), "holds no key"));
        }
    }
    Ok(keys)
}
