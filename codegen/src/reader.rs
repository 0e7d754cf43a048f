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

struct Field {
    key: String,
    ident: String,
    ty: String,
    prop: Value,
    serde_default: Option<Option<String>>,
}

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

fn default_of(p: &Value) -> Option<&Value> {
    p.get("default").or_else(|| p.get(crate::X_DEFAULT))
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
    let rules: Vec<String> = defs
        .get("LegacyRule")
        .and_then(|d| d.get("enum"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let rule_variants = crate::syntax::enum_variants(file, "LegacyRule").unwrap_or_default();
    let mut out = String::from(
        "\n// Lenient readers generated by e2a-codegen from the x-e2a keywords of schema/.\n\
         #[allow(clippy::all, dead_code, unused_mut, unused_variables)]\n\
         pub(crate) mod readers {\n    use super::*;\n    use crate::lenient::{Ctx, Merge};\n    use crate::take::Source;\n",
    );
    for name in with_reader {
        let err = |m: String| Error::Schema(format!("/$defs/{name}: {m}"));
        let def = &defs[name];
        let rule = |r: &Value, at: &str| -> Result<String, Error> {
            let r = r
                .as_str()
                .ok_or_else(|| err(format!("{at}: `rule` must be a string")))?;
            if !rules.iter().any(|x| x == r) {
                return Err(err(format!("{at}: rule `{r}` is not a value of LegacyRule")));
            }
            let v = rule_variants
                .get(r)
                .ok_or_else(|| err(format!("{at}: no LegacyRule variant for `{r}`")))?;
            Ok(format!("LegacyRule::{v}"))
        };
        let mut fields = fields_of(file, name).ok_or_else(|| err("no generated struct".into()))?;
        let props = def
            .get("properties")
            .and_then(Value::as_object)
            .ok_or_else(|| err("no properties".into()))?;
        for f in &mut fields {
            f.prop = props
                .get(&f.key)
                .cloned()
                .ok_or_else(|| err(format!("field `{}` has no property", f.key)))?;
        }
        let mut keys: Vec<String> = props.keys().cloned().collect();
        // struct-typed fields are read first (legacy keys may write into them), then the
        // legacy keys, then the other properties, then the aliases
        let mut nested_body = String::new();
        let mut nested_keys: Vec<(String, String)> = Vec::new();
        let mut body = String::new();
        let mut tail = String::new();
        for f in &fields {
            let (key, ident, ty, p) = (&f.key, &f.ident, f.ty.as_str(), &f.prop);
            let at = format!("properties/{key}");
            let strip = p.get(STRIP).and_then(Value::as_bool) == Some(true);
            let default = default_of(p);
            let target = ref_name(p);
            let nested = target.is_some_and(|t| defs.get(t).is_some_and(|d| d.get(READER).is_some()));
            let out_body = if nested { &mut nested_body } else { &mut body };
            if null_means_default(p, defs) {
                let _ = writeln!(out_body, "        c.null_default(key!({key:?}));");
            }
            let read = if let Some(named) = p.get(READ).and_then(Value::as_str) {
                if !NAMED_READS.contains(&named) {
                    return Err(err(format!("{at}: unknown `{READ}` function `{named}`")));
                }
                format!("c.{named}(key!({key:?}))?")
            } else if let Some(t) = target.filter(|t| defs.get(*t).is_some_and(|d| d.get(READER).is_some())) {
                let func = snake(t);
                nested_keys.push((key.clone(), func.to_uppercase()));
                // the reader over a map, then over slots (the text path)
                if ty.starts_with("::std::option::Option") {
                    format!("c.nested_opt(key!({key:?}), {func}, {func})?")
                } else {
                    format!("c.nested_or_default(key!({key:?}), {func}, {func})?")
                }
            } else if target.is_some_and(|t| is_open_enum(defs, t)) {
                let d = default
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("{at}: an open enum needs a string default")))?;
                format!("c.f.str_or(key!({key:?}), {d:?})?.into()")
            } else if let Some(t) = target.filter(|t| defs.get(*t).is_some_and(|d| d.get("enum").is_some())) {
                let d = match &f.serde_default {
                    Some(Some(path)) => format!("{path}()"),
                    _ => return Err(err(format!("{at}: an enum field needs a `default`"))),
                };
                format!("c.parse_or::<{t}>(key!({key:?}), {d})?")
            } else {
                match ty {
                    "::std::string::String" => {
                        let d = default
                            .and_then(Value::as_str)
                            .ok_or_else(|| err(format!("{at}: a non-null string needs a string default")))?;
                        format!("c.f.str_or(key!({key:?}), {d:?})?")
                    }
                    "::std::option::Option<::std::string::String>" if strip => format!("c.f.stripped(key!({key:?}))?"),
                    "::std::option::Option<::std::string::String>" => format!("c.f.opt_str(key!({key:?}))?"),
                    "::std::option::Option<crate::secret::SecretString>" => {
                        format!("c.f.opt_str(key!({key:?}))?.map(::std::convert::Into::into)")
                    }
                    "bool" => format!(
                        "c.f.bool_or(key!({key:?}), {})?",
                        default.and_then(Value::as_bool).unwrap_or(false)
                    ),
                    "u64" => format!(
                        "c.f.seq(key!({key:?}), {})?",
                        default.and_then(Value::as_u64).unwrap_or(0)
                    ),
                    "::serde_json::Map<::std::string::String,::serde_json::Value>" => {
                        format!("c.f.obj(key!({key:?}))?")
                    }
                    "::std::option::Option<::serde_json::Map<::std::string::String,::serde_json::Value>>" => {
                        format!("c.f.opt_obj(key!({key:?}))?")
                    }
                    "::std::vec::Vec<::std::string::String>" => format!("c.f.str_array(key!({key:?}))?"),
                    "::std::option::Option<JsonRpcId>" => format!("c.f.rpc_id(key!({key:?}))?"),
                    other => return Err(err(format!("{at}: no lenient read for type `{other}`"))),
                }
            };
            let _ = writeln!(out_body, "        let mut {ident} = {read};");
            // merges: existing keys win
            for (i, m) in p.get(MERGE).and_then(Value::as_array).into_iter().flatten().enumerate() {
                let at = format!("{at}/{MERGE}/{i}");
                let mkey = m
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("{at}: `key` must be a string")))?;
                let r = rule(m.get("rule").unwrap_or(&Value::Null), &at)?;
                let how = match (
                    m.get("skip").and_then(Value::as_str),
                    m.get("as").and_then(Value::as_str),
                ) {
                    (Some("empty_values"), None) => "Merge::SkipEmptyValues".to_string(),
                    (Some(e), None) if defs.get(e).is_some_and(|d| d.get("enum").is_some()) => {
                        format!("Merge::SkipKeys(|k| k.parse::<{e}>().is_ok())")
                    }
                    (None, Some(k)) => format!("Merge::As({k:?})"),
                    _ => return Err(err(format!("{at}: needs `skip: empty_values|<Enum>` or `as: <key>`"))),
                };
                let _ = writeln!(out_body, "        c.merge(&mut {ident}, key!({mkey:?}), {how}, {r})?;");
                keys.push(mkey.to_string());
            }
            // aliases: resolved after every property is read (an alias may be a property)
            for (i, a) in p
                .get(ALIASES)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("{at}/{ALIASES}/{i}");
                let akey = a
                    .get("key")
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("{at}: `key` must be a string")))?;
                let r = rule(a.get("rule").unwrap_or(&Value::Null), &at)?;
                if !ty.starts_with("::std::option::Option<::std::string::String") {
                    return Err(err(format!("{at}: aliases need a nullable string property")));
                }
                // a legacy key is always read (a wrong type is an error naming it), used only
                // when the property is absent
                let value = match fields.iter().find(|g| g.key == akey) {
                    Some(g) if strip => format!("crate::lenient::stripped({}.as_deref())", g.ident),
                    Some(g) => format!("{}.clone()", g.ident),
                    None => {
                        let local = format!("legacy_{}", akey.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
                        let read = if strip { "stripped" } else { "opt_str" };
                        let _ = writeln!(out_body, "        let {local} = c.f.{read}(key!({akey:?}))?;");
                        local
                    }
                };
                if fields.iter().all(|g| g.key != akey) {
                    keys.push(akey.to_string());
                }
                let _ = writeln!(
                    tail,
                    "        if {ident}.is_none() {{\n            {ident} = {value};\n            if {ident}.is_some() {{\n                c.fire({r});\n            }}\n        }}"
                );
            }
            if let Some(x) = p.get(STRIP) {
                if x != &Value::Bool(true) || !ty.starts_with("::std::option::Option<::std::string::String") {
                    return Err(err(format!("{at}: `{STRIP}` must be true on a nullable string")));
                }
            }
        }
        let mut legacy = String::new();
        for (lkey, l) in def.get(LEGACY_KEYS).and_then(Value::as_object).into_iter().flatten() {
            let at = format!("{LEGACY_KEYS}/{lkey}");
            let r = rule(l.get("rule").unwrap_or(&Value::Null), &at)?;
            let read = l.get("read").and_then(Value::as_str).unwrap_or_default();
            if !NAMED_LEGACY.contains(&read) {
                return Err(err(format!("{at}: unknown `read` function `{read}`")));
            }
            let into = l
                .get("into")
                .and_then(Value::as_str)
                .and_then(|k| fields.iter().find(|f| f.key == k))
                .ok_or_else(|| err(format!("{at}: `into` must name a property")))?;
            let _ = writeln!(
                legacy,
                "        if let Some(v) = c.f.take(key!({lkey:?})) {{\n            crate::lenient::{read}(c, key!({lkey:?}), v, &mut {})?;\n            c.fire({r});\n        }}",
                into.ident
            );
            keys.push(lkey.clone());
        }
        keys.sort();
        keys.dedup();
        if keys.len() > 40 {
            return Err(err(format!("{} keys; the slot reader holds at most 40", keys.len())));
        }
        // every key argument carries its index in the key table: a slot without a lookup
        let keyed = |text: &str| -> String {
            let mut out = String::new();
            let mut rest = text;
            while let Some(i) = rest.find("key!(\"") {
                out.push_str(&rest[..i]);
                let after = &rest[i + 6..];
                let end = after.find("\")").unwrap_or(after.len());
                let k = &after[..end];
                match keys.iter().position(|x| x == k) {
                    Some(idx) => {
                        let _ = write!(out, "({idx}, \"{k}\")");
                    }
                    None => {
                        let _ = write!(out, "\"{k}\"");
                    }
                }
                rest = after.get(end + 2..).unwrap_or("");
            }
            out.push_str(rest);
            out
        };
        let (nested_body, legacy, body, tail) = (keyed(&nested_body), keyed(&legacy), keyed(&body), keyed(&tail));
        let func = snake(name);
        let table = func.to_uppercase();
        let _ = writeln!(
            out,
            "\n    /// Every key the `{name}` reader knows: its properties and the legacy keys `schema/` declares.\n    pub(crate) const {table}_KEYS: &[&str] = &{keys:?};\n"
        );
        let mut nested = Vec::new();
        for (k, t) in &nested_keys {
            let idx = keys
                .iter()
                .position(|x| x == k)
                .ok_or_else(|| err(format!("nested key `{k}` is not in the key table")))?;
            nested.push(format!("({idx}, &{t}_TABLE)"));
        }
        let _ = writeln!(
            out,
            "    /// The `{name}` key table (keys whose object a nested reader reads, with its table).\n    pub(crate) static {table}_TABLE: crate::take::KeyTable = crate::take::KeyTable::new({table}_KEYS, &[{}]);\n",
            nested.join(", ")
        );
        let _ = writeln!(
            out,
            "    /// Reads `{name}` leniently: the `x-e2a` rules of its properties, then each by type and default.\n    pub(crate) fn {func}<S: Source>(c: &mut Ctx<'_, S>) -> crate::Result<{name}> {{"
        );
        out.push_str(&nested_body);
        out.push_str(&legacy);
        out.push_str(&body);
        out.push_str(&tail);
        let mut init: Vec<&String> = fields.iter().map(|f| &f.ident).collect();
        init.sort();
        let _ = writeln!(
            out,
            "        Ok({name} {{ {} }})\n    }}",
            init.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
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
