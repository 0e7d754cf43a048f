//! The lenient readers, generated from the reading rules that `schema/` declares beside each
//! property. A definition with `x-e2a-reader: true` gets one reader function and one key table;
//! the keywords below say how each of its properties is read (anything not declared is read by
//! its type and `default`):
//!
//! | keyword | where | meaning |
//! |---|---|---|
//! | `x-e2a-reader` | definition | generate a lenient reader for this struct |
//! | `x-e2a-aliases` | property | `[{key, rule}]`: legacy keys (always type-checked) used, in order, when the property is absent or null; `rule` fires when one is used |
//! | `x-e2a-strip` | property | strings are stripped; blank reads as null |
//! | `x-e2a-merge` | object property | `[{key, rule, skip?, as?}]`: legacy keys merged in, existing keys win; `skip: empty_values` drops null/`[]`/`{}` values, `skip: <Enum>` drops keys that are values of that enum, `as: k` inserts a non-empty string under key `k` (another JSON type is an error) |
//! | `x-e2a-legacy-keys` | definition | `{key: {rule, read, into}}`: a legacy key handed to the hand-written `read` function with the field `into` |
//! | `x-e2a-read` | property | a hand-written reader by name (code that cannot be data: `timestamp`, `secret_headers`) |
//! | `default` / `x-e2a-default` | property | the value when absent; an explicit null on a non-nullable scalar reads as it too and fires `null_default` |
//!
//! The generated code calls the small hand-written API of `crate::lenient::Ctx` (one typed read
//! per JSON type) and the named functions; it never spells a key or default anywhere else.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::Error;

mod definition;

use definition::DefReader;

/// The `x-e2a-reader` keyword.
pub const READER: &str = "x-e2a-reader";
/// The `x-e2a-aliases` keyword.
pub const ALIASES: &str = "x-e2a-aliases";
/// The `x-e2a-strip` keyword.
pub const STRIP: &str = "x-e2a-strip";
/// The `x-e2a-merge` keyword.
pub const MERGE: &str = "x-e2a-merge";
/// The `x-e2a-legacy-keys` keyword.
pub const LEGACY_KEYS: &str = "x-e2a-legacy-keys";
/// The `x-e2a-read` keyword.
pub const READ: &str = "x-e2a-read";

/// Hand-written readers that `x-e2a-read` may name.
pub const NAMED_READS: [&str; 2] = ["timestamp", "secret_headers"];
/// Hand-written functions that `x-e2a-legacy-keys` may name.
pub const NAMED_LEGACY: [&str; 1] = ["binding_migration"];

/// `CamelCase` → `snake_case` of a type name for function and table names
/// (`E2AEnvelope` → `e2a_envelope`).
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
        if c.is_ascii_uppercase() && i > 0 && (next_lower || chars[i - 1].is_ascii_lowercase()) {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out.replace("e2_a", "e2a")
}

/// A field of a generated struct: its JSON key, Rust name and type (spaces removed), its
/// property in the schema and its serde default.
struct Field {
    key: String,
    ident: String,
    ty: String,
    prop: Value,
    serde_default: Option<Option<String>>,
}

/// The fields of the generated struct `name` (their properties not yet filled in).
fn fields_of(file: &syn::File, name: &str) -> Option<Vec<Field>> {
    file.items.iter().find_map(|item| match item {
        syn::Item::Struct(st) if st.ident == name => Some(
            st.fields
                .iter()
                .filter_map(|f| {
                    let ident = f.ident.as_ref()?.to_string();
                    let key = crate::syntax::serde_rename(&f.attrs).unwrap_or_else(|| ident.clone());
                    Some(Field {
                        key,
                        ident,
                        ty: crate::syntax::quote_type(&f.ty).replace(' ', ""),
                        prop: Value::Null,
                        serde_default: crate::syntax::serde_default(&f.attrs),
                    })
                })
                .collect(),
        ),
        _ => None,
    })
}

/// Which `$defs` entries are open enums (read from a string with `From<String>`).
fn is_open_enum(defs: &Map<String, Value>, name: &str) -> bool {
    defs.get(name).is_some_and(|d| d.get(crate::OPEN_ENUM).is_some())
}

/// The definition a property refers to (`$ref`, directly or in an `anyOf`).
fn ref_name(p: &Value) -> Option<&str> {
    p.get("$ref")
        .and_then(Value::as_str)
        .or_else(|| {
            p.get("anyOf")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find_map(|x| x.get("$ref").and_then(Value::as_str)))
        })
        .and_then(|r| r.strip_prefix("#/$defs/"))
}

/// Whether a property is a scalar (string, boolean or integer, directly or through a `$ref`):
/// an explicit null on such a property with a default reads as the default (`null_default`).
fn null_means_default(p: &Value, defs: &Map<String, Value>) -> bool {
    let ty = match ref_name(p).and_then(|r| defs.get(r)) {
        Some(d) if p.get("anyOf").is_none() => d.get("type"),
        Some(_) => None,
        None => p.get("type"),
    };
    default_of(p).is_some() && matches!(ty, Some(Value::String(t)) if t == "string" || t == "boolean" || t == "integer")
}

/// The default of a property: `default`, else `x-e2a-default`.
fn default_of(p: &Value) -> Option<&Value> {
    p.get("default").or_else(|| p.get(crate::X_DEFAULT))
}

/// The `LegacyRule` values and their variant names: what the `rule` of a reading keyword may
/// name.
struct LegacyRules {
    /// The values, in schema order.
    values: Vec<String>,
    /// Wire value → variant name.
    variants: BTreeMap<String, String>,
}

/// The generated readers and key tables (empty when no definition asks for one).
pub fn readers(bundled: &Value, file: &syn::File) -> Result<String, Error> {
    let Some(defs) = bundled.get("$defs").and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let with_reader: Vec<&String> = defs
        .iter()
        .filter(|(_, d)| d.get(READER).and_then(Value::as_bool) == Some(true))
        .map(|(n, _)| n)
        .collect();
    if with_reader.is_empty() {
        return Ok(String::new());
    }
    let rules = LegacyRules {
        values: defs
            .get("LegacyRule")
            .and_then(|d| d.get("enum"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        variants: crate::syntax::enum_variants(file, "LegacyRule").unwrap_or_default(),
    };
    let mut out = String::from(
        "\n// Lenient readers generated by e2a-codegen from the x-e2a keywords of schema/.\n\
         #[allow(clippy::all, dead_code, unused_mut, unused_variables)]\n\
         pub(crate) mod readers {\n    use super::*;\n    use crate::lenient::{Ctx, Merge};\n    use crate::take::Source;\n",
    );
    for name in with_reader {
        out.push_str(&DefReader::new(name, defs, &rules, file)?.generate()?);
    }
    out.push_str("}\n");
    Ok(out)
}

/// The "legacy rules" table for docs/protocol.md: every rule and where `schema/` applies it.
pub fn rules_table(bundled: &Value) -> String {
    let Some(defs) = bundled.get("$defs").and_then(Value::as_object) else {
        return String::new();
    };
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, def) in defs.iter().filter(|(_, d)| d.get(READER).is_some()) {
        for (lkey, l) in def.get(LEGACY_KEYS).and_then(Value::as_object).into_iter().flatten() {
            let r = l.get("rule").and_then(Value::as_str).unwrap_or_default();
            let what = l.get("description").and_then(Value::as_str).unwrap_or_default();
            uses.entry(r.into())
                .or_default()
                .push(format!("`{name}`: legacy key `{lkey}` — {what}"));
        }
        for (key, p) in def.get("properties").and_then(Value::as_object).into_iter().flatten() {
            for a in p.get(ALIASES).and_then(Value::as_array).into_iter().flatten() {
                let r = a.get("rule").and_then(Value::as_str).unwrap_or_default();
                let k = a.get("key").and_then(Value::as_str).unwrap_or_default();
                let strip = if p.get(STRIP).is_some() { " (stripped)" } else { "" };
                uses.entry(r.into()).or_default().push(format!(
                    "`{name}.{key}`: `{k}` is read when `{key}` is absent or null{strip}"
                ));
            }
            for m in p.get(MERGE).and_then(Value::as_array).into_iter().flatten() {
                let r = m.get("rule").and_then(Value::as_str).unwrap_or_default();
                let k = m.get("key").and_then(Value::as_str).unwrap_or_default();
                let how = match (
                    m.get("skip").and_then(Value::as_str),
                    m.get("as").and_then(Value::as_str),
                ) {
                    (Some("empty_values"), _) => "keys merged in (null, `[]` and `{}` values skipped)".to_string(),
                    (Some(e), _) => format!("keys merged in (keys that are `{e}` values skipped)"),
                    (_, Some(a)) => format!("a non-empty string is added as `{a}` (another type is an error)"),
                    _ => String::new(),
                };
                uses.entry(r.into())
                    .or_default()
                    .push(format!("`{name}.{key}`: legacy `{k}` — {how}; existing keys win"));
            }
            if let Some(read) = p.get(READ).and_then(Value::as_str) {
                if read == "timestamp" {
                    uses.entry("epoch_timestamp".into())
                        .or_default()
                        .push(format!("`{name}.{key}`: an epoch-seconds number becomes ISO-8601 UTC"));
                }
            }
            if null_means_default(p, defs) {
                uses.entry("null_default".into())
                    .or_default()
                    .push(format!("`{name}.{key}`"));
            }
        }
    }
    let mut out = String::from("| rule | where it applies |\n|---|---|\n");
    let order: Vec<&str> = defs
        .get("LegacyRule")
        .and_then(|d| d.get("enum"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for r in order {
        let text = match (r, uses.get(r)) {
            ("null_default", Some(u)) => format!("an explicit null reads as the default on {}", u.join(", ")),
            ("unknown_keys", _) => "keys that are not E2A fields are ignored (every reader)".into(),
            (_, Some(u)) => u.join("; "),
            (_, None) => String::new(),
        };
        let _ = writeln!(out, "| `{r}` | {} |", text.replace('|', "\\|"));
    }
    out
}
