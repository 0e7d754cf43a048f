//! Stand-in for `e2a::taxonomy::ErrorMapping` (src/taxonomy.rs): the same fields. The kind type
//! is the `taxonomy_table` fixture's `ErrorKind` (the real struct names `e2a`'s own).

/// Mirrors `e2a::taxonomy::ErrorMapping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorMapping<K = crate::taxonomy_table::ErrorKind> {
    pub kind: K,
    pub name: &'static str,
    pub e2a_code: &'static str,
    pub acp_code: i64,
    pub a2a_code: i64,
    pub a2a_task_state: Option<&'static str>,
    pub agui_code: &'static str,
    pub http_status: u16,
    pub safe_message: &'static str,
}
