//! The one generation function behind `build.rs` and `cargo xtask codegen`.
//!
//! [`generate`] is a pure, deterministic function from the `schema/` directory to a map of
//! output path → file contents. `build.rs` writes its Rust output into `OUT_DIR`; the xtask
//! writes (or checks) the committed copy under `generated/`. Both call this function with the
//! same settings, so they cannot disagree.

#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub mod docs;
pub mod lint;
pub mod openapi;
pub mod reader;
pub mod writer;

/// The exact typify version this generator is pinned to (recorded in generated headers).
pub const TYPIFY_VERSION: &str = "0.8.0";

/// Relative path (under `generated/`) of the generated Rust module.
pub const RUST_FILE: &str = "rust/e2a_types.rs";
/// Relative path (under `generated/`) of the bundled single-file schema.
pub const BUNDLE_FILE: &str = "schema/e2a.schema.json";
/// `$id` of the bundled schema.
pub const BUNDLE_ID: &str = "urn:e2a:schema:1.0";

/// Everything that can go wrong while generating.
#[derive(Debug)]
pub enum Error {
    /// A schema file could not be read.
    Io(PathBuf, std::io::Error),
    /// A schema file is not valid JSON.
    Json(PathBuf, serde_json::Error),
    /// The schemas are inconsistent (duplicate definition, bad `$ref`, lint failure…).
    Schema(String),
    /// typify rejected the bundled schema.
    Typify(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Json(p, e) => write!(f, "{}: invalid JSON: {e}", p.display()),
            Error::Schema(m) => write!(f, "schema error: {m}"),
            Error::Typify(m) => write!(f, "typify: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// One schema source file: its file name (e.g. `envelope.json`) and parsed contents.
#[derive(Debug, Clone)]
pub struct SchemaFile {
    /// File name relative to `schema/`.
    pub name: String,
    /// Parsed JSON.
    pub value: Value,
}

/// The schema files of `dir` (`*.json`), sorted by name.
pub fn schema_paths(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::Io(dir.to_path_buf(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Reads every `*.json` file of `dir`, sorted by name.
pub fn load_schemas(dir: &Path) -> Result<Vec<SchemaFile>, Error> {
    schema_paths(dir)?
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|e| Error::Io(p.clone(), e))?;
            let value = serde_json::from_str(&text).map_err(|e| Error::Json(p.clone(), e))?;
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(SchemaFile { name, value })
        })
        .collect()
}

/// Bundles the schema files into one draft 2020-12 document with every definition under
/// `$defs` and every `$ref` rewritten to `#/$defs/Name`. Fails on duplicate names and on
/// references that do not resolve.
pub fn bundle(files: &[SchemaFile]) -> Result<Value, Error> {
    let mut defs = Map::new();
    let mut origin: BTreeMap<String, String> = BTreeMap::new();
    for f in files {
        let Some(fdefs) = f.value.get("$defs").and_then(Value::as_object) else {
            return Err(Error::Schema(format!("{}: no `$defs` object", f.name)));
        };
        for (k, v) in fdefs {
            if let Some(prev) = origin.insert(k.clone(), f.name.clone()) {
                return Err(Error::Schema(format!("`{k}` is defined in both {prev} and {}", f.name)));
            }
            let mut v = v.clone();
            rewrite_refs(&mut v, &f.name)?;
            defs.insert(k.clone(), v);
        }
    }
    let mut missing = Vec::new();
    collect_refs(&Value::Object(defs.clone()), &mut |r| {
        let name = r.trim_start_matches("#/$defs/");
        if !defs.contains_key(name) {
            missing.push(r.to_string());
        }
    });
    if !missing.is_empty() {
        return Err(Error::Schema(format!("unresolved $ref: {}", missing.join(", "))));
    }
    let mut root = Map::new();
    root.insert("$schema".into(), "https://json-schema.org/draft/2020-12/schema".into());
    root.insert("$id".into(), BUNDLE_ID.into());
    root.insert(
        "description".into(),
        "E2A (Everything-to-Agent) protocol 1.0: all E2A types in one document, bundled from e2a's schema/ directory. Generated; do not edit.".into(),
    );
    root.insert("$defs".into(), Value::Object(defs));
    Ok(sorted(Value::Object(root)))
}

fn rewrite_refs(v: &mut Value, file: &str) -> Result<(), Error> {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                let (target_file, pointer) = r.split_once('#').unwrap_or((r.as_str(), ""));
                if !target_file.is_empty() && !target_file.ends_with(".json") {
                    return Err(Error::Schema(format!("{file}: unsupported $ref `{r}`")));
                }
                let Some(name) = pointer.strip_prefix("/$defs/") else {
                    return Err(Error::Schema(format!("{file}: $ref `{r}` must point at /$defs/Name")));
                };
                if name.contains('/') {
                    return Err(Error::Schema(format!("{file}: nested $ref pointer `{r}`")));
                }
                *r = format!("#/$defs/{name}");
            }
            for x in m.values_mut() {
                rewrite_refs(x, file)?;
            }
        }
        Value::Array(a) => {
            for x in a {
                rewrite_refs(x, file)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Calls `f` with every `$ref` string found in `v`.
pub fn collect_refs(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                f(r);
            }
            m.values().for_each(|x| collect_refs(x, f));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, f)),
        _ => {}
    }
}

/// `v` with every object's keys in sorted order. The generator must not depend on whether
/// serde_json's `preserve_order` feature happens to be enabled in a build (a dependency of a
/// dependency can turn it on), so every input is canonicalized first.
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Serializes a JSON value the canonical way used for every generated JSON file:
/// sorted keys, 2-space indentation, LF, trailing newline.
pub fn canonical_json(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(&sorted(v.clone())).unwrap_or_default();
    s.push('\n');
    s
}

/// Runs typify on the bundled schema and returns formatted Rust source, with a header and
/// the hand-free extras (`ALL` lists and `as_str` on every string enum).
pub fn rust_source(bundled: &Value) -> Result<String, Error> {
    let open = open_enums(bundled)?;
    let root: schemars::schema::RootSchema =
        serde_json::from_value(bundled.clone()).map_err(|e| Error::Typify(e.to_string()))?;
    let mut settings = typify::TypeSpaceSettings::default();
    settings
        .with_map_type("::serde_json::Map".to_string())
        .with_derive("PartialEq".to_string())
        .with_replacement("SecretString", "crate::secret::SecretString", [].into_iter())
        .with_replacement("SecretHeaders", "crate::secret::SecretHeaders", [].into_iter());
    // open enums are written by `open_enum_source`, not typify
    for (name, _) in &open {
        settings.with_replacement(name.as_str(), name.as_str(), [].into_iter());
    }
    // heck would spell these `E2aEnvelope`…; keep the protocol's own names.
    for name in ["E2AEnvelope", "E2AResponse", "E2AProvenance", "E2AAuth", "E2AFileRef"] {
        let heck = format!("E2a{}", &name[3..]);
        settings.with_patch(heck, typify::TypeSpacePatch::default().with_rename(name));
    }
    let mut space = typify::TypeSpace::new(&settings);
    space.add_root_schema(root).map_err(|e| Error::Typify(e.to_string()))?;
    if space.uses_chrono() || space.uses_regress() || space.uses_uuid() {
        return Err(Error::Typify(
            "generated code would need chrono/regress/uuid; e2a allows none of them".into(),
        ));
    }
    let mut file: syn::File = syn::parse2(space.to_stream()).map_err(|e| Error::Typify(e.to_string()))?;
    let redacted_debug = strip_debug(&mut file);
    keep_every_key(&mut file, bundled);
    let defaults = default_impls(&file, bundled)?;
    let body = typed_maps(&prettyplease::unparse(&file));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// @generated by e2a-codegen from schema/ (typify {TYPIFY_VERSION}). DO NOT EDIT.\n\
         // Regenerate with `cargo xtask codegen`; `cargo xtask check-drift` fails when this is stale."
    );
    out.push_str(&body);
    for (name, values) in &open {
        out.push_str(&open_enum_source(name, values, bundled));
    }
    out.push_str(&enum_extras(bundled, &file));
    out.push_str(&error_table(bundled, &file)?);
    out.push_str(&a2a_error_table(bundled, &file)?);
    out.push_str(&debug_impls(&redacted_debug));
    out.push_str(&defaults);
    out.push_str(&reader::readers(bundled, &file)?);
    let mut string_enums: std::collections::BTreeSet<String> = open.iter().map(|(n, _)| n.clone()).collect();
    string_enums.extend(closed_string_enums(bundled, &file).map(|(e, _)| e.ident.to_string()));
    out.push_str(&writer::writers(bundled, &file, &string_enums)?);
    Ok(out)
}

/// `serde_json::Map` holds only `Value`s (it deserializes no other value type), so a map of
/// typed values (`additionalProperties: {"$ref": …}`, e.g. the config file's `[agents.NAME]`)
/// becomes a `BTreeMap`: sorted, like every other generated output.
fn typed_maps(body: &str) -> String {
    const MAP: &str = "::serde_json::Map<::std::string::String, ";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find(MAP) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MAP.len()..];
        if after.starts_with("::serde_json::Value>") {
            out.push_str(MAP);
        } else {
            // the field's `skip_serializing_if` names the map type too
            const SKIP: &str = "\":: serde_json :: Map::is_empty\"";
            if let Some(at) = out.rfind(SKIP).filter(|at| out[*at..].matches('\n').count() == 1) {
                out.replace_range(at..at + SKIP.len(), "\":: std :: collections :: BTreeMap::is_empty\"");
            }
            out.push_str("::std::collections::BTreeMap<::std::string::String, ");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Replaces the derived `Debug` of every generated struct (structs carry free-form JSON that may
/// hold secrets) by one that prints the redacted JSON through `crate::redact::debug_redacted`.
/// Returns the names of the structs changed.
fn strip_debug(file: &mut syn::File) -> Vec<String> {
    let mut changed = Vec::new();
    for item in &mut file.items {
        let syn::Item::Struct(st) = item else { continue };
        changed.push(st.ident.to_string());
        for attr in st.attrs.iter_mut().filter(|a| a.path().is_ident("derive")) {
            let Ok(list) =
                attr.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
            else {
                continue;
            };
            let kept: Vec<&syn::Path> = list.iter().filter(|p| !p.is_ident("Debug")).collect();
            *attr = syn::parse_quote!(#[derive(#(#kept),*)]);
        }
    }
    changed
}

/// The `x-e2a-write-all-keys` keyword of a definition: its canonical output carries every
/// property, nulls and empty containers included (the reference `to_dict()`), so the
/// `skip_serializing_if` that typify puts on optional fields is removed from that struct.
pub const WRITE_ALL_KEYS: &str = "x-e2a-write-all-keys";

/// Whether the definition `name` of `bundled` says `x-e2a-write-all-keys: true`.
pub(crate) fn writes_all_keys(bundled: &Value, name: &str) -> bool {
    bundled
        .pointer(&format!("/$defs/{name}/{WRITE_ALL_KEYS}"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn keep_every_key(file: &mut syn::File, bundled: &Value) {
    for item in &mut file.items {
        let syn::Item::Struct(st) = item else { continue };
        if !writes_all_keys(bundled, &st.ident.to_string()) {
            continue;
        }
        for field in st.fields.iter_mut() {
            field.attrs.retain_mut(|attr| {
                if !attr.path().is_ident("serde") {
                    return true;
                }
                let Ok(list) =
                    attr.parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                else {
                    return true;
                };
                let kept: Vec<&syn::Meta> = list
                    .iter()
                    .filter(|m| !m.path().is_ident("skip_serializing_if"))
                    .collect();
                if kept.is_empty() {
                    return false;
                }
                *attr = syn::parse_quote!(#[serde(#(#kept),*)]);
                true
            });
        }
    }
}

/// The `x-e2a-default` keyword: the value a *required* property takes when a message is built
/// or read leniently without it. (A JSON Schema `default` on a required property would make the
/// TypeScript and pydantic exports treat it as optional.)
pub const X_DEFAULT: &str = "x-e2a-default";

/// `impl Default` for every `x-e2a-write-all-keys` struct typify did not give one (typify only
/// defaults optional fields), built from the schema's `default` values: a field with a serde
/// default calls it; otherwise the property's `default` or `x-e2a-default` (null, boolean, integer, string, empty
/// container, or a `$ref`'d struct's own defaults) or, without one, `None` for a nullable field.
/// Any other case is a schema error, so a default is never invented.
fn default_impls(file: &syn::File, bundled: &Value) -> Result<String, Error> {
    let Some(defs) = bundled.get("$defs").and_then(Value::as_object) else {
        return Ok(String::new());
    };
    let has_default: Vec<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Impl(im) if im.trait_.as_ref().is_some_and(|(p, _)| path_ends_with(p, "Default")) => {
                type_name(&im.self_ty)
            }
            syn::Item::Struct(st) if derives(&st.attrs, "Default") => Some(st.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut out = String::new();
    for item in &file.items {
        let syn::Item::Struct(st) = item else { continue };
        let name = st.ident.to_string();
        let Some(def) = defs.get(&name) else { continue };
        if def.get(WRITE_ALL_KEYS).and_then(Value::as_bool) != Some(true) || has_default.contains(&name) {
            continue;
        }
        let props = def.get("properties").and_then(Value::as_object);
        let mut fields = String::new();
        for field in &st.fields {
            let Some(ident) = &field.ident else { continue };
            let key = serde_rename(&field.attrs).unwrap_or_else(|| ident.to_string());
            let prop = props.and_then(|p| p.get(&key));
            let expr = default_expr(field, prop, defs, &has_default)
                .map_err(|why| Error::Schema(format!("/$defs/{name}/properties/{key}: {why}")))?;
            let _ = writeln!(fields, "            {ident}: {expr},");
        }
        let _ = writeln!(
            out,
            "impl ::std::default::Default for {name} {{\n    /// The schema's defaults (`default` of each property; null where none is declared).\n    fn default() -> Self {{\n        Self {{\n{fields}        }}\n    }}\n}}"
        );
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            "\n// `Default` impls generated by e2a-codegen from the schema's `default` values.\n",
        );
    }
    Ok(out)
}

fn default_expr(
    field: &syn::Field,
    prop: Option<&Value>,
    defs: &Map<String, Value>,
    has_default: &[String],
) -> Result<String, String> {
    if let Some(d) = serde_default(&field.attrs) {
        return Ok(match d {
            Some(path) => format!("{path}()"),
            None => "::std::default::Default::default()".into(),
        });
    }
    let ty = &field.ty;
    let ty_text = quote_type(ty);
    let is_option = ty_text.starts_with(":: std :: option :: Option");
    match prop.and_then(|p| p.get("default").or_else(|| p.get(X_DEFAULT))) {
        Some(Value::Null) if is_option => Ok("::std::option::Option::None".into()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        Some(Value::String(s)) if ty_text.ends_with("String") => Ok(format!("{s:?}.to_string()")),
        Some(Value::String(s)) if prop.and_then(|p| p.get("$ref")).is_some() => {
            Ok(format!("<{ty_text} as ::std::convert::From<&str>>::from({s:?})"))
        }
        Some(Value::Object(m)) if m.is_empty() => Ok("::std::default::Default::default()".into()),
        Some(Value::Array(a)) if a.is_empty() => Ok("::std::default::Default::default()".into()),
        Some(d @ Value::Object(_)) => {
            let target = prop
                .and_then(|p| p.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .ok_or("an object default needs a `$ref` to a struct")?;
            if !has_default.iter().any(|n| n == target) {
                return Err(format!("`{target}` has no Default to match this default"));
            }
            let own = defaults_object(defs.get(target).ok_or("unresolved $ref")?)?;
            if &own != d {
                return Err(format!("default differs from `{target}`'s own defaults {own}"));
            }
            Ok(format!("<{target} as ::std::default::Default>::default()"))
        }
        None if is_option => Ok("::std::option::Option::None".into()),
        Some(other) => Err(format!("unsupported default {other} for type `{ty_text}`")),
        None => Err(format!("required field of type `{ty_text}` has no `default`")),
    }
}

/// The object a struct definition defaults to: each property's `default`, else null for a
/// nullable property, else an empty object/array for containers.
fn defaults_object(def: &Value) -> Result<Value, String> {
    let mut m = Map::new();
    for (k, p) in def.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let v = match p.get("default").or_else(|| p.get(X_DEFAULT)) {
            Some(d) => d.clone(),
            None => match p.get("type") {
                Some(Value::Array(ts)) if ts.iter().any(|t| t == "null") => Value::Null,
                Some(t) if t == "object" => Value::Object(Map::new()),
                Some(t) if t == "array" => Value::Array(Vec::new()),
                _ if p.get("anyOf").is_some() => Value::Null,
                _ => return Err(format!("property `{k}` has no default")),
            },
        };
        m.insert(k.clone(), v);
    }
    Ok(Value::Object(m))
}

/// `Some(Some(path))` for `#[serde(default = "path")]`, `Some(None)` for a bare `default`.
fn serde_default(attrs: &[syn::Attribute]) -> Option<Option<String>> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("default") {
                found = Some(match m.value() {
                    Ok(v) => Some(v.parse::<syn::LitStr>()?.value()),
                    Err(_) => None,
                });
            } else if m.input.peek(syn::Token![=]) {
                let _: syn::Expr = m.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

fn quote_type(ty: &syn::Type) -> String {
    use quote::ToTokens;
    ty.to_token_stream().to_string()
}

fn path_ends_with(p: &syn::Path, name: &str) -> bool {
    p.segments.last().is_some_and(|s| s.ident == name)
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        a.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
            .is_ok_and(|l| l.iter().any(|p| path_ends_with(p, name)))
    })
}

fn debug_impls(names: &[String]) -> String {
    let mut out = String::from("\n// Redacting `Debug` impls generated by e2a-codegen (not typify).\n");
    for n in names {
        let _ = writeln!(
            out,
            "impl ::std::fmt::Debug for {n} {{\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n        crate::redact::debug_redacted(f, {n:?}, self)\n    }}\n}}"
        );
    }
    out
}

/// The `x-e2a-open-enum` keyword: a string type with known values (listed) whose other values
/// are kept unchanged. typify has no open enums (its `anyOf` rendering fails at run time), so
/// e2a-codegen writes them: the known variants plus `Other(String)`, serialized as the string.
pub const OPEN_ENUM: &str = "x-e2a-open-enum";

/// `(name, known values)` of every open-enum definition.
fn open_enums(bundled: &Value) -> Result<Vec<(String, Vec<String>)>, Error> {
    let Some(defs) = bundled.get("$defs").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, def) in defs {
        let Some(values) = def.get(OPEN_ENUM) else { continue };
        let values: Vec<String> = values
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        if values.is_empty() || def.get("type") != Some(&Value::from("string")) || def.get("enum").is_some() {
            return Err(Error::Schema(format!(
                "/$defs/{name}: `{OPEN_ENUM}` needs `type: string`, no `enum`, and a non-empty list of strings"
            )));
        }
        let mut idents: Vec<String> = values.iter().map(|v| variant_ident(v)).collect();
        idents.sort();
        idents.dedup();
        if idents.len() != values.len() || idents.iter().any(|i| i == "Other" || i.is_empty()) {
            return Err(Error::Schema(format!(
                "/$defs/{name}: `{OPEN_ENUM}` values give clashing variant names"
            )));
        }
        out.push((name.clone(), values));
    }
    Ok(out)
}

/// A wire value as a variant name: split on non-alphanumerics, each part's first letter
/// uppercased (`e2a.complete` → `E2aComplete`, `in_progress` → `InProgress`).
fn variant_ident(value: &str) -> String {
    value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<String>()
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .to_string()
}

fn open_enum_source(name: &str, values: &[String], bundled: &Value) -> String {
    let desc = bundled
        .pointer(&format!("/$defs/{name}/description"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut o = String::new();
    let _ = writeln!(o, "\n///{desc}");
    let _ = writeln!(
        o,
        "#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum {name} {{"
    );
    for v in values {
        let _ = writeln!(o, "    ///`{v}`\n    {},", variant_ident(v));
    }
    let _ = writeln!(
        o,
        "    /// Any other value, kept unchanged.\n    Other(::std::string::String),\n}}"
    );
    let _ = writeln!(o, "impl {name} {{");
    let _ = writeln!(
        o,
        "    /// Every known value, in schema order.\n    pub const ALL: [Self; {}] = [",
        values.len()
    );
    for v in values {
        let _ = writeln!(o, "        Self::{},", variant_ident(v));
    }
    let _ = writeln!(
        o,
        "    ];\n    /// The wire string of this value.\n    pub fn as_str(&self) -> &str {{\n        match self {{"
    );
    for v in values {
        let _ = writeln!(o, "            Self::{} => {v:?},", variant_ident(v));
    }
    let _ = writeln!(o, "            Self::Other(s) => s.as_str(),\n        }}\n    }}");
    let _ = writeln!(o, "    /// Whether this is one of the known values.\n    pub fn is_known(&self) -> bool {{\n        !matches!(self, Self::Other(_))\n    }}\n}}");
    let _ = writeln!(
        o,
        "impl ::std::convert::From<&str> for {name} {{\n    fn from(value: &str) -> Self {{\n        match value {{"
    );
    for v in values {
        let _ = writeln!(o, "            {v:?} => Self::{},", variant_ident(v));
    }
    let _ = writeln!(
        o,
        "            other => Self::Other(other.to_string()),\n        }}\n    }}\n}}"
    );
    let _ = writeln!(o, "impl ::std::convert::From<::std::string::String> for {name} {{\n    fn from(value: ::std::string::String) -> Self {{\n        match Self::from(value.as_str()) {{\n            Self::Other(_) => Self::Other(value),\n            known => known,\n        }}\n    }}\n}}");
    let _ = writeln!(o, "impl ::std::str::FromStr for {name} {{\n    type Err = ::std::convert::Infallible;\n    fn from_str(value: &str) -> ::std::result::Result<Self, Self::Err> {{\n        Ok(Self::from(value))\n    }}\n}}");
    let _ = writeln!(o, "impl ::std::fmt::Display for {name} {{\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n        f.write_str(self.as_str())\n    }}\n}}");
    let _ = writeln!(o, "impl ::std::cmp::PartialEq<str> for {name} {{\n    fn eq(&self, other: &str) -> bool {{\n        self.as_str() == other\n    }}\n}}");
    let _ = writeln!(o, "impl ::std::cmp::PartialEq<&str> for {name} {{\n    fn eq(&self, other: &&str) -> bool {{\n        self.as_str() == *other\n    }}\n}}");
    let _ = writeln!(o, "impl ::serde::Serialize for {name} {{\n    fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {{\n        serializer.serialize_str(self.as_str())\n    }}\n}}");
    let _ = writeln!(o, "impl<'de> ::serde::Deserialize<'de> for {name} {{\n    fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {{\n        <::std::string::String as ::serde::Deserialize>::deserialize(deserializer).map(Self::from)\n    }}\n}}");
    o
}

/// The closed string enums of `file` (typify's enums whose definition lists `enum` values), each
/// with those values in schema order: what `enum_extras` gives `ALL` and `as_str`.
fn closed_string_enums<'a>(
    bundled: &'a Value,
    file: &'a syn::File,
) -> impl Iterator<Item = (&'a syn::ItemEnum, &'a Vec<Value>)> {
    let defs = bundled.get("$defs").and_then(Value::as_object);
    file.items.iter().filter_map(move |item| match item {
        syn::Item::Enum(e) => {
            let values = defs?.get(&e.ident.to_string())?.get("enum")?.as_array()?;
            Some((e, values))
        }
        _ => None,
    })
}

/// `impl` blocks for every closed string enum in `$defs`: `ALL` (schema order) and `as_str`.
/// Variant names are read from typify's own output (`#[serde(rename = "…")]`), never guessed.
fn enum_extras(bundled: &Value, file: &syn::File) -> String {
    let mut out = String::from("\n// Extras generated by e2a-codegen (not typify): ordered value lists.\n");
    for (e, values) in closed_string_enums(bundled, file) {
        let name = e.ident.to_string();
        let variants = variant_values(e);
        let pairs: Vec<(&str, &String)> = values
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|v| variants.get(v).map(|n| (v, n)))
            .collect();
        let _ = writeln!(out, "impl {name} {{");
        let _ = writeln!(out, "    /// Every value, in schema order.");
        let _ = writeln!(out, "    pub const ALL: [Self; {}] = [", pairs.len());
        for (_, n) in &pairs {
            let _ = writeln!(out, "        Self::{n},");
        }
        let _ = writeln!(out, "    ];");
        let _ = writeln!(out, "    /// The wire string of this value.");
        let _ = writeln!(out, "    pub const fn as_str(self) -> &'static str {{");
        let _ = writeln!(out, "        match self {{");
        for (v, n) in &pairs {
            let _ = writeln!(out, "            Self::{n} => {v:?},");
        }
        let _ = writeln!(out, "        }}\n    }}\n}}");
    }
    if let Some(v) = bundled
        .pointer("/$defs/E2AEnvelope/properties/protocol_version/default")
        .and_then(Value::as_str)
    {
        let _ = writeln!(
            out,
            "/// The E2A protocol version this crate speaks (`E2A_PROTOCOL_VERSION`)."
        );
        let _ = writeln!(out, "pub const E2A_PROTOCOL_VERSION: &str = {v:?};");
    }
    out
}

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

/// The `x-e2a-error-table` keyword: rows of how each value of a failure-kind enum reads on
/// every protocol. Rendered as `ERROR_TABLE: [crate::taxonomy::ErrorMapping; N]`.
pub const ERROR_TABLE: &str = "x-e2a-error-table";

/// `ERROR_TABLE` from the one definition carrying [`ERROR_TABLE`]; every enum value has exactly
/// one row and every row's `e2a_code` is a value of `ErrorCode`.
fn error_table(bundled: &Value, file: &syn::File) -> Result<String, Error> {
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
        let (s, n) = (
            |k: &str| cell_str(row, i, k).map_err(err),
            |k: &str| cell_int(row, i, k).map_err(err),
        );
        let kind = s("kind")?;
        let variant = variants
            .get(kind)
            .ok_or_else(|| err(format!("row {i}: `{kind}` is not a value of {name}")))?;
        if seen.contains(&kind) {
            return Err(err(format!("`{kind}` has two rows")));
        }
        seen.push(kind);
        let code = s("e2a_code")?;
        if !codes.contains(&code) {
            return Err(err(format!("row {i}: `{code}` is not a value of ErrorCode")));
        }
        let state = match row.get("a2a_task_state") {
            Some(Value::String(t)) => format!("Some({t:?})"),
            Some(Value::Null) | None => "None".into(),
            Some(_) => return Err(err(format!("row {i}: `a2a_task_state` must be a string or null"))),
        };
        let status = u16::try_from(n("http_status")?).map_err(|_| err(format!("row {i}: bad http_status")))?;
        let _ = writeln!(
            out,
            "    crate::taxonomy::ErrorMapping {{ kind: {name}::{variant}, name: {kind:?}, e2a_code: {code:?}, acp_code: {}, a2a_code: {}, a2a_task_state: {state}, agui_code: {:?}, http_status: {status}, safe_message: {:?} }},",
            n("acp_code")?,
            n("a2a_code")?,
            s("agui_code")?,
            s("safe_message")?,
        );
    }
    if seen.len() != variants.len() {
        return Err(err(format!("{} rows for {} values", seen.len(), variants.len())));
    }
    out.push_str("];\n");
    Ok(out)
}

/// The `x-e2a-a2a-error-table` keyword: rows of how each A2A error reads on the A2A bindings.
/// Rendered as `A2A_ERROR_TABLE: [crate::a2a::errors::A2aErrorMapping; N]`.
pub const A2A_ERROR_TABLE: &str = "x-e2a-a2a-error-table";

/// `A2A_ERROR_TABLE` from the one definition carrying [`A2A_ERROR_TABLE`]; every enum value has
/// exactly one row and every code one kind (so the table reads both ways).
fn a2a_error_table(bundled: &Value, file: &syn::File) -> Result<String, Error> {
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
        let (s, n) = (
            |k: &str| cell_str(row, i, k).map_err(err),
            |k: &str| cell_int(row, i, k).map_err(err),
        );
        let kind = s("kind")?;
        let variant = variants
            .get(kind)
            .ok_or_else(|| err(format!("row {i}: `{kind}` is not a value of {name}")))?;
        let code = n("code")?;
        if kinds.contains(&kind) || codes.contains(&code) {
            return Err(err(format!("row {i}: `{kind}` or {code} has two rows")));
        }
        kinds.push(kind);
        codes.push(code);
        let status = u16::try_from(n("http_status")?).map_err(|_| err(format!("row {i}: bad http_status")))?;
        let _ = writeln!(
            out,
            "    crate::a2a::errors::A2aErrorMapping {{ kind: {name}::{variant}, code: {code}, reason: {:?}, http_status: {status}, grpc_status: {:?} }},",
            s("reason")?,
            s("grpc_status")?,
        );
    }
    if kinds.len() != variants.len() {
        return Err(err(format!("{} rows for {} values", kinds.len(), variants.len())));
    }
    out.push_str("];\n");
    Ok(out)
}

/// wire value → variant name of the typify enum `name`.
fn enum_variants(file: &syn::File, name: &str) -> Option<BTreeMap<String, String>> {
    file.items.iter().find_map(|item| match item {
        syn::Item::Enum(e) if e.ident == name => Some(variant_values(e)),
        _ => None,
    })
}

/// wire value → variant name of a typify enum: its `serde(rename)`, else (a value that is
/// already a Rust name, `SendMessage`) the variant's own name.
fn variant_values(e: &syn::ItemEnum) -> BTreeMap<String, String> {
    e.variants
        .iter()
        .map(|v| {
            let name = v.ident.to_string();
            (serde_rename(&v.attrs).unwrap_or_else(|| name.clone()), name)
        })
        .collect()
}

fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut found = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("rename") {
                let lit: syn::LitStr = m.value()?.parse()?;
                found = Some(lit.value());
            }
            Ok(())
        });
    }
    found
}

/// Generates every artifact from the schema directory: path (relative to `generated/`) →
/// contents. Deterministic: the same schemas give the same bytes on every machine.
pub fn generate(schema_dir: &Path) -> Result<BTreeMap<String, String>, Error> {
    let files = load_schemas(schema_dir)?;
    let bundled = bundle(&files)?;
    let problems = lint::lint(&bundled);
    if !problems.is_empty() {
        return Err(Error::Schema(format!("lint failed:\n  {}", problems.join("\n  "))));
    }
    let mut out = BTreeMap::new();
    out.insert(RUST_FILE.to_string(), rust_source(&bundled)?);
    out.insert(BUNDLE_FILE.to_string(), canonical_json(&bundled));
    Ok(out)
}

/// Path of the hand-written OpenAPI paths source, relative to the repository root.
pub const OPENAPI_PATHS_FILE: &str = "api/openapi.paths.json";
/// Path of the generated OpenAPI document, relative to the repository root.
pub const OPENAPI_FILE: &str = "generated/openapi.json";
/// Path of the protocol document whose tables are generated, relative to the repository root.
pub const PROTOCOL_DOC: &str = "docs/protocol.md";
/// Path of the gateway's README, whose config file tables are generated.
pub const GATEWAY_DOC: &str = "gateway/README.md";

fn read(root: &Path, rel: &str) -> Result<String, Error> {
    std::fs::read_to_string(root.join(rel)).map_err(|e| Error::Io(root.join(rel), e))
}

/// Every artifact the project commits that Rust alone generates, keyed by path relative to the
/// repository root: `generated/rust/…`, `generated/schema/…`, `generated/openapi.json` and
/// `docs/protocol.md` and `gateway/README.md` (tables between the markers). `root` is the
/// repository root.
pub fn generate_all(root: &Path) -> Result<BTreeMap<String, String>, Error> {
    let mut out: BTreeMap<String, String> = generate(&root.join("schema"))?
        .into_iter()
        .map(|(k, v)| (format!("generated/{k}"), v))
        .collect();
    let bundled: Value = serde_json::from_str(&out[&format!("generated/{BUNDLE_FILE}")])
        .map_err(|e| Error::Json(PathBuf::from(BUNDLE_FILE), e))?;
    let paths: Value = serde_json::from_str(&read(root, OPENAPI_PATHS_FILE)?)
        .map_err(|e| Error::Json(root.join(OPENAPI_PATHS_FILE), e))?;
    out.insert(
        OPENAPI_FILE.into(),
        canonical_json(&openapi::openapi(&bundled, &paths)?),
    );
    out.insert(PROTOCOL_DOC.into(), docs::splice(&read(root, PROTOCOL_DOC)?, &bundled)?);
    out.insert(
        GATEWAY_DOC.into(),
        docs::splice_config(&read(root, GATEWAY_DOC)?, &bundled)?,
    );
    Ok(out)
}

/// Lints the schemas of `dir` (bundling first): every problem, or empty when clean.
pub fn lint_dir(dir: &Path) -> Result<Vec<String>, Error> {
    Ok(lint::lint(&bundle(&load_schemas(dir)?)?))
}
