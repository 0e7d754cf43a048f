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

use serde_json::Value;

mod defaults;
pub mod docs;
mod enums;
mod error_tables;
pub mod frame;
pub mod lint;
mod objects;
pub mod openapi;
pub mod reader;
mod schema;
mod syntax;
pub mod writer;

pub use defaults::{WRITE_ALL_KEYS, X_DEFAULT};
pub use enums::OPEN_ENUM;
pub use error_tables::{A2A_ERROR_TABLE, ERROR_TABLE};
pub use schema::{bundle, canonical_json, collect_refs, load_schemas, schema_paths, sorted, SchemaFile};

use defaults::{default_impls, keep_every_key};
use enums::{closed_string_enums, enum_extras, open_enum_source, open_enums};
use error_tables::{a2a_error_table, error_table};

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

/// The `x-e2a-scalar` keyword: a definition read by a hand-written lenient scalar type (what
/// clients really send for it: `"5"` and `5.0` for an integer, `"true"` for a boolean).
pub const SCALAR: &str = "x-e2a-scalar";

/// The scalars `x-e2a-scalar` may name, and the type that reads each.
pub const SCALARS: [(&str, &str); 2] = [
    ("count", "crate::a2a::scalar::Count"),
    ("flag", "crate::a2a::scalar::Flag"),
];

/// Every definition of `bundled` with `x-e2a-scalar`, and the type that reads it.
fn scalar_types(bundled: &Value) -> Result<Vec<(String, &'static str)>, Error> {
    let defs = bundled.get("$defs").and_then(Value::as_object).into_iter().flatten();
    let mut out = Vec::new();
    for (name, def) in defs {
        let Some(scalar) = def.get(SCALAR) else { continue };
        let ty = SCALARS
            .iter()
            .find(|(k, _)| Some(*k) == scalar.as_str())
            .map(|(_, ty)| *ty)
            .ok_or_else(|| Error::Schema(format!("/$defs/{name}: {SCALAR} {scalar} is none of {SCALARS:?}")))?;
        out.push((name.clone(), ty));
    }
    Ok(out)
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
    // lenient scalars are read by their hand-written types (`x-e2a-scalar`)
    for (name, ty) in scalar_types(bundled)? {
        settings.with_replacement(name.as_str(), ty, [].into_iter());
    }
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
    let body = empty_object_defaults(&typed_maps(&prettyplease::unparse(&file)));
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
    let writable = writer::writable(bundled, &file)?;
    let none = std::collections::BTreeSet::new();
    let objects = objects::objects(
        &file,
        &writer::Types {
            writable: &writable,
            enums: &string_enums,
            objects: &none,
        },
    );
    let types = writer::Types {
        writable: &writable,
        enums: &string_enums,
        objects: &objects,
    };
    out.push_str(&frame::frames(bundled, &file, &types)?);
    out.push_str(&objects::objects_source(&file, &types)?);
    Ok(out)
}

/// A property whose default is `{}` (a config section: `"default": {}`) reads, when absent,
/// as `{}` would: every field at its own schema default. typify's default function builds the
/// struct with each field's `Default::default()` instead (an empty `bind`, a zero size), so
/// such a function is rewritten to the struct's own `Default`, which carries the schema's
/// defaults (a struct without one fails to compile, never silently).
fn empty_object_defaults(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push_str(line);
        out.push('\n');
        i += 1;
        let ty = line
            .trim()
            .strip_prefix("pub(super) fn ")
            .and_then(|r| r.split_once("() -> super::"))
            .and_then(|(_, ty)| ty.strip_suffix(" {"));
        let Some(ty) = ty else { continue };
        // `super::Ty {`, fields, `}` (the literal), `}` (the fn), each at the fn's indent + 4
        let indent = &line[..line.len() - line.trim_start().len()];
        let inner = format!("{indent}    ");
        if lines.get(i).copied() != Some(&format!("{inner}super::{ty} {{")) {
            continue;
        }
        let close = format!("{inner}}}");
        let Some(end) = lines[i + 1..].iter().position(|l| *l == close).map(|p| i + 1 + p) else {
            continue;
        };
        let fields = &lines[i + 1..end];
        if !fields.is_empty() && fields.iter().all(|l| l.trim().ends_with(": Default::default(),")) {
            out.push_str(&format!("{inner}::std::default::Default::default()\n"));
            i = end + 1;
        }
    }
    if !body.ends_with('\n') {
        out.pop();
    }
    out
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
            // (this field's: the one declared between it and the type)
            if let Some(at) = out.rfind(SKIP).filter(|at| out[*at..].matches(" pub ").count() == 1) {
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

/// `Debug` impls printing the redacted JSON of each of `names` (see [`strip_debug`]).
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
