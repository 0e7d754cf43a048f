//! The A2A errors, as `schema/constants.json` declares them ([`A2aErrorKind`] and its
//! `x-e2a-a2a-error-table`, generated into [`A2A_ERROR_TABLE`]): how each reads on every A2A
//! binding, and both ways between an A2A code and the kind.
//!
//! ```
//! use e2a::types::A2aErrorKind;
//! let m = A2aErrorKind::TaskNotFound.mapping();
//! assert_eq!((m.code, m.reason, m.http_status, m.grpc_status), (-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND"));
//! assert_eq!(A2aErrorKind::from_code(-32001), Some(A2aErrorKind::TaskNotFound));
//! ```

use crate::taxonomy::ErrorKind;
pub use crate::types::{A2aErrorKind, A2A_ERROR_TABLE};

/// How one [`A2aErrorKind`] reads on the A2A bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct A2aErrorMapping {
    /// The kind.
    pub kind: A2aErrorKind,
    /// The JSON-RPC `error.code`.
    pub code: i64,
    /// The `google.rpc.ErrorInfo` reason (UPPER_SNAKE_CASE).
    pub reason: &'static str,
    /// The HTTP status on HTTP+JSON.
    pub http_status: u16,
    /// The `google.rpc.Code` name of HTTP+JSON's `error.status`.
    pub grpc_status: &'static str,
}

impl A2aErrorKind {
    /// This kind's row of [`A2A_ERROR_TABLE`].
    pub fn mapping(self) -> &'static A2aErrorMapping {
        A2A_ERROR_TABLE
            .iter()
            .find(|m| m.kind == self)
            .unwrap_or(&A2A_ERROR_TABLE[0])
    }

    /// The kind of an A2A JSON-RPC error code (`None` for a code A2A does not define).
    pub fn from_code(code: i64) -> Option<Self> {
        A2A_ERROR_TABLE.iter().find(|m| m.code == code).map(|m| m.kind)
    }

    /// The A2A error an E2A failure of `kind` reads as: the one whose code is the kind's
    /// `a2a_code` (the E2A error table), else `internal`.
    ///
    /// ```
    /// use e2a::{taxonomy::ErrorKind, types::A2aErrorKind};
    /// assert_eq!(A2aErrorKind::from_e2a(ErrorKind::NotCancelable), A2aErrorKind::TaskNotCancelable);
    /// assert_eq!(A2aErrorKind::from_e2a(ErrorKind::Timeout), A2aErrorKind::Internal);
    /// ```
    pub fn from_e2a(kind: ErrorKind) -> Self {
        Self::from_code(kind.mapping().a2a_code).unwrap_or(A2aErrorKind::Internal)
    }
}
