//! Tool-kind inference: a tool's name, its aliases applied, as one of ACP's tool kinds.

use crate::pyrepr::strip;

/// Tool names that list files or directories (ACP kind `read`, titled `Listing …`).
const LIST_LIKE: [&str; 8] = [
    "list",
    "list_dir",
    "list_directories",
    "list_directory",
    "list_files",
    "list_paths",
    "ls",
    "glob",
];

/// The ACP tool kinds this module infers.
const KINDS: [(&str, &[&str]); 7] = [
    ("delete", &["delete", "remove", "remove_file", "rm"]),
    ("move", &["move", "move_file", "rename", "rename_file"]),
    (
        "edit",
        &[
            "apply_patch",
            "edit",
            "edit_file",
            "search_replace",
            "write",
            "write_file",
            "write_text_file",
        ],
    ),
    (
        "execute",
        &[
            "bash",
            "create_terminal",
            "exec",
            "exec_command",
            "mcp_exec_command",
            "release_terminal",
            "run",
            "shell",
            "terminal_create",
            "wait_for_terminal_exit",
        ],
    ),
    ("fetch", &["fetch", "fetch_webpage", "mcp_fetch_webpage"]),
    (
        "search",
        &[
            "grep",
            "glob",
            "glob_file_search",
            "mcp_free_search",
            "mcp_paid_search",
            "search",
        ],
    ),
    // list-like names (LIST_LIKE) are `read` too
    (
        "read",
        &["read", "read_file", "read_terminal_output", "read_text_file", "view"],
    ),
];

/// The stripped name with the reference's aliases applied (case kept, as the reference's dict
/// lookup does: `normalize_tool_name`): this is what titles humanize.
pub(super) fn aliased_name(name: &str) -> &str {
    match strip(name) {
        "free_search" => "mcp_free_search",
        "paid_search" => "mcp_paid_search",
        "fetch_webpage" => "mcp_fetch_webpage",
        "exec_command" => "mcp_exec_command",
        n => n,
    }
}

/// The aliased name lowercased (aliases apply before lowercasing, as in the reference): what
/// kinds are inferred from.
pub(super) fn canonical_name(name: &str) -> String {
    aliased_name(name).to_lowercase()
}

/// The ACP tool kind of a tool name (`read`, `edit`, `delete`, `move`, `search`, `execute`,
/// `fetch` or `other`).
///
/// ```
/// assert_eq!(e2a::acp::tool_updates::tool_kind("Read_File"), "read");
/// assert_eq!(e2a::acp::tool_updates::tool_kind("free_search"), "search");
/// assert_eq!(e2a::acp::tool_updates::tool_kind("mystery"), "other");
/// ```
pub fn tool_kind(name: &str) -> &'static str {
    let n = canonical_name(name);
    KINDS
        .iter()
        .find(|(_, names)| names.contains(&n.as_str()))
        .map(|(k, _)| *k)
        .unwrap_or(if LIST_LIKE.contains(&n.as_str()) {
            "read"
        } else {
            "other"
        })
}

/// Whether `name` lists files or directories (its raw output is not shown).
pub(super) fn is_list_like(name: &str) -> bool {
    LIST_LIKE.contains(&canonical_name(name).as_str())
}
