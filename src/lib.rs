//! # e2a — the Rust SDK for the E2A (Everything-to-Agent) protocol
//!
//! E2A is one request envelope ([`E2AEnvelope`]) and one response record ([`E2AResponse`])
//! that an agent gateway normalizes ACP, A2A, AG-UI and home-grown RPC into. This crate is
//! schema-first: the types are generated from the JSON Schema in `schema/` by typify at build
//! time (the committed copy lives in `generated/`), and this hand-written layer adds
//! reference-compatible reading and writing and the protocol adapters.
//!
//! ```
//! use e2a::{E2AEnvelope, E2AResponse};
//!
//! // Lenient reading accepts every legacy shape the Python implementation accepts.
//! let env = E2AEnvelope::from_json(r#"{"request_id":"r1","channel_id":"web","req_method":"chat.send",
//!                                      "params":{"query":"hi"},"timestamp":1774524781}"#)?;
//! assert_eq!(env.method.as_deref(), Some("chat.send"));
//! assert_eq!(env.timestamp.as_deref(), Some("2026-03-26T11:33:01+00:00"));
//!
//! // Canonical output has exactly the reference `to_dict()` key set (29 keys).
//! assert_eq!(env.to_value().as_object().unwrap().len(), 29);
//!
//! // Strict reading validates against the embedded schema and reports every violation.
//! let err = E2AResponse::read(r#"{"sequence": -1}"#, &e2a::ReadOptions::strict()).unwrap_err();
//! assert!(err.violations().len() > 1);
//! # Ok::<(), e2a::Error>(())
//! ```

#![deny(missing_docs)]

pub mod a2a;
pub mod acp;
pub mod agui;
#[cfg(feature = "async")]
pub mod async_stream;
#[doc(hidden)]
pub mod conformance;
pub mod envelope;
pub mod error;
mod fields;
pub mod frame;
pub mod legacy;
mod lenient;
pub mod limits;
pub mod log;
mod objects_only;
mod provenance;
pub mod pyrepr;
pub mod read;
pub mod redact;
pub mod response;
pub mod secret;
pub mod shown;
pub mod sse;
pub mod stream;
mod strict;
mod take;
pub mod taxonomy;
pub mod timestamp;
pub mod wire;
pub mod write;

/// Types generated from `schema/` by typify 0.8 (see `generated/rust/e2a_types.rs` for the
/// committed copy). Do not edit; change the schema and run `cargo xtask codegen`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod types {
    include!(concat!(env!("OUT_DIR"), "/e2a_types.rs"));
}

pub use error::{Error, LimitKind, Result, Violation};
pub use lenient::LegacyRule;
pub use limits::Limits;
pub use read::{Lenient, Message, Read, ReadMode, ReadOptions, Strict};
pub use response::ResponseBody;
pub use secret::{SecretHeaders, SecretString};
pub use strict::{schema as bundled_schema, violations_of as schema_violations, SCHEMA_JSON};
pub use types::{
    E2AAuth, E2AEnvelope, E2AFileRef, E2AProvenance, E2AResponse, IdentityOrigin, JsonRpcId, ResponseKind,
    ResponseStatus, E2A_PROTOCOL_VERSION,
};

/// The README's code samples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
