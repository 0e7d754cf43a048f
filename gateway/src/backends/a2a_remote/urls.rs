//! URLs as the remote agent's backend reads and names them: the origin a credential belongs
//! to, a URL named without its secrets, an HTTP client error in plain words.

/// `scheme://host[:port]` of an http(s) URL, lower-cased.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let default_port = if scheme == "http" { ":80" } else { ":443" };
    let authority = authority.strip_suffix(default_port).unwrap_or(&authority).to_string();
    Some(format!("{scheme}://{authority}"))
}

/// `url` as an error names it: scheme, host, port and path (no credentials, query or fragment,
/// which may hold a secret).
pub(super) fn named(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                u.scheme(),
                u.host_str().unwrap_or_default(),
                u.path()
            )
        }
        Err(_) => "(an unreadable URL)".into(),
    }
}

/// An HTTP client error in plain words: what went wrong at the bottom of its causes (the
/// connection refused, reset or closed early), without the URL (errors name it themselves).
pub(super) fn plain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        words = c.to_string();
        cause = c.source();
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::A2aRemoteConfig;
    use e2a::SecretString;

    #[test]
    fn an_error_names_a_url_without_its_secrets() {
        assert_eq!(
            named("https://u:pw@agents.example:8443/a2a?key=s3cret#x"),
            "https://agents.example:8443/a2a"
        );
        assert_eq!(
            named("http://127.0.0.1/.well-known/agent-card.json"),
            "http://127.0.0.1/.well-known/agent-card.json"
        );
    }

    #[test]
    fn origins() {
        assert_eq!(origin("http://127.0.0.1:80/a"), Some("http://127.0.0.1".into()));
        assert_eq!(
            origin("HTTPS://Example.com:8443/x?y"),
            Some("https://example.com:8443".into())
        );
        assert_eq!(origin("ftp://x"), None);
        assert_eq!(origin("http://user@evil"), None);
        let c = A2aRemoteConfig::new("http://a").with_token("http://a/x", SecretString::new("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
