//! Markdown field tables for `docs/protocol.md`, rendered from the bundled schema and spliced
//! between `<!-- codegen:begin tables -->` and `<!-- codegen:end tables -->`; the prose
//! around the markers stays hand-written.

use std::fmt::Write as _;

use serde_json::Value;

use crate::Error;

/// Start marker of the generated region.
pub const BEGIN: &str = "<!-- codegen:begin tables -->";
/// End marker of the generated region.
pub const END: &str = "<!-- codegen:end tables -->";

/// `s` as one markdown table cell (pipes escaped, newlines as spaces).
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The JSON type of a property as the tables spell it (`$ref`s as links).
fn type_of(p: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let n = r.trim_start_matches("#/$defs/");
        return format!("[`{n}`](#{})", n.to_lowercase());
    }
    if let Some(alts) = p.get("anyOf").and_then(Value::as_array) {
        return alts.iter().map(type_of).collect::<Vec<_>>().join(" \\| ");
    }
    match p.get("type") {
        Some(Value::String(t)) if t == "array" => {
            format!(
                "array of {}",
                p.get("items").map(type_of).unwrap_or_else(|| "any".into())
            )
        }
        Some(Value::String(t)) if t == "object" => match p.get("additionalProperties") {
            Some(Value::Object(ap)) if !ap.is_empty() => format!("map of {}", type_of(&Value::Object(ap.clone()))),
            _ => "object".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" \\| "),
        _ => "any".into(),
    }
}

/// Whether a property may be null.
fn nullable(p: &Value) -> bool {
    match p.get("type") {
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => p
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x.get("type") == Some(&"null".into()))),
    }
}

/// Start marker of the config file's generated region (gateway/README.md).
pub const CONFIG_BEGIN: &str = "<!-- codegen:begin config -->";
/// End marker of the config file's generated region.
pub const CONFIG_END: &str = "<!-- codegen:end config -->";
/// The definition of the gateway's config file; it and the definitions it uses are documented
/// in gateway/README.md, not in the protocol document.
pub const CONFIG_ROOT: &str = "GatewayFile";

/// `root` and every definition it uses, directly or not.
pub fn reachable(bundled: &Value, root: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(def) = bundled.pointer(&format!("/$defs/{name}")) {
            crate::collect_refs(def, &mut |r| todo.push(r.trim_start_matches("#/$defs/").to_string()));
        }
    }
    seen
}

/// The tables for every type of the bundled schema but the config file's.
pub fn tables(bundled: &Value) -> String {
    let config = reachable(bundled, CONFIG_ROOT);
    tables_where(bundled, &|name| !config.contains(name))
}

/// The tables of the config file's types, the file itself first.
pub fn config_tables(bundled: &Value) -> String {
    let config = reachable(bundled, CONFIG_ROOT);
    let mut out = tables_where(bundled, &|name| name == CONFIG_ROOT);
    out.push_str(&tables_where(bundled, &|name| {
        name != CONFIG_ROOT && config.contains(name)
    }));
    out
}

/// The tables of every definition that `keep` keeps, in schema order, each under its heading.
fn tables_where(bundled: &Value, keep: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let Some(defs) = bundled.get("$defs").and_then(Value::as_object) else {
        return out;
    };
    for (name, def) in defs.iter().filter(|(n, _)| keep(n)) {
        let desc = def.get("description").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(out, "### {name}\n\n{}\n", cell(desc));
        definition_table(&mut out, name, def, bundled);
    }
    out
}

/// The table of one definition: the legacy rules for `LegacyRule`, the rows of an error table,
/// an enum's values, an object's fields, else its JSON type.
fn definition_table(out: &mut String, name: &str, def: &Value, bundled: &Value) {
    if name == "LegacyRule" {
        out.push_str(&crate::reader::rules_table(bundled));
        out.push('\n');
    } else if let Some(rows) = def.get(crate::ERROR_TABLE).and_then(Value::as_array) {
        error_table_rows(out, rows);
    } else if let Some(rows) = def.get(crate::A2A_ERROR_TABLE).and_then(Value::as_array) {
        a2a_error_table_rows(out, rows);
    } else if let Some(values) = def.get("enum").and_then(Value::as_array) {
        let _ = writeln!(out, "| value |\n|---|");
        for v in values {
            let _ = writeln!(out, "| `{}` |", v.as_str().unwrap_or_default());
        }
        out.push('\n');
    } else if let Some(props) = def.get("properties").and_then(Value::as_object) {
        field_rows(out, def, props);
    } else {
        let _ = writeln!(out, "JSON type: {}\n", type_of(def));
    }
}

/// The rows of the `x-e2a-error-table`: how each failure kind reads on every protocol.
fn error_table_rows(out: &mut String, rows: &[Value]) {
    let _ = writeln!(
        out,
        "| kind | E2A code | ACP JSON-RPC | A2A JSON-RPC | A2A task state | AG-UI `RUN_ERROR` code | HTTP | meaning |\n|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let text = |k: &str| match r.get(k) {
            Some(Value::String(s)) => format!("`{s}`"),
            Some(Value::Null) | None => "—".into(),
            Some(other) => other.to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.get("kind").and_then(Value::as_str).unwrap_or_default(),
            text("e2a_code"),
            text("acp_code"),
            text("a2a_code"),
            text("a2a_task_state"),
            text("agui_code"),
            text("http_status"),
            cell(r.get("description").and_then(Value::as_str).unwrap_or_default())
        );
    }
    out.push('\n');
}

/// The rows of the `x-e2a-a2a-error-table`: how each A2A error reads on the A2A bindings.
fn a2a_error_table_rows(out: &mut String, rows: &[Value]) {
    let _ = writeln!(
        out,
        "| kind | JSON-RPC code | `ErrorInfo` reason | HTTP | `google.rpc.Code` | meaning |\n|---|---|---|---|---|---|"
    );
    for r in rows {
        let text = |k: &str| match r.get(k) {
            Some(Value::String(s)) => format!("`{s}`"),
            Some(other) => other.to_string(),
            None => "—".into(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.get("kind").and_then(Value::as_str).unwrap_or_default(),
            text("code"),
            text("reason"),
            text("http_status"),
            text("grpc_status"),
            cell(r.get("description").and_then(Value::as_str).unwrap_or_default())
        );
    }
    out.push('\n');
}

/// The field table of an object definition (`props` its properties), then whether other
/// fields are allowed.
fn field_rows(out: &mut String, def: &Value, props: &serde_json::Map<String, Value>) {
    let required: Vec<&str> = def
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "| field | JSON type | required | nullable | default | description |\n|---|---|---|---|---|---|"
    );
    for (k, p) in props {
        let default = p
            .get("default")
            .or_else(|| p.get(crate::X_DEFAULT))
            .map(|d| format!("`{d}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{k}` | {} | {} | {} | {default} | {} |",
            type_of(p),
            if required.contains(&k.as_str()) { "yes" } else { "no" },
            if nullable(p) { "yes" } else { "no" },
            cell(p.get("description").and_then(Value::as_str).unwrap_or(""))
        );
    }
    match def.get("additionalProperties") {
        Some(Value::Bool(false)) => out.push_str("\nNo other fields are allowed.\n\n"),
        Some(_) => out.push_str("\nOther fields are allowed and kept.\n\n"),
        None => out.push('\n'),
    }
}

/// `doc` with the generated region replaced by fresh tables.
pub fn splice(doc: &str, bundled: &Value) -> Result<String, Error> {
    splice_between(doc, "docs/protocol.md", (BEGIN, END), &tables(bundled))
}

/// `doc` (gateway/README.md) with the config file's region replaced by fresh tables.
pub fn splice_config(doc: &str, bundled: &Value) -> Result<String, Error> {
    splice_between(
        doc,
        "gateway/README.md",
        (CONFIG_BEGIN, CONFIG_END),
        &config_tables(bundled),
    )
}

fn splice_between(doc: &str, name: &str, (begin, end): (&str, &str), tables: &str) -> Result<String, Error> {
    let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else {
        return Err(Error::Schema(format!("{name}: markers `{begin}` / `{end}` not found")));
    };
    if e < b {
        return Err(Error::Schema(format!("{name}: end marker before begin marker")));
    }
    Ok(format!("{}{begin}\n\n{tables}{}", &doc[..b], &doc[e..]))
}
