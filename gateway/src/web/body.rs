//! The JSON body of a request, read the same way for every binding: one media-type rule, the
//! gateway's input limits (bytes while reading; nesting depth and string length when parsed)
//! and UTF-8 — before any binding looks at it.

use std::future::Future as _;

use axum::body::Body;
use axum::http::{header, HeaderMap};
use e2a::{LimitKind, Limits};

use serde_json::Value;

/// Why a body was refused; each binding answers it in its protocol's error form.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// A body that is not declared JSON: a non-empty body needs a `Content-Type` of
    /// `application/json` or `application/*+json`.
    MediaType,
    /// Past a limit, not UTF-8 or not JSON (a [`e2a::Error::Limit`] or [`e2a::Error::Json`]).
    Input(e2a::Error),
    /// The body did not arrive within the time allowed (a client sending it slowly).
    Timeout(std::time::Duration),
}

/// A request body: UTF-8 text within `max_bytes`, declared JSON when not empty.
#[derive(Debug)]
pub(crate) struct JsonBody {
    text: String,
    limits: Limits,
}

impl JsonBody {
    /// The text, for the e2a readers (which apply the same limits while reading).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether the body is empty (whitespace only).
    pub(crate) fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// The body parsed, within every limit.
    pub(crate) fn value(&self) -> Result<Value, BodyError> {
        self.parse_as()
    }

    /// The body read as a `T`, within every limit.
    pub(crate) fn parse_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, BodyError> {
        self.limits.parse_as(&self.text).map_err(BodyError::Input)
    }
}

/// Whether a `Content-Type` value declares JSON (`application/json`, `application/*+json`,
/// parameters allowed).
pub(crate) fn is_json(content_type: &str) -> bool {
    content_type
        .parse::<mime::Mime>()
        .is_ok_and(|m| m.type_() == mime::APPLICATION && (m.subtype() == mime::JSON || m.suffix() == Some(mime::JSON)))
}

/// What a request body may be: its input limits, and how long reading it may take
/// (`GatewayConfig::body`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    /// Bytes, depth, string length and values of the JSON.
    pub limits: e2a::Limits,
    /// Longest time to read the whole body.
    pub timeout: std::time::Duration,
}

/// Reads a request body within `within`.
pub(crate) async fn read(headers: &HeaderMap, body: Body, within: BodyLimits) -> Result<JsonBody, BodyError> {
    let BodyLimits { limits, timeout } = within;
    let declared = headers.get(header::CONTENT_TYPE).map(|v| v.to_str().is_ok_and(is_json));
    if declared == Some(false) {
        return Err(BodyError::MediaType);
    }
    let bytes = tokio::time::timeout(timeout, axum::body::to_bytes(body, limits.max_bytes))
        .await
        .map_err(|_| BodyError::Timeout(timeout))?
        .map_err(|_| {
            BodyError::Input(e2a::Error::Limit {
                limit: LimitKind::MessageBytes,
                max: limits.max_bytes,
                actual: limits.max_bytes.saturating_add(1),
            })
        })?;
    // the body's buffer becomes the text, not a copy of it (`to_bytes` collected one piece)
    let text = String::from_utf8(Vec::from(bytes)).map_err(|e| {
        BodyError::Input(e2a::Error::Json {
            line: 1,
            column: e.utf8_error().valid_up_to().saturating_add(1),
            message: "the body is not UTF-8".into(),
        })
    })?;
    let body = JsonBody { text, limits };
    if declared.is_none() && !body.is_empty() {
        return Err(BodyError::MediaType);
    }
    Ok(body)
}

/// Frames of a body as they are polled: what a wrapper of a body looks at (one [`Observed`]
/// wrapper serves every kind).
pub(crate) trait Observer: Send + Unpin + 'static {
    /// Sees `polled`, what the body gave, and answers in its place.
    fn observe(&mut self, polled: Polled, cx: &mut std::task::Context<'_>) -> Polled {
        let _ = cx;
        polled
    }
}

/// What polling a body gives.
pub(crate) type Polled = std::task::Poll<Option<Result<http_body::Frame<axum::body::Bytes>, axum::Error>>>;

/// A body, its frames seen by an [`Observer`] (which lives as long as the body).
pub(crate) struct Observed<H> {
    inner: Body,
    observer: H,
}

impl<H: Observer> Observed<H> {
    /// `inner`, seen by `observer`.
    pub(crate) fn new(inner: Body, observer: H) -> Self {
        Observed { inner, observer }
    }
}

impl<H: Observer> http_body::Body for Observed<H> {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Polled {
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        this.observer.observe(polled, cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request body must end within a time from its request's start: past it, reading it fails
/// (gRPC's message, which the JSON bindings' [`read`] bounds with its own timeout).
pub(crate) struct Deadline {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    within: std::time::Duration,
}

impl Deadline {
    /// `inner`, to end within `within` from now.
    pub(crate) fn body(inner: Body, within: std::time::Duration) -> Observed<Deadline> {
        let sleep = Box::pin(tokio::time::sleep(within));
        Observed::new(inner, Deadline { sleep, within })
    }
}

impl Observer for Deadline {
    fn observe(&mut self, polled: Polled, cx: &mut std::task::Context<'_>) -> Polled {
        use std::task::Poll;
        match polled {
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(format!(
                    "the request body did not arrive within {} s",
                    self.within.as_secs_f32()
                ))))),
                Poll::Pending => Poll::Pending,
            },
            ready => ready,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn json_media_types() {
        for yes in [
            "application/json",
            "application/json; charset=utf-8",
            "application/a2a+json",
        ] {
            assert!(is_json(yes), "{yes}");
        }
        for no in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "text/json",
            "json",
            "",
        ] {
            assert!(!is_json(no), "{no}");
        }
    }
}
