//! The canonical writers, generated from the structs and enums typify wrote: `impl
//! crate::write::WriteJson` that writes a struct's keys as literal text, in field order (serde's
//! order), each value by its type. The output is byte for byte what the type's derived
//! `Serialize` gives with `serde_json` (the e2a crate tests this on arbitrary messages).
//!
//! - An `x-e2a-write-all-keys` struct writes every key (its layout is fixed); a serde attribute
//!   the writer cannot honour there is a generation error, never a silent difference.
//! - Any other struct gets a writer when every field's serde attributes are ones the writer
//!   honours (`rename`, `default`, `deserialize_with`, and `skip_serializing_if` with
//!   `Option::is_none`, `Vec::is_empty` or `Map::is_empty`, and a last `flatten`ed JSON object
//!   of other members, written after the fields as serde writes it); a struct with another
//!   predicate keeps its derived `Serialize` only.
//! - An externally tagged enum of newtype variants (`{"task": {…}}`) gets one too.
//!
//! A field whose type has no writer is written by `serde_json`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

use crate::defaults::writes_all_keys;
use crate::syntax::{quote_type, serde_rename, type_name};
use crate::Error;

pub(crate) const STRING: &str = ":: std :: string :: String";
pub(crate) const MAP: &str = ":: serde_json :: Map < :: std :: string :: String , :: serde_json :: Value >";
pub(crate) const VALUE: &str = ":: serde_json :: Value";
const IS_NONE: &str = "::std::option::Option::is_none";
const VEC_EMPTY: &str = "::std::vec::Vec::is_empty";
const MAP_EMPTY: &str = "::serde_json::Map::is_empty";

pub(crate) const OPTION: &str = ":: std :: option :: Option <";
pub(crate) const VEC: &str = ":: std :: vec :: Vec <";

/// When a field is left out of the output.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Skip {
    /// Never.
    No,
    /// When `None` (the value written is the `Some`).
    IfNone,
    /// When empty (a `Vec` or a `Map`).
    IfEmpty,
    /// A `flatten`ed object, the last field: its members written after the others, when it has
    /// any.
    Flatten,
}

/// A field's serde attributes as the writer sees them: its `skip_serializing_if`, or the name of
/// an attribute it cannot honour.
pub(crate) fn serde_of(attrs: &[syn::Attribute]) -> Result<Skip, String> {
    let mut skip = Skip::No;
    let mut bad = None;
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = a.parse_nested_meta(|m| {
            let name = m.path.get_ident().map(ToString::to_string).unwrap_or_default();
            let value = if m.input.peek(syn::Token![=]) {
                let v: syn::Expr = m.value()?.parse()?;
                match v {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s), ..
                    }) => Some(s.value()),
                    _ => None,
                }
            } else {
                None
            };
            match (name.as_str(), value.as_deref()) {
                ("default" | "rename" | "deserialize_with", _) => {}
                ("skip_serializing_if", Some(IS_NONE)) => skip = Skip::IfNone,
                ("skip_serializing_if", Some(VEC_EMPTY | MAP_EMPTY)) => skip = Skip::IfEmpty,
                _ => bad = Some(name),
            }
            Ok(())
        });
    }
    match bad {
        Some(b) => Err(b),
        None => Ok(skip),
    }
}

/// The type inside `Option<…>` / `Vec<…>` (its last path segment's first type argument).
pub(crate) fn first_arg(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    match &p.path.segments.last()?.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// What the generator knows about the types of the file.
pub(crate) struct Types<'a> {
    /// Types with a generated writer.
    pub(crate) writable: &'a BTreeSet<String>,
    /// String enums with `as_str`.
    pub(crate) enums: &'a BTreeSet<String>,
    /// Structs with an `into_object` ([`crate::objects`]).
    pub(crate) objects: &'a BTreeSet<String>,
}

impl Types<'_> {
    /// The bare name of `ty` when it is one of the file's types (no generic arguments).
    pub(crate) fn own(&self, ty: &syn::Type) -> Option<String> {
        let t = quote_type(ty);
        (!t.contains('<')).then(|| type_name(ty)).flatten()
    }

    /// Whether values of `ty` implement `crate::write::WriteJson`: strings, booleans, 64-bit
    /// integers, objects, any JSON value, the file's writable types, and options and arrays of
    /// them.
    fn writes(&self, ty: &syn::Type) -> bool {
        let t = quote_type(ty);
        if [STRING, "bool", "u64", "i64", MAP, VALUE].contains(&t.as_str()) {
            return true;
        }
        if t.starts_with(OPTION) || t.starts_with(VEC) {
            return first_arg(ty).is_some_and(|inner| self.writes(inner));
        }
        self.own(ty).is_some_and(|n| self.writable.contains(&n))
    }

    /// The write of the value `r` (an expression of type `&ty`: `v` or `&self.field`).
    pub(crate) fn write(&self, r: &str, ty: &syn::Type) -> String {
        if self.writes(ty) {
            format!("w.value({r});")
        } else if self.own(ty).is_some_and(|n| self.enums.contains(&n)) {
            // `r` as a method receiver
            let m = if r.starts_with('&') {
                format!("({r})")
            } else {
                r.to_string()
            };
            format!("w.value({m}.as_str());")
        } else {
            format!("w.serde({r});")
        }
    }
}

/// Whether `key` can be written as literal text between quotes (nothing to escape).
fn literal_key(key: &str) -> bool {
    key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One field as the writer sees it.
struct Plan<'a> {
    ident: String,
    key: String,
    ty: &'a syn::Type,
    skip: Skip,
}

/// The fields of `st`, or why the struct cannot have a writer.
fn plan(st: &syn::ItemStruct) -> Result<Vec<Plan<'_>>, String> {
    let mut out = Vec::new();
    for field in &st.fields {
        let Some(ident) = &field.ident else {
            return Err("a tuple struct cannot be written by key".into());
        };
        let flatten = crate::syntax::serde_names(&field.attrs, "flatten");
        let skip = match flatten {
            true if field_is_last(st, field) && quote_type(&field.ty) == MAP => Skip::Flatten,
            true => return Err(format!("{ident}: only a last flattened JSON object is supported")),
            false => serde_of(&field.attrs).map_err(|a| format!("{ident}: serde `{a}` is not supported"))?,
        };
        let ident = ident.to_string();
        let key = serde_rename(&field.attrs).unwrap_or_else(|| ident.trim_start_matches("r#").to_string());
        if !literal_key(&key) {
            return Err(format!("key {key:?} would need escaping"));
        }
        out.push(Plan {
            ident,
            key,
            ty: &field.ty,
            skip,
        });
    }
    if crate::syntax::serde_names_other_than(&st.attrs, &["deny_unknown_fields"]) {
        return Err("a struct-level serde attribute other than deny_unknown_fields".into());
    }
    Ok(out)
}

/// Whether `field` is the last of `st`'s fields.
fn field_is_last(st: &syn::ItemStruct, field: &syn::Field) -> bool {
    st.fields.iter().last().is_some_and(|f| f.ident == field.ident)
}

/// The newtype variants `(wire name, variant, inner type)` of an externally tagged enum, or
/// `None` when `e` is not one.
fn newtype_variants(e: &syn::ItemEnum) -> Option<Vec<(String, String, &syn::Type)>> {
    if e.attrs.iter().any(|a| a.path().is_ident("serde")) || e.variants.is_empty() {
        return None;
    }
    e.variants
        .iter()
        .map(|v| {
            let syn::Fields::Unnamed(f) = &v.fields else {
                return None;
            };
            if f.unnamed.len() != 1 {
                return None;
            }
            let only_rename = v.attrs.iter().filter(|a| a.path().is_ident("serde")).all(|a| {
                let mut ok = true;
                let _ = a.parse_nested_meta(|m| {
                    ok &= m.path.is_ident("rename");
                    if m.input.peek(syn::Token![=]) {
                        let _: syn::Expr = m.value()?.parse()?;
                    }
                    Ok(())
                });
                ok
            });
            if !only_rename {
                return None;
            }
            let name = v.ident.to_string();
            let wire = serde_rename(&v.attrs).unwrap_or_else(|| name.clone());
            literal_key(&wire).then_some((wire, name, &f.unnamed[0].ty))
        })
        .collect()
}

/// The structs and enums of `file` that get a generated writer (see the module docs).
pub(crate) fn writable(bundled: &Value, file: &syn::File) -> Result<BTreeSet<String>, Error> {
    let all_keys = |name: &str| writes_all_keys(bundled, name);
    let mut writable = BTreeSet::new();
    for item in &file.items {
        match item {
            syn::Item::Struct(st) => {
                let name = st.ident.to_string();
                match plan(st) {
                    Ok(_) => {
                        writable.insert(name);
                    }
                    Err(why) if all_keys(&name) => {
                        return Err(Error::Typify(format!("{name}: {why} (an x-e2a-write-all-keys struct)")));
                    }
                    Err(_) => {}
                }
            }
            syn::Item::Enum(e) if newtype_variants(e).is_some() => {
                writable.insert(e.ident.to_string());
            }
            _ => {}
        }
    }
    Ok(writable)
}

/// `impl WriteJson` for the structs and enums of `file` that can have one (see the module
/// docs). `enums` names the string enums (closed and open) that have `as_str`.
pub fn writers(bundled: &Value, file: &syn::File, enums: &BTreeSet<String>) -> Result<String, Error> {
    let all_keys = |name: &str| writes_all_keys(bundled, name);
    let writable = writable(bundled, file)?;
    if writable.is_empty() {
        return Ok(String::new());
    }
    let none = BTreeSet::new();
    let types = Types {
        writable: &writable,
        enums,
        objects: &none,
    };
    let mut out = String::from("\n// Canonical writers generated by e2a-codegen (not typify): `crate::write`.\n");
    for item in &file.items {
        let (name, fixed, body) = match item {
            syn::Item::Struct(st) if writable.contains(&st.ident.to_string()) => {
                let name = st.ident.to_string();
                let fields = plan(st).map_err(Error::Typify)?;
                let flattens = fields.iter().any(|f| f.skip == Skip::Flatten);
                let (fixed, body) = if !flattens && (all_keys(&name) || fields.iter().all(|f| f.skip == Skip::No)) {
                    struct_fixed(&fields, &types)
                } else {
                    struct_skipping(&fields, &types)
                };
                (name, fixed, body)
            }
            syn::Item::Enum(e) if writable.contains(&e.ident.to_string()) => {
                let Some(variants) = newtype_variants(e) else { continue };
                let mut body = String::from("        match self {\n");
                for (wire, variant, ty) in &variants {
                    let lit = format!("{{\"{wire}\":");
                    let _ = writeln!(
                        body,
                        "            Self::{variant}(v) => {{\n                w.raw({lit:?});\n                {}\n                w.raw(\"}}\");\n            }}",
                        types.write("v", ty)
                    );
                }
                body.push_str("        }\n");
                (e.ident.to_string(), 2, body)
            }
            _ => continue,
        };
        let _ = writeln!(
            out,
            "impl crate::write::WriteJson for {name} {{\n    const FIXED_LEN: usize = {fixed};\n    fn write_json(&self, w: &mut crate::write::JsonWriter) {{\n{body}    }}\n}}"
        );
    }
    Ok(out)
}

/// Every key written, with literal separators.
fn struct_fixed(fields: &[Plan<'_>], types: &Types<'_>) -> (usize, String) {
    let mut body = String::new();
    let mut fixed = 2;
    for (i, f) in fields.iter().enumerate() {
        let lit = format!("{}\"{}\":", if i == 0 { "{" } else { "," }, f.key);
        fixed += lit.len();
        let _ = writeln!(body, "        w.raw({lit:?});");
        let _ = writeln!(body, "        {}", types.write(&format!("&self.{}", f.ident), f.ty));
    }
    if fields.is_empty() {
        let _ = writeln!(body, "        w.raw(\"{{\");");
    }
    let _ = writeln!(body, "        w.raw(\"}}\");");
    (fixed, body)
}

/// Keys left out by `skip_serializing_if`: the separator is decided as the fields are written.
fn struct_skipping(fields: &[Plan<'_>], types: &Types<'_>) -> (usize, String) {
    let mut body = String::from("        let mut first = true;\n        w.raw(\"{\");\n");
    for f in fields {
        let key = format!("\"{}\":", f.key);
        match f.skip {
            Skip::No => {
                let _ = writeln!(body, "        w.key(&mut first, {key:?});");
                let _ = writeln!(body, "        {}", types.write(&format!("&self.{}", f.ident), f.ty));
            }
            Skip::IfEmpty => {
                let _ = writeln!(
                    body,
                    "        if !self.{}.is_empty() {{\n            w.key(&mut first, {key:?});\n            {}\n        }}",
                    f.ident,
                    types.write(&format!("&self.{}", f.ident), f.ty)
                );
            }
            Skip::IfNone => {
                let inner = first_arg(f.ty).unwrap_or(f.ty);
                let _ = writeln!(
                    body,
                    "        if let Some(v) = &self.{} {{\n            w.key(&mut first, {key:?});\n            {}\n        }}",
                    f.ident,
                    types.write("v", inner)
                );
            }
            Skip::Flatten => {
                let _ = writeln!(
                    body,
                    "        for (k, v) in &self.{} {{\n            w.member(&mut first, k, v);\n        }}",
                    f.ident
                );
            }
        }
    }
    body.push_str("        w.raw(\"}\");\n");
    (2, body)
}
