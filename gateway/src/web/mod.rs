//! HTTP plumbing written once for every binding: authentication ([`auth`]), trace context
//! ([`trace`]), metrics ([`metrics`]), problem documents ([`problem`]), the JSON body reader
//! (one media-type rule, the input limits), SSE and streamed responses, `Last-Event-ID`,
//! `Idempotency-Key`, and the server loop ([`server`]: TCP_NODELAY, header-read timeout,
//! connection cap, shutdown with a deadline), and the one layer every binding's routes run under
//! (`edge`).

pub(crate) mod activity;
pub mod auth;
pub(crate) mod body;
pub(crate) mod connections;
pub(crate) mod edge;
pub mod hmac;
pub(crate) mod last_event_id;
pub mod metrics;
pub mod problem;
pub mod server;
pub(crate) mod sse;
pub mod trace;

/// The `Idempotency-Key` header's name.
const IDEMPOTENCY_KEY: axum::http::HeaderName = axum::http::HeaderName::from_static("idempotency-key");

/// The `Idempotency-Key` header, trimmed, when the request has a usable (non-empty) one.
pub(crate) fn idempotency_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(&IDEMPOTENCY_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// Whether `host` (a name, or an IP literal, bracketed or not) is this machine: `localhost`, a
/// name under `.localhost` (RFC 6761), or a loopback address (`127.0.0.0/8`, `::1`). One rule
/// for a token sent in clear, a webhook target and where callers see error details.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host.to_ascii_lowercase().ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn loopback_hosts_are_names_of_this_machine_and_loopback_addresses() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "example.com",
            "localhost.example.com",
            "10.0.0.1",
            "[::2]",
            "0.0.0.0",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
