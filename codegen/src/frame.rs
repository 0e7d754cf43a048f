//! The stream frame twin of the response record, generated from two keywords:
//!
//! - `x-e2a-frame` on a record definition (an object: `echo_of` names the request definition
//!   whose fields it echoes, `kind` the property saying how to read the body, `body` the body
//!   property) and on each of its properties (`echo`: copied from the request; `stream`: shared
//!   by every frame of a stream; `own`: each frame's own);
//! - `x-e2a-body-of` on each body definition: the value (or values) of the kind property whose
//!   body it is.
//!
//! From them: `FrameHead` (the `echo` and `stream` fields: what one stream shares, held once in
//! a `crate::frame::Head` whose JSON text is written once), `FrameBody` (one variant per body
//! definition, and `Raw` for any other body, its keys in the order read) and `Frame` (the head,
//! the `own` fields, the body), with a writer byte-identical to the record's canonical JSON and
//! `From` both ways. The keywords change nothing on the wire or in the other exports.
//!
//! [`lint`] checks the keywords: every property of the record classified, every `echo` field
//! present on the request with the same shape, every body's kind a known value, no kind claimed
//! twice.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::syntax::serde_rename;
use crate::writer::Types;
use crate::Error;

/// The `x-e2a-frame` keyword (on the record definition and on each of its properties).
pub const FRAME: &str = "x-e2a-frame";
/// The `x-e2a-body-of` keyword (on a body definition).
pub const BODY_OF: &str = "x-e2a-body-of";
/// The values `x-e2a-frame` takes on a property.
const ROLES: [&str; 3] = ["echo", "stream", "own"];
/// The names the generated types take (no definition may have them).
const GENERATED: [&str; 3] = ["Frame", "FrameHead", "FrameBody"];
/// What decides whether two properties have the same shape (descriptions, defaults and reading
/// rules aside).
const SHAPE: [&str; 12] = [
    "type",
    "$ref",
    "anyOf",
    "oneOf",
    "items",
    "additionalProperties",
    "properties",
    "required",
    "enum",
    "const",
    "format",
    "minimum",
];

/// The record definition's `x-e2a-frame` object, read.
struct Record<'a> {
    name: &'a str,
    def: &'a Map<String, Value>,
    echo_of: &'a str,
    kind: &'a str,
    body: &'a str,
}

fn defs(bundled: &Value) -> impl Iterator<Item = (&String, &Map<String, Value>)> {
    bundled
        .get("$defs")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(n, d)| Some((n, d.as_object()?)))
}

/// The record definitions (those with an `x-e2a-frame` object); a problem for each bad one.
fn records<'a>(bundled: &'a Value, problems: &mut Vec<String>) -> Vec<Record<'a>> {
    let mut out = Vec::new();
    for (name, def) in defs(bundled) {
        let Some(spec) = def.get(FRAME) else { continue };
        let field = |k: &str| spec.get(k).and_then(Value::as_str);
        match (field("echo_of"), field("kind"), field("body")) {
            (Some(echo_of), Some(kind), Some(body)) => out.push(Record {
                name,
                def,
                echo_of,
                kind,
                body,
            }),
            _ => problems.push(format!(
                "/$defs/{name}/{FRAME}: an object with the strings `echo_of`, `kind` and `body`"
            )),
        }
    }
    out
}

/// The kinds `def` is the body of (`x-e2a-body-of`: a string or an array of strings).
fn body_of(def: &Map<String, Value>) -> Option<Vec<&str>> {
    match def.get(BODY_OF)? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(a) => a.iter().map(Value::as_str).collect(),
        _ => Some(Vec::new()),
    }
}

/// The body definitions `(name, kinds)`, in name order.
fn bodies(bundled: &Value) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<_> = defs(bundled)
        .filter_map(|(n, d)| Some((n.as_str(), body_of(d)?)))
        .collect();
    out.sort();
    out
}

/// The keywords that give a property its shape.
fn shape(p: &Value) -> Map<String, Value> {
    p.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| SHAPE.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The values the kind property may take (its definition's `enum` or `x-e2a-open-enum`).
fn kind_values<'a>(bundled: &'a Value, record: &Record<'a>) -> Option<Vec<&'a str>> {
    let prop = record.def.get("properties")?.get(record.kind)?;
    let def = match prop.get("$ref").and_then(Value::as_str) {
        Some(r) => bundled.pointer(&r.replacen('#', "", 1))?,
        None => prop,
    };
    let values = def.get("enum").or_else(|| def.get(crate::OPEN_ENUM))?.as_array()?;
    values.iter().map(Value::as_str).collect()
}

/// Every problem with the frame keywords of `bundled` (empty when there are none, or no
/// keywords).
pub fn lint(bundled: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let records = records(bundled, &mut problems);
    let bodies = bodies(bundled);
    if records.len() > 1 {
        problems.push(format!("{FRAME}: on more than one definition (one record has frames)"));
    }
    let Some(record) = records.first() else {
        if !bodies.is_empty() {
            problems.push(format!("{BODY_OF}: used, but no definition has an {FRAME} object"));
        }
        return problems;
    };
    let at = format!("/$defs/{}", record.name);
    for taken in GENERATED.iter().filter(|g| defs(bundled).any(|(n, _)| n == *g)) {
        problems.push(format!("/$defs/{taken}: the name of a generated frame type"));
    }
    if !crate::defaults::writes_all_keys(bundled, record.name) {
        problems.push(format!("{at}: a record with frames needs {}", crate::WRITE_ALL_KEYS));
    }
    let props = record.def.get("properties").and_then(Value::as_object);
    let echoed = bundled
        .pointer(&format!("/$defs/{}/properties", record.echo_of))
        .and_then(Value::as_object);
    let Some(echoed) = echoed else {
        problems.push(format!(
            "{at}/{FRAME}/echo_of: `{}` is no object definition",
            record.echo_of
        ));
        return problems;
    };
    for (key, p) in props.into_iter().flatten() {
        let role = p.get(FRAME).and_then(Value::as_str);
        match role {
            Some("echo") => match echoed.get(key) {
                Some(e) if shape(e) == shape(p) => {}
                Some(_) => problems.push(format!(
                    "{at}/properties/{key}: echoes {}.{key}, whose shape differs",
                    record.echo_of
                )),
                None => problems.push(format!(
                    "{at}/properties/{key}: `echo`, but {} has no `{key}`",
                    record.echo_of
                )),
            },
            Some(r) if ROLES.contains(&r) => {}
            _ => problems.push(format!("{at}/properties/{key}: {FRAME} must be one of {ROLES:?}")),
        }
    }
    for (what, key) in [("kind", record.kind), ("body", record.body)] {
        let role = props.and_then(|p| p.get(key)).and_then(|p| p.get(FRAME));
        if role.and_then(Value::as_str) != Some("own") {
            problems.push(format!("{at}/{FRAME}/{what}: `{key}` is no `own` property"));
        }
    }
    let known = kind_values(bundled, record);
    let mut claimed = BTreeSet::new();
    for (name, kinds) in &bodies {
        if kinds.is_empty() {
            problems.push(format!("/$defs/{name}/{BODY_OF}: a kind or a non-empty array of kinds"));
        }
        for kind in kinds {
            if known.as_ref().is_some_and(|k| !k.contains(kind)) {
                problems.push(format!(
                    "/$defs/{name}/{BODY_OF}: `{kind}` is not a value of `{}`",
                    record.kind
                ));
            }
            if !claimed.insert(*kind) {
                problems.push(format!("/$defs/{name}/{BODY_OF}: `{kind}` has another body already"));
            }
        }
    }
    problems
}

/// One field of the record as the frame sees it.
struct Field<'a> {
    /// The Rust field name.
    ident: String,
    key: String,
    ty: &'a syn::Type,
    docs: Vec<&'a syn::Attribute>,
    own: bool,
    echo: bool,
}

/// The record's fields in the struct's order (the canonical JSON's), with their roles.
fn fields<'a>(st: &'a syn::ItemStruct, record: &Record<'_>) -> Result<Vec<Field<'a>>, Error> {
    let props = record.def.get("properties").and_then(Value::as_object);
    let mut out = Vec::new();
    for f in &st.fields {
        let Some(ident) = &f.ident else {
            return Err(Error::Typify(format!("{}: a tuple struct", record.name)));
        };
        let ident = ident.to_string();
        let key = serde_rename(&f.attrs).unwrap_or_else(|| ident.trim_start_matches("r#").to_string());
        let role = props
            .and_then(|p| p.get(&key))
            .and_then(|p| p.get(FRAME))
            .and_then(Value::as_str);
        out.push(Field {
            ident,
            docs: f.attrs.iter().filter(|a| a.path().is_ident("doc")).collect(),
            own: role == Some("own"),
            echo: role == Some("echo"),
            key,
            ty: &f.ty,
        });
    }
    Ok(out)
}

/// The frame types of `file` (empty without a record with frames): see the module docs.
pub(crate) fn frames(bundled: &Value, file: &syn::File, types: &Types<'_>) -> Result<String, Error> {
    let problems = &mut Vec::new();
    let Some(record) = records(bundled, problems).into_iter().next() else {
        return Ok(String::new());
    };
    let st = file
        .items
        .iter()
        .find_map(|i| match i {
            syn::Item::Struct(s) if s.ident == record.name => Some(s),
            _ => None,
        })
        .ok_or_else(|| Error::Typify(format!("{}: no struct generated", record.name)))?;
    let fields = fields(st, &record)?;
    let mut code = head_source(&record, &fields, types);
    code.push_str(&body_source(bundled, &record, file, types)?);
    code.push_str(&frame_source(&record, &fields, types));
    code.push_str(&framed_source(&record, &fields, types));
    let parsed = syn::parse_file(&code).map_err(|e| Error::Typify(format!("the frame types do not parse: {e}")))?;
    Ok(format!(
        "\n// Stream frames generated by e2a-codegen ({FRAME}, {BODY_OF}): see `crate::frame`.\n{}",
        prettyplease::unparse(&parsed)
    ))
}

fn doc_lines(out: &mut String, indent: &str, docs: &[&syn::Attribute]) {
    use quote::ToTokens;
    for d in docs {
        let _ = writeln!(out, "{indent}{}", d.to_token_stream());
    }
}

/// `FrameHead`, its `Default`, `Debug`, `echoing` and `WriteHead`.
fn head_source(record: &Record<'_>, fields: &[Field<'_>], types: &Types<'_>) -> String {
    let name = record.name;
    let echo_of = record.echo_of;
    let mut o = format!(
        "/// What every frame of one stream of [`{name}`] shares: the fields that echo the request\n\
         /// (`{FRAME}: echo`) and the stream's own (`stream`). A stream holds it once, in a\n\
         /// [`crate::frame::Head`], which writes its JSON text once.\n\
         #[derive(Clone, PartialEq)]\npub struct FrameHead {{\n"
    );
    for f in fields.iter().filter(|f| !f.own) {
        doc_lines(&mut o, "    ", &f.docs);
        let _ = writeln!(o, "    pub {}: {},", f.ident, crate::syntax::quote_type(f.ty));
    }
    o.push_str("}\n\n");
    let _ = writeln!(
        o,
        "impl ::std::default::Default for FrameHead {{\n    /// The head of a default [`{name}`] (made once, then copied: every stream's head starts from it).\n    fn default() -> Self {{\n        static DEFAULT: ::std::sync::OnceLock<FrameHead> = ::std::sync::OnceLock::new();\n        DEFAULT.get_or_init(|| Frame::default().head.into_inner()).clone()\n    }}\n}}\n"
    );
    o.push_str(
        "impl ::std::fmt::Debug for FrameHead {\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {\n        f.debug_struct(\"FrameHead\").finish_non_exhaustive()\n    }\n}\n\n",
    );
    let _ = writeln!(
        o,
        "impl FrameHead {{\n    /// The head of the frames answering `request`: the `echo` fields copied from it, the\n    /// others at their defaults.\n    pub fn echoing(request: &{echo_of}) -> Self {{\n        FrameHead {{"
    );
    for f in fields.iter().filter(|f| f.echo) {
        let _ = writeln!(o, "            {0}: request.{0}.clone(),", f.ident);
    }
    o.push_str("            ..::std::default::Default::default()\n        }\n    }\n\n");
    let _ = writeln!(
        o,
        "    /// Whether this head's `echo` fields are `request`'s: it is the head of the frames\n    /// answering `request` ([`FrameHead::echoing`]).\n    pub fn echoes(&self, request: &{echo_of}) -> bool {{"
    );
    let same: Vec<String> = fields
        .iter()
        .filter(|f| f.echo)
        .map(|f| format!("self.{0} == request.{0}", f.ident))
        .collect();
    let _ = writeln!(
        o,
        "        {}\n    }}\n}}\n",
        if same.is_empty() {
            "true".to_string()
        } else {
            same.join("\n            && ")
        }
    );
    let segments = fields.iter().filter(|f| f.own).count() + 1;
    let _ = writeln!(
        o,
        "impl crate::frame::WriteHead for FrameHead {{\n    const SEGMENTS: usize = {segments};\n    fn write_segments(&self, w: &mut crate::write::JsonWriter, ends: &mut [usize]) {{"
    );
    let mut seg = 0;
    for (i, f) in fields.iter().enumerate() {
        let lit = format!("{}\"{}\":", if i == 0 { "{" } else { "," }, f.key);
        let _ = writeln!(o, "        w.raw({lit:?});");
        if f.own {
            let _ = writeln!(o, "        ends[{seg}] = w.len();");
            seg += 1;
        } else {
            let _ = writeln!(o, "        {}", types.write(&format!("&self.{}", f.ident), f.ty));
        }
    }
    let _ = writeln!(
        o,
        "        w.raw(\"}}\");\n        ends[{seg}] = w.len();\n    }}\n}}\n"
    );
    o
}

/// The variant name of a body definition: its name without `Body`.
fn variant(name: &str) -> &str {
    match name.strip_suffix("Body") {
        Some(v) if !v.is_empty() && v != "Raw" => v,
        _ => name,
    }
}

/// `FrameBody`, `body_of`, `into_map`, `Default` and its writer.
fn body_source(bundled: &Value, record: &Record<'_>, file: &syn::File, types: &Types<'_>) -> Result<String, Error> {
    let bodies = bodies(bundled);
    let structs: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            _ => None,
        })
        .collect();
    let (name, kind, body) = (record.name, record.kind, record.body);
    let mut o = format!(
        "/// The `{body}` of a [`Frame`]: typed for each `{kind}` the schema gives a body\n\
         /// (`{BODY_OF}`), or `Raw`.\n#[derive(Clone, PartialEq)]\npub enum FrameBody {{\n"
    );
    for (def, kinds) in &bodies {
        if !structs.contains(*def) {
            return Err(Error::Typify(format!(
                "{def}: a body ({BODY_OF}) must be an object definition"
            )));
        }
        let _ = writeln!(
            o,
            "    /// `{}`: a [`{def}`].\n    {}({def}),",
            kinds.join("`, `"),
            variant(def)
        );
    }
    o.push_str(
        "    /// Any body, as a JSON object with its keys in the order they came (a body read from the\n    /// wire, or one of a kind without a typed body).\n    Raw(::serde_json::Map<::std::string::String, ::serde_json::Value>),\n}\n\n",
    );
    let _ = writeln!(
        o,
        "impl ::std::default::Default for FrameBody {{\n    /// `{{}}`, the default `{body}` of a [`{name}`].\n    fn default() -> Self {{\n        FrameBody::Raw(::serde_json::Map::new())\n    }}\n}}\n"
    );
    let _ = writeln!(
        o,
        "impl FrameBody {{\n    /// The values of `{kind}` a typed body is the body of (`{BODY_OF}`); none for `Raw`.\n    pub fn body_of(&self) -> &'static [&'static str] {{\n        match self {{"
    );
    for (def, kinds) in &bodies {
        let list: Vec<String> = kinds.iter().map(|k| format!("{k:?}")).collect();
        let _ = writeln!(o, "            Self::{}(_) => &[{}],", variant(def), list.join(", "));
    }
    o.push_str("            Self::Raw(_) => &[],\n        }\n    }\n\n");
    let _ = writeln!(
        o,
        "    /// The body as the JSON object [`{name}`]'s `{body}` holds.\n    pub fn into_map(self) -> ::serde_json::Map<::std::string::String, ::serde_json::Value> {{\n        match self {{"
    );
    for (def, _) in &bodies {
        match types.objects.contains(*def) {
            true => {
                let _ = writeln!(o, "            Self::{}(b) => b.into_object(),", variant(def));
            }
            false => {
                let _ = writeln!(o, "            Self::{}(b) => crate::frame::body_map(b),", variant(def));
            }
        }
    }
    o.push_str("            Self::Raw(m) => m,\n        }\n    }\n}\n\n");
    o.push_str(&body_impls(&bodies, types)?);
    Ok(o)
}

/// `Debug` and the writer of `FrameBody` (`bodies`: the body definitions and their kinds).
fn body_impls(bodies: &[(&str, Vec<&str>)], types: &Types<'_>) -> Result<String, Error> {
    let mut o = String::new();
    o.push_str("impl ::std::fmt::Debug for FrameBody {\n    /// The typed body's `Debug`; a raw one redacted.\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {\n        match self {\n");
    for (def, _) in bodies {
        let v = variant(def);
        let _ = writeln!(o, "            Self::{v}(b) => f.debug_tuple({v:?}).field(b).finish(),");
    }
    o.push_str("            Self::Raw(m) => crate::redact::debug_redacted(f, \"Raw\", m),\n        }\n    }\n}\n\n");
    o.push_str("impl crate::write::WriteJson for FrameBody {\n    const FIXED_LEN: usize = 2;\n    fn write_json(&self, w: &mut crate::write::JsonWriter) {\n        match self {\n");
    for (def, _) in bodies {
        let ty: syn::Type = syn::parse_str(def).map_err(|e| Error::Typify(format!("{def}: {e}")))?;
        let _ = writeln!(
            o,
            "            Self::{}(b) => {{ {} }}",
            variant(def),
            types.write("b", &ty)
        );
    }
    o.push_str("            Self::Raw(m) => w.value(m),\n        }\n    }\n}\n\n");
    Ok(o)
}

/// `Frame`, its writer, `Default`, `Debug` and `From` both ways.
fn frame_source(record: &Record<'_>, fields: &[Field<'_>], types: &Types<'_>) -> String {
    let (name, body) = (record.name, record.body);
    let mut o = format!(
        "/// One frame of a response stream: a [`{name}`] whose shared fields are one\n\
         /// [`FrameHead`] per stream and whose `{body}` is typed. Written (`crate::write`) as the\n\
         /// record's canonical JSON, byte for byte; `From` converts both ways.\n\
         #[derive(Clone, PartialEq)]\npub struct Frame {{\n    /// The fields every frame of the stream shares.\n    pub head: crate::frame::Head<FrameHead>,\n"
    );
    for f in fields.iter().filter(|f| f.own) {
        doc_lines(&mut o, "    ", &f.docs);
        let ty = if f.key == body {
            "FrameBody".to_string()
        } else {
            crate::syntax::quote_type(f.ty)
        };
        let _ = writeln!(o, "    pub {}: {ty},", f.ident);
    }
    o.push_str("}\n\n");
    let _ = writeln!(
        o,
        "impl crate::write::WriteJson for Frame {{\n    const FIXED_LEN: usize = <{name} as crate::write::WriteJson>::FIXED_LEN;\n    fn write_json(&self, w: &mut crate::write::JsonWriter) {{\n        let head = self.head.text();"
    );
    let mut seg = 0;
    for f in fields.iter().filter(|f| f.own) {
        let _ = writeln!(o, "        w.raw(head.segment({seg}));");
        seg += 1;
        // the own fields are written as the record writes them (the body by its own writer)
        let _ = writeln!(o, "        {}", own_write(f, record, types));
    }
    let _ = writeln!(o, "        w.raw(head.segment({seg}));\n    }}\n}}\n");
    let _ = writeln!(
        o,
        "impl ::std::default::Default for Frame {{\n    /// A default [`{name}`] as a frame.\n    fn default() -> Self {{\n        {name}::default().into()\n    }}\n}}\n"
    );
    let _ = writeln!(
        o,
        "impl ::std::fmt::Debug for Frame {{\n    /// As the [`{name}`] it is (redacted).\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n        ::std::fmt::Debug::fmt(&{name}::from(self.clone()), f)\n    }}\n}}\n"
    );
    let all: Vec<&str> = fields.iter().map(|f| f.ident.as_str()).collect();
    let head: Vec<&str> = fields.iter().filter(|f| !f.own).map(|f| f.ident.as_str()).collect();
    let own: Vec<String> = fields
        .iter()
        .filter(|f| f.own)
        .map(|f| match f.key == body {
            true => format!("{0}: FrameBody::Raw({0})", f.ident),
            false => f.ident.clone(),
        })
        .collect();
    let _ = writeln!(
        o,
        "impl ::std::convert::From<{name}> for Frame {{\n    /// The record's shared fields as a new head; its `{body}` as `FrameBody::Raw`.\n    fn from(r: {name}) -> Self {{\n        let {name} {{ {} }} = r;\n        Frame {{\n            head: crate::frame::Head::new(FrameHead {{ {} }}),\n            {},\n        }}\n    }}\n}}\n",
        all.join(", "),
        head.join(", "),
        own.join(",\n            "),
    );
    let own_back: Vec<String> = fields
        .iter()
        .filter(|f| f.own)
        .map(|f| match f.key == body {
            true => format!("{0}: f.{0}.into_map()", f.ident),
            false => format!("{0}: f.{0}", f.ident),
        })
        .collect();
    let _ = writeln!(
        o,
        "impl ::std::convert::From<Frame> for {name} {{\n    /// The record the frame writes.\n    fn from(f: Frame) -> Self {{\n        let FrameHead {{ {} }} = f.head.into_inner();\n        {name} {{\n            {},\n            {},\n        }}\n    }}\n}}",
        head.join(", "),
        head.join(",\n            "),
        own_back.join(",\n            "),
    );
    o
}

/// `impl crate::frame::Framed` for the record and for `Frame`: how each splits into its head
/// and its own fields.
fn framed_source(record: &Record<'_>, fields: &[Field<'_>], types: &Types<'_>) -> String {
    let name = record.name;
    let head: Vec<&Field<'_>> = fields.iter().filter(|f| !f.own).collect();
    let mut own_writes = String::new();
    for (k, f) in fields.iter().filter(|f| f.own).enumerate() {
        let _ = writeln!(
            own_writes,
            "        {}\n        ends[{k}] = w.len();",
            own_write(f, record, types)
        );
    }
    let copies: Vec<String> = head.iter().map(|f| format!("{0}: self.{0}.clone()", f.ident)).collect();
    let equal: Vec<String> = head.iter().map(|f| format!("self.{0} == head.{0}", f.ident)).collect();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "impl crate::frame::Framed for {name} {{\n    type Head = FrameHead;\n    fn head(&self) -> FrameHead {{\n        FrameHead {{ {} }}\n    }}\n    fn has_head(&self, head: &FrameHead) -> bool {{\n        {}\n    }}\n    fn write_own(&self, w: &mut crate::write::JsonWriter, ends: &mut [usize]) {{\n{own_writes}    }}\n}}\n",
        copies.join(", "),
        equal.join("\n            && "),
    );
    let _ = writeln!(
        o,
        "impl crate::frame::Framed for Frame {{\n    type Head = crate::frame::Head<FrameHead>;\n    fn head(&self) -> crate::frame::Head<FrameHead> {{\n        self.head.clone()\n    }}\n    fn has_head(&self, head: &crate::frame::Head<FrameHead>) -> bool {{\n        self.head == *head\n    }}\n    fn write_own(&self, w: &mut crate::write::JsonWriter, ends: &mut [usize]) {{\n{own_writes}    }}\n}}"
    );
    o
}

/// The write of own field `f` of a record or a frame (`self.<field>`): the body by its own
/// writer (a `FrameBody` in a frame), the others as the record's writer writes them.
fn own_write(f: &Field<'_>, record: &Record<'_>, types: &Types<'_>) -> String {
    if f.key == record.body {
        format!("w.value(&self.{});", f.ident)
    } else {
        types.write(&format!("&self.{}", f.ident), f.ty)
    }
}
