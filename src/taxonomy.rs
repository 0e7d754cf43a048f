//! One error taxonomy for every protocol.
//!
//! An E2A failure has a protocol-neutral [`ErrorKind`]. [`ERROR_TABLE`] maps each kind to the
//! code it has on every peer protocol, so the same failure reads the same way everywhere.
//!
//! The table itself is schema data (`x-e2a-error-table` on `ErrorKind` in
//! `schema/constants.json`), generated into [`ERROR_TABLE`] and rendered in docs/protocol.md, so
//! the TypeScript and Python teams read the same rows.
//!
//! ```
//! use e2a::taxonomy::ErrorKind;
//! let m = ErrorKind::NotFound.mapping();
//! assert_eq!((m.e2a_code, m.acp_code, m.a2a_code, m.http_status), ("E2A.NOT_FOUND", -32002, -32001, 404));
//! ```

use crate::ResponseStatus;

pub use crate::types::{ErrorKind, ERROR_TABLE};

/// How one [`ErrorKind`] reads on every protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorMapping {
    /// The kind.
    pub kind: ErrorKind,
    /// Stable snake_case name.
    pub name: &'static str,
    /// E2A string code written into `e2a.error` bodies.
    pub e2a_code: &'static str,
    /// ACP JSON-RPC error code.
    pub acp_code: i64,
    /// A2A JSON-RPC error code.
    pub a2a_code: i64,
    /// A2A task state the task ends in (`None`: the task state does not change).
    pub a2a_task_state: Option<&'static str>,
    /// AG-UI `RUN_ERROR` code.
    pub agui_code: &'static str,
    /// HTTP status code.
    pub http_status: u16,
    /// What a remote caller is told of a failure of this kind when a gateway keeps the detail
    /// to its log (`[errors] expose = "safe"`): a fixed sentence, no agent or upstream text.
    pub safe_message: &'static str,
}

impl ErrorKind {
    /// This kind's row of [`ERROR_TABLE`].
    pub fn mapping(self) -> &'static ErrorMapping {
        ERROR_TABLE.iter().find(|m| m.kind == self).unwrap_or(&ERROR_TABLE[0])
    }

    /// The kind of an `e2a.error` body `code`: an E2A string code of the table (`chat.error`
    /// reads as an agent error), or a JSON-RPC integer code read as `protocol` (`"acp"` or
    /// `"a2a"`) defines it. Unknown codes are [`ErrorKind::AgentError`] for strings and
    /// [`ErrorKind::Internal`] for integers.
    ///
    /// ```
    /// use e2a::taxonomy::ErrorKind;
    /// let code = serde_json::json!(-32002);
    /// assert_eq!(ErrorKind::from_code(&code, "acp"), ErrorKind::NotFound);
    /// assert_eq!(ErrorKind::from_code(&code, "a2a"), ErrorKind::NotCancelable);
    /// assert_eq!(ErrorKind::from_code(&serde_json::json!("E2A.CANCELLED"), "e2a"), ErrorKind::Cancelled);
    /// ```
    pub fn from_code(code: &serde_json::Value, protocol: &str) -> ErrorKind {
        if let Some(s) = code.as_str() {
            return ERROR_TABLE
                .iter()
                .find(|m| m.e2a_code == s)
                .map(|m| m.kind)
                .unwrap_or(ErrorKind::AgentError);
        }
        let Some(n) = code.as_i64().filter(|_| !code.is_boolean()) else {
            return ErrorKind::AgentError;
        };
        let found = match protocol {
            "a2a" => ERROR_TABLE.iter().find(|m| m.a2a_code == n),
            _ => ERROR_TABLE.iter().find(|m| m.acp_code == n),
        };
        found.map(|m| m.kind).unwrap_or(ErrorKind::Internal)
    }

    /// The kind of a response frame, when it is a failure (`e2a.error`, or `failed` status).
    ///
    /// ```
    /// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.error", "body": {"code": "E2A.TIMEOUT"}})).unwrap();
    /// assert_eq!(e2a::taxonomy::ErrorKind::of_response(&r), Some(e2a::taxonomy::ErrorKind::Timeout));
    /// ```
    pub fn of_response(resp: &crate::E2AResponse) -> Option<ErrorKind> {
        let failed = resp.response_kind == "e2a.error" || resp.status() == Some(ResponseStatus::Failed);
        failed.then(|| {
            let protocol = resp
                .body
                .get("external")
                .and_then(|e| e.get("protocol"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("e2a");
            ErrorKind::from_code(resp.body.get("code").unwrap_or(&serde_json::Value::Null), protocol)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_unique() {
        for (i, a) in ERROR_TABLE.iter().enumerate() {
            assert_eq!(a.kind.mapping().name, a.name);
            for b in &ERROR_TABLE[i + 1..] {
                assert_ne!(a.e2a_code, b.e2a_code);
                assert_ne!(a.kind, b.kind);
            }
        }
    }

    #[test]
    fn a2a_codes_roundtrip_through_the_kind() {
        for m in ERROR_TABLE.iter().filter(|m| (-32009..=-32001).contains(&m.a2a_code)) {
            assert_eq!(ErrorKind::from_code(&m.a2a_code.into(), "a2a"), m.kind);
        }
    }
}
