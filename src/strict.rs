//! The embedded E2A JSON Schema (the same bundled schema the types are generated from) and its
//! validators, used by the strict and canonical read modes ([`crate::read`]). All violations
//! are reported, each with its JSON pointer and a reason that never quotes the offending value.

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Validator;
use serde_json::Value;

use crate::error::{Error, Result, Violation};

/// The bundled E2A schema (draft 2020-12), as generated from `schema/`.
pub const SCHEMA_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/e2a.schema.json"));

/// The bundled schema as a JSON value.
pub fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(|| serde_json::from_str(SCHEMA_JSON).unwrap_or(Value::Null))
}

/// A compiled validator for `#/$defs/{name}` of the bundled schema.
fn validator(name: &'static str, cell: &'static OnceLock<Option<Validator>>) -> Result<&'static Validator> {
    cell.get_or_init(|| {
        let mut doc = schema().clone();
        doc.as_object_mut()?
            .insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
        jsonschema::options().build(&doc).ok()
    })
    .as_ref()
    .ok_or_else(|| Error::Unsupported(format!("embedded schema for {name} does not compile")))
}

macro_rules! validator_for {
    ($fn:ident, $name:literal) => {
        pub(crate) fn $fn() -> Result<&'static Validator> {
            static V: OnceLock<Option<Validator>> = OnceLock::new();
            validator($name, &V)
        }
    };
}

validator_for!(envelope_validator, "E2AEnvelope");
validator_for!(response_validator, "E2AResponse");

/// Validates `value` against the schema of type `E2AEnvelope` or `E2AResponse`, returning every
/// violation (empty when valid).
pub(crate) fn violations(validator: &Validator, value: &Value) -> Vec<Violation> {
    let mut out: Vec<Violation> = validator
        .iter_errors(value)
        .map(|e| match e.kind() {
            // a missing property is named by its own pointer
            ValidationErrorKind::Required { property } => Violation {
                pointer: format!(
                    "{}/{}",
                    e.instance_path(),
                    crate::fields::pointer_key(property.as_str().unwrap_or_default())
                ),
                reason: "missing required property".into(),
            },
            kind => Violation {
                pointer: e.instance_path().to_string(),
                reason: reason(kind),
            },
        })
        .collect();
    out.sort_by(|a, b| a.pointer.cmp(&b.pointer).then(a.reason.cmp(&b.reason)));
    out.dedup();
    out
}

fn reason(kind: &ValidationErrorKind) -> String {
    use ValidationErrorKind as K;
    match kind {
        K::Type { kind } => match kind {
            TypeKind::Single(t) => format!("expected {t}"),
            TypeKind::Multiple(ts) => {
                format!(
                    "expected {}",
                    ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or ")
                )
            }
        },
        K::Required { property } => format!("missing required property {property}"),
        K::AdditionalProperties { unexpected } => format!("unknown properties: {}", unexpected.join(", ")),
        K::Enum { options } => format!("not one of {options}"),
        K::Constant { expected_value } => format!("expected constant {expected_value}"),
        K::Minimum { limit } => format!("less than minimum {limit}"),
        K::Maximum { limit } => format!("greater than maximum {limit}"),
        K::AnyOf { .. } => "does not match any allowed shape".into(),
        K::OneOfNotValid { .. } => "does not match any allowed shape".into(),
        K::OneOfMultipleValid { .. } => "matches more than one shape".into(),
        K::MinLength { limit } => format!("shorter than {limit}"),
        K::MaxLength { limit } => format!("longer than {limit}"),
        K::Pattern { pattern } => format!("does not match pattern {pattern}"),
        K::Format { format } => format!("not a valid {format}"),
        K::FalseSchema => "not allowed".into(),
        other => format!("fails schema keyword {}", keyword_name(other)),
    }
}

fn keyword_name(kind: &ValidationErrorKind) -> String {
    let dbg = format!("{kind:?}");
    dbg.split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("unknown")
        .to_string()
}

/// Every violation of `value` against `#/$defs/{name}` of the bundled schema (empty when
/// valid), for documents other than messages (the gateway's configuration file). An unknown
/// key is reported once per key, at its own pointer, with the reason `unknown key`.
pub fn violations_of(name: &str, value: &Value) -> Result<Vec<Violation>> {
    let mut doc = schema().clone();
    if let Some(root) = doc.as_object_mut() {
        root.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
    }
    if schema().pointer(&format!("/$defs/{name}")).is_none() {
        return Err(Error::Unsupported(format!("the schema defines no `{name}`")));
    }
    let validator = jsonschema::options()
        .build(&doc)
        .map_err(|_| Error::Unsupported(format!("embedded schema for {name} does not compile")))?;
    let mut out = Vec::new();
    for e in validator.iter_errors(value) {
        push_document_violation(&e, &mut out);
    }
    out.sort_by(|a, b| a.pointer.cmp(&b.pointer).then(a.reason.cmp(&b.reason)));
    out.dedup();
    Ok(out)
}

/// `e` as the violations of a document ([`violations_of`]). An `anyOf` whose branches all but
/// one fail on the value's type alone (`X` or `null`, and the value is an object) reports what
/// is wrong inside that one branch, at the pointers there.
fn push_document_violation(e: &jsonschema::ValidationError<'_>, out: &mut Vec<Violation>) {
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for key in unexpected {
                out.push(Violation {
                    pointer: format!("{}/{}", e.instance_path(), crate::fields::pointer_key(key)),
                    reason: "unknown key".into(),
                });
            }
        }
        ValidationErrorKind::Required { property } => out.push(Violation {
            pointer: format!(
                "{}/{}",
                e.instance_path(),
                crate::fields::pointer_key(property.as_str().unwrap_or_default())
            ),
            reason: "missing required key".into(),
        }),
        ValidationErrorKind::AnyOf { context } => {
            let at = e.instance_path().to_string();
            let wrong_type_only = |branch: &Vec<jsonschema::ValidationError<'static>>| {
                branch.iter().all(|b| {
                    matches!(b.kind(), ValidationErrorKind::Type { .. }) && b.instance_path().to_string() == at
                })
            };
            let mut shaped = context.iter().filter(|branch| !wrong_type_only(branch));
            match (shaped.next(), shaped.next()) {
                (Some(branch), None) if !branch.is_empty() => {
                    for inner in branch {
                        push_document_violation(inner, out);
                    }
                }
                _ => out.push(Violation {
                    pointer: at,
                    reason: reason(e.kind()),
                }),
            }
        }
        kind => out.push(Violation {
            pointer: e.instance_path().to_string(),
            reason: reason(kind),
        }),
    }
}
