//! The error tables declared in `schema/` (`x-e2a-error-table`, `x-e2a-a2a-error-table`),
//! checked against their enums and rendered as Rust constants.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::syntax::enum_variants;
use crate::Error;

/// The `$defs`, and the name and rows of the one definition carrying the table keyword `key`.
fn table<'a>(bundled: &'a Value, key: &str) -> Option<(&'a serde_json::Map<String, Value>, &'a str, &'a [Value])> {
    let defs = bundled.get("$defs").and_then(Value::as_object)?;
    let (name, rows) = defs
        .iter()
        .find_map(|(n, d)| d.get(key).and_then(Value::as_array).map(|r| (n, r)))?;
    Some((defs, name.as_str(), rows.as_slice()))
}

/// Cell `k` of table row `i`, a string.
fn cell_str<'a>(row: &'a Value, i: usize, k: &str) -> Result<&'a str, String> {
    row.get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("row {i}: `{k}` must be a string"))
}

/// Cell `k` of table row `i`, an integer.
fn cell_int(row: &Value, i: usize, k: &str) -> Result<i64, String> {
    row.get(k)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("row {i}: `{k}` must be an integer"))
}

/// Row `i` of a table: its cells, and the value of the table's enum its `kind` names.
struct Row<'a> {
    row: &'a Value,
    i: usize,
}

impl<'a> Row<'a> {
    fn s(&self, k: &str) -> Result<&'a str, String> {
        cell_str(self.row, self.i, k)
    }

    fn n(&self, k: &str) -> Result<i64, String> {
        cell_int(self.row, self.i, k)
    }

    /// The `kind` cell and the variant of enum `name` it names.
    fn kind<'v>(&self, name: &str, variants: &'v BTreeMap<String, String>) -> Result<(&'a str, &'v str), String> {
        let kind = self.s("kind")?;
        let variant = variants
            .get(kind)
            .ok_or_else(|| format!("row {}: `{kind}` is not a value of {name}", self.i))?;
        Ok((kind, variant))
    }

    /// The `http_status` cell.
    fn status(&self) -> Result<u16, String> {
        u16::try_from(self.n("http_status")?).map_err(|_| format!("row {}: bad http_status", self.i))
    }
}

/// `out`, the rendered rows, closed: when every one of the enum's `values` has its row.
fn close(mut out: String, rows: usize, values: usize) -> Result<String, String> {
    if rows != values {
        return Err(format!("{rows} rows for {values} values"));
    }
    out.push_str("];\n");
    Ok(out)
}

/// The `x-e2a-error-table` keyword: rows of how each value of a failure-kind enum reads on
/// every protocol. Rendered as `ERROR_TABLE: [crate::taxonomy::ErrorMapping; N]`.
pub const ERROR_TABLE: &str = "x-e2a-error-table";

/// `ERROR_TABLE` from the one definition carrying [`ERROR_TABLE`]; every enum value has exactly
/// one row and every row's `e2a_code` is a value of `ErrorCode`.
pub(crate) fn error_table(bundled: &Value, file: &syn::File) -> Result<String, Error> {
    let Some((defs, name, rows)) = table(bundled, ERROR_TABLE) else {
        return Ok(String::new());
    };
    let err = |m: String| Error::Schema(format!("/$defs/{name}/{ERROR_TABLE}: {m}"));
    let variants = enum_variants(file, name).ok_or_else(|| err("not a string enum".into()))?;
    let codes: Vec<&str> = defs
        .get("ErrorCode")
        .and_then(|d| d.get("enum"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = format!(
        "\n/// How every [`{name}`] reads on every protocol (`{ERROR_TABLE}` of `schema/`), in schema order.\npub const ERROR_TABLE: [crate::taxonomy::ErrorMapping; {}] = [\n",
        rows.len()
    );
    let mut seen = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let r = Row { row, i };
        let (kind, variant) = r.kind(name, &variants).map_err(err)?;
        if seen.contains(&kind) {
            return Err(err(format!("`{kind}` has two rows")));
        }
        seen.push(kind);
        let code = r.s("e2a_code").map_err(err)?;
        if !codes.contains(&code) {
            return Err(err(format!("row {i}: `{code}` is not a value of ErrorCode")));
        }
        let state = match row.get("a2a_task_state") {
            Some(Value::String(t)) => format!("Some({t:?})"),
            Some(Value::Null) | None => "None".into(),
            Some(_) => return Err(err(format!("row {i}: `a2a_task_state` must be a string or null"))),
        };
        let status = r.status().map_err(err)?;
        let _ = writeln!(
            out,
            "    crate::taxonomy::ErrorMapping {{ kind: {name}::{variant}, name: {kind:?}, e2a_code: {code:?}, acp_code: {}, a2a_code: {}, a2a_task_state: {state}, agui_code: {:?}, http_status: {status}, safe_message: {:?} }},",
            r.n("acp_code").map_err(err)?,
            r.n("a2a_code").map_err(err)?,
            r.s("agui_code").map_err(err)?,
            r.s("safe_message").map_err(err)?,
        );
    }
    close(out, seen.len(), variants.len()).map_err(err)
}

/// The `x-e2a-a2a-error-table` keyword: rows of how each A2A error reads on the A2A bindings.
/// Rendered as `A2A_ERROR_TABLE: [crate::a2a::errors::A2aErrorMapping; N]`.
pub const A2A_ERROR_TABLE: &str = "x-e2a-a2a-error-table";

/// `A2A_ERROR_TABLE` from the one definition carrying [`A2A_ERROR_TABLE`]; every enum value has
/// exactly one row and every code one kind (so the table reads both ways).
pub(crate) fn a2a_error_table(bundled: &Value, file: &syn::File) -> Result<String, Error> {
    let Some((_, name, rows)) = table(bundled, A2A_ERROR_TABLE) else {
        return Ok(String::new());
    };
    let err = |m: String| Error::Schema(format!("/$defs/{name}/{A2A_ERROR_TABLE}: {m}"));
    let variants = enum_variants(file, name).ok_or_else(|| err("not a string enum".into()))?;
    let mut out = format!(
        "\n/// How every [`{name}`] reads on the A2A bindings (`{A2A_ERROR_TABLE}` of `schema/`), in schema order.\npub const A2A_ERROR_TABLE: [crate::a2a::errors::A2aErrorMapping; {}] = [\n",
        rows.len()
    );
    let (mut kinds, mut codes) = (Vec::new(), Vec::new());
    for (i, row) in rows.iter().enumerate() {
        let r = Row { row, i };
        let (kind, variant) = r.kind(name, &variants).map_err(err)?;
        let code = r.n("code").map_err(err)?;
        if kinds.contains(&kind) || codes.contains(&code) {
            return Err(err(format!("row {i}: `{kind}` or {code} has two rows")));
        }
        kinds.push(kind);
        codes.push(code);
        let status = r.status().map_err(err)?;
        let _ = writeln!(
            out,
            "    crate::a2a::errors::A2aErrorMapping {{ kind: {name}::{variant}, code: {code}, reason: {:?}, http_status: {status}, grpc_status: {:?} }},",
            r.s("reason").map_err(err)?,
            r.s("grpc_status").map_err(err)?,
        );
    }
    close(out, kinds.len(), variants.len()).map_err(err)
}
