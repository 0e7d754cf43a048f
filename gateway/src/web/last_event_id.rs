//! `Last-Event-ID`, read one way for every binding: absent is no resume; present, it is an
//! event id this gateway sent, a sequence number (digits, as `generated/openapi.json` declares
//! it; an SSE client never sends it empty, so an empty one is refused too).

use axum::http::{HeaderMap, HeaderName};

/// The header's name.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("last-event-id");

/// The header is not a sequence number (digits within `u64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotASequence;

impl NotASequence {
    /// What a client is told.
    pub(crate) const MESSAGE: &'static str = "Last-Event-ID must be an event id this gateway sent (a sequence number)";
}

/// The sequence number a client resumes after, if any.
pub(crate) fn read(headers: &HeaderMap) -> Result<Option<u64>, NotASequence> {
    let Some(v) = headers.get(&HEADER) else {
        return Ok(None);
    };
    let s = v.to_str().map_err(|_| NotASequence)?.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NotASequence);
    }
    s.parse().map(Some).map_err(|_| NotASequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(HEADER, v.parse().unwrap());
            read(&m)
        };
        assert_eq!(read(&HeaderMap::new()), Ok(None));
        assert_eq!(h(" 7 "), Ok(Some(7)));
        assert_eq!(h("0"), Ok(Some(0)));
        for bad in ["", " ", "-1", "1.5", "x", "99999999999999999999999"] {
            assert_eq!(h(bad), Err(NotASequence), "{bad}");
        }
    }
}
