//! Code for string enums beyond what typify writes: open enums (`x-e2a-open-enum`, known values
//! plus `Other(String)`) and the `ALL` / `as_str` extras of closed ones.

use std::fmt::Write as _;

use serde_json::Value;

use crate::syntax::variant_values;
use crate::Error;

/// The `x-e2a-open-enum` keyword: a string type with known values (listed) whose other values
/// are kept unchanged. typify has no open enums (its `anyOf` rendering fails at run time), so
/// e2a-codegen writes them: the known variants plus `Other(String)`, serialized as the string.
pub const OPEN_ENUM: &str = "x-e2a-open-enum";

/// `(name, known values)` of every open-enum definition.
pub(crate) fn open_enums(bundled: &Value) -> Result<Vec<(String, Vec<String>)>, Error> {
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

/// The source of the open enum `name`: the enum, `ALL`, `as_str`, `is_known` and the
/// conversion, comparison and serde impls.
pub(crate) fn open_enum_source(name: &str, values: &[String], bundled: &Value) -> String {
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
pub(crate) fn closed_string_enums<'a>(
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
pub(crate) fn enum_extras(bundled: &Value, file: &syn::File) -> String {
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
