//! `into_object` for body definitions: a struct's fields moved into the JSON object serde
//! writes for it, without a serializer (what a frame's typed body becomes in a record's
//! `body` map).

use std::fmt::Write as _;

use crate::syntax::serde_rename;
use crate::writer::Types;

/// `into_object` of body definition `st`: its fields moved into the JSON object serde writes
/// for it (the same members in the same order, `skip_serializing_if` and a last flattened map
/// of other members honoured), without a serializer; `None` when a field is beyond that.
pub(crate) fn object_source(st: &syn::ItemStruct, types: &Types<'_>) -> Option<String> {
    use crate::writer::{first_arg, serde_of, Skip};
    if crate::syntax::serde_names_other_than(&st.attrs, &["deny_unknown_fields"]) {
        return None;
    }
    let name = st.ident.to_string();
    let last = st.fields.len().saturating_sub(1);
    let mut body = String::from("        let mut m = ::serde_json::Map::new();\n");
    for (i, field) in st.fields.iter().enumerate() {
        let ident = field.ident.as_ref()?.to_string();
        if crate::syntax::serde_names(&field.attrs, "flatten") {
            if i != last || crate::syntax::quote_type(&field.ty) != crate::writer::MAP {
                return None;
            }
            let _ = writeln!(body, "        m.extend(self.{ident});");
            continue;
        }
        let skip = serde_of(&field.attrs).ok()?;
        let key = serde_rename(&field.attrs).unwrap_or_else(|| ident.trim_start_matches("r#").to_string());
        let insert = |v: &str| format!("m.insert({key:?}.into(), {v});");
        let line = match skip {
            Skip::IfNone => {
                let inner = first_arg(&field.ty)?;
                format!(
                    "if let Some(v) = self.{ident} {{ {} }}",
                    insert(&value_of("v", inner, types))
                )
            }
            Skip::IfEmpty => format!(
                "if !self.{ident}.is_empty() {{ {} }}",
                insert(&value_of(&format!("self.{ident}"), &field.ty, types))
            ),
            Skip::No => insert(&value_of(&format!("self.{ident}"), &field.ty, types)),
            // (a flattened field is handled above: `serde_of` does not name it)
            Skip::Flatten => return None,
        };
        let _ = writeln!(body, "        {line}");
    }
    Some(format!(
        "impl {name} {{\n    /// This body as the JSON object serde writes for it, its values moved in (no serializer).\n    pub fn into_object(self) -> ::serde_json::Map<::std::string::String, ::serde_json::Value> {{\n{body}        m\n    }}\n}}\n\n"
    ))
}

/// The JSON value of the expression `x` (of type `ty`, moved), as serde writes it.
fn value_of(x: &str, ty: &syn::Type, types: &Types<'_>) -> String {
    use crate::writer::{first_arg, MAP, OPTION, STRING, VALUE};
    let t = crate::syntax::quote_type(ty);
    if t == STRING {
        format!("::serde_json::Value::String({x})")
    } else if t == "bool" {
        format!("::serde_json::Value::Bool({x})")
    } else if t == "u64" || t == "i64" {
        format!("::serde_json::Value::from({x})")
    } else if t == MAP {
        format!("::serde_json::Value::Object({x})")
    } else if t == VALUE {
        x.to_string()
    } else if let (true, Some(inner)) = (t.starts_with(OPTION), first_arg(ty)) {
        format!(
            "match {x} {{ Some(v) => {}, None => ::serde_json::Value::Null }}",
            value_of("v", inner, types)
        )
    } else if types.own(ty).is_some_and(|n| types.enums.contains(&n)) {
        format!("::serde_json::Value::String({x}.as_str().to_string())")
    } else {
        format!("::serde_json::to_value(&{x}).unwrap_or(::serde_json::Value::Null)")
    }
}
