//! What e2a-codegen reads back from typify's syntax tree: serde attributes, type names and
//! the wire values of enum variants (never guessed from the schema).

use std::collections::BTreeMap;

/// `Some(Some(path))` for `#[serde(default = "path")]`, `Some(None)` for a bare `default`.
pub(crate) fn serde_default(attrs: &[syn::Attribute]) -> Option<Option<String>> {
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

/// The tokens of a type as text (`:: std :: string :: String`).
pub(crate) fn quote_type(ty: &syn::Type) -> String {
    use quote::ToTokens;
    ty.to_token_stream().to_string()
}

/// Whether the last segment of `p` is `name`.
pub(crate) fn path_ends_with(p: &syn::Path, name: &str) -> bool {
    p.segments.last().is_some_and(|s| s.ident == name)
}

/// The last segment of a path type (`Foo` of `crate::Foo`).
pub(crate) fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Whether the `derive` attributes name `name`.
pub(crate) fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        a.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
            .is_ok_and(|l| l.iter().any(|p| path_ends_with(p, name)))
    })
}

/// wire value → variant name of the typify enum `name`.
pub(crate) fn enum_variants(file: &syn::File, name: &str) -> Option<BTreeMap<String, String>> {
    file.items.iter().find_map(|item| match item {
        syn::Item::Enum(e) if e.ident == name => Some(variant_values(e)),
        _ => None,
    })
}

/// wire value → variant name of a typify enum: its `serde(rename)`, else (a value that is
/// already a Rust name, `SendMessage`) the variant's own name.
pub(crate) fn variant_values(e: &syn::ItemEnum) -> BTreeMap<String, String> {
    e.variants
        .iter()
        .map(|v| {
            let name = v.ident.to_string();
            (serde_rename(&v.attrs).unwrap_or_else(|| name.clone()), name)
        })
        .collect()
}

/// The `#[serde(rename = "…")]` of an item, if any.
pub(crate) fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
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

/// Whether a `#[serde(…)]` attribute of `attrs` names anything not in `allowed`.
pub(crate) fn serde_names_other_than(attrs: &[syn::Attribute], allowed: &[&str]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("serde")).any(|a| {
        let mut other = false;
        let _ = a.parse_nested_meta(|m| {
            other |= !allowed.iter().any(|k| m.path.is_ident(k));
            if m.input.peek(syn::Token![=]) {
                let _: syn::Expr = m.value()?.parse()?;
            }
            Ok(())
        });
        other
    })
}

/// Whether a `#[serde(…)]` attribute of `attrs` names `name` (a flag such as `flatten`).
pub(crate) fn serde_names(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("serde")).any(|a| {
        let mut found = false;
        let _ = a.parse_nested_meta(|m| {
            found |= m.path.is_ident(name);
            if m.input.peek(syn::Token![=]) {
                let _: syn::Expr = m.value()?.parse()?;
            }
            Ok(())
        });
        found
    })
}
