//! The reader of one definition: its reads, by keyword and by type, gathered into the key
//! table and the reader function.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{
    default_of, fields_of, is_open_enum, null_means_default, ref_name, snake, Field, LegacyRules, ALIASES, LEGACY_KEYS,
    MERGE, NAMED_LEGACY, NAMED_READS, READ, READER, STRIP,
};
use crate::Error;

/// The text of one generated reader, gathered as its fields are visited. The reader reads the
/// struct-typed fields first (legacy keys may write into them), then the legacy keys, then the
/// other properties, then the aliases.
#[derive(Default)]
struct ReaderParts {
    /// Reads of the fields a nested reader reads.
    nested_body: String,
    /// `(key, table name)` of each field a nested reader reads, in field order.
    nested_keys: Vec<(String, String)>,
    /// The hand-offs of the legacy keys.
    legacy: String,
    /// Reads of the other fields.
    body: String,
    /// The aliases, resolved after every property is read (an alias may be a property).
    tail: String,
    /// Every key the reader knows: properties, merged keys, aliases and legacy keys.
    keys: Vec<String>,
}

impl ReaderParts {
    /// Where the reads of a field go: the nested part for a field a nested reader reads, else
    /// the body.
    fn body_mut(&mut self, nested: bool) -> &mut String {
        if nested {
            &mut self.nested_body
        } else {
            &mut self.body
        }
    }
}

/// One definition whose reader is generated, with what its reader is made from.
pub(super) struct DefReader<'a> {
    /// The definition's name.
    name: &'a str,
    /// The definition.
    def: &'a Value,
    /// Its properties.
    props: &'a Map<String, Value>,
    /// Every definition of the bundled schema.
    defs: &'a Map<String, Value>,
    /// The rules a keyword may fire.
    rules: &'a LegacyRules,
    /// The fields of the generated struct, each with its property.
    fields: Vec<Field>,
}

impl<'a> DefReader<'a> {
    /// The definition `name` of `defs` with the fields typify generated for it, each matched
    /// with its property.
    pub(super) fn new(
        name: &'a str,
        defs: &'a Map<String, Value>,
        rules: &'a LegacyRules,
        file: &syn::File,
    ) -> Result<Self, Error> {
        let err = |m: String| Error::Schema(format!("/$defs/{name}: {m}"));
        let def = &defs[name];
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
        Ok(DefReader {
            name,
            def,
            props,
            defs,
            rules,
            fields,
        })
    }

    /// A schema error about this definition.
    fn err(&self, m: String) -> Error {
        Error::Schema(format!("/$defs/{}: {m}", self.name))
    }

    /// Whether the definition `t` has a generated reader of its own (a nested reader).
    fn has_reader(&self, t: &str) -> bool {
        self.defs.get(t).is_some_and(|d| d.get(READER).is_some())
    }

    /// The `LegacyRule::Variant` that the `rule` of a keyword at `at` names; an error when it
    /// names no rule.
    fn rule(&self, r: &Value, at: &str) -> Result<String, Error> {
        let r = r
            .as_str()
            .ok_or_else(|| self.err(format!("{at}: `rule` must be a string")))?;
        if !self.rules.values.iter().any(|x| x == r) {
            return Err(self.err(format!("{at}: rule `{r}` is not a value of LegacyRule")));
        }
        let v = self
            .rules
            .variants
            .get(r)
            .ok_or_else(|| self.err(format!("{at}: no LegacyRule variant for `{r}`")))?;
        Ok(format!("LegacyRule::{v}"))
    }

    /// The key list, key table and reader function of this definition.
    pub(super) fn generate(&self) -> Result<String, Error> {
        let mut parts = ReaderParts {
            keys: self.props.keys().cloned().collect(),
            ..ReaderParts::default()
        };
        for f in &self.fields {
            self.read_field(f, &mut parts)?;
        }
        self.legacy_keys(&mut parts)?;
        parts.keys.sort();
        parts.keys.dedup();
        if parts.keys.len() > 40 {
            return Err(self.err(format!("{} keys; the slot reader holds at most 40", parts.keys.len())));
        }
        self.render(&parts)
    }

    /// The reads of one field: its `null_default`, the read itself, its merges and its aliases,
    /// each keyword checked.
    fn read_field(&self, f: &Field, parts: &mut ReaderParts) -> Result<(), Error> {
        let (key, p) = (&f.key, &f.prop);
        let at = format!("properties/{key}");
        let strip = p.get(STRIP).and_then(Value::as_bool) == Some(true);
        let nested = ref_name(p).is_some_and(|t| self.has_reader(t));
        if null_means_default(p, self.defs) {
            let _ = writeln!(parts.body_mut(nested), "        c.null_default(key!({key:?}));");
        }
        let read = self.read_expr(f, &at, strip, &mut parts.nested_keys)?;
        let _ = writeln!(parts.body_mut(nested), "        let mut {} = {read};", f.ident);
        self.merges(f, &at, nested, parts)?;
        self.aliases(f, &at, strip, nested, parts)?;
        if let Some(x) = p.get(STRIP) {
            if x != &Value::Bool(true) || !f.ty.starts_with("::std::option::Option<::std::string::String") {
                return Err(self.err(format!("{at}: `{STRIP}` must be true on a nullable string")));
            }
        }
        Ok(())
    }

    /// The expression reading field `f`: a hand-written read named by `x-e2a-read`, a nested
    /// reader (noted in `nested_keys`), an open or closed enum, else a read by the field's type.
    fn read_expr(
        &self,
        f: &Field,
        at: &str,
        strip: bool,
        nested_keys: &mut Vec<(String, String)>,
    ) -> Result<String, Error> {
        let (key, p) = (&f.key, &f.prop);
        let default = default_of(p);
        let target = ref_name(p);
        if let Some(named) = p.get(READ).and_then(Value::as_str) {
            if !NAMED_READS.contains(&named) {
                return Err(self.err(format!("{at}: unknown `{READ}` function `{named}`")));
            }
            return Ok(format!("c.{named}(key!({key:?}))?"));
        }
        if let Some(t) = target.filter(|t| self.has_reader(t)) {
            let func = snake(t);
            nested_keys.push((key.clone(), func.to_uppercase()));
            // the reader over a map, then over slots (the text path)
            return Ok(if f.ty.starts_with("::std::option::Option") {
                format!("c.nested_opt(key!({key:?}), {func}, {func})?")
            } else {
                format!("c.nested_or_default(key!({key:?}), {func}, {func})?")
            });
        }
        if target.is_some_and(|t| is_open_enum(self.defs, t)) {
            let d = default
                .and_then(Value::as_str)
                .ok_or_else(|| self.err(format!("{at}: an open enum needs a string default")))?;
            return Ok(format!("c.f.str_or(key!({key:?}), {d:?})?.into()"));
        }
        if let Some(t) = target.filter(|t| self.defs.get(*t).is_some_and(|d| d.get("enum").is_some())) {
            let d = match &f.serde_default {
                Some(Some(path)) => format!("{path}()"),
                _ => return Err(self.err(format!("{at}: an enum field needs a `default`"))),
            };
            return Ok(format!("c.parse_or::<{t}>(key!({key:?}), {d})?"));
        }
        typed_read(&f.ty, key, default, strip).map_err(|m| self.err(format!("{at}: {m}")))
    }

    /// The `x-e2a-merge` entries of field `f`: each legacy key's object merged in, existing keys
    /// winning.
    fn merges(&self, f: &Field, at: &str, nested: bool, parts: &mut ReaderParts) -> Result<(), Error> {
        for (i, m) in f
            .prop
            .get(MERGE)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("{at}/{MERGE}/{i}");
            let mkey = m
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| self.err(format!("{at}: `key` must be a string")))?;
            let r = self.rule(m.get("rule").unwrap_or(&Value::Null), &at)?;
            let how = match (
                m.get("skip").and_then(Value::as_str),
                m.get("as").and_then(Value::as_str),
            ) {
                (Some("empty_values"), None) => "Merge::SkipEmptyValues".to_string(),
                (Some(e), None) if self.defs.get(e).is_some_and(|d| d.get("enum").is_some()) => {
                    format!("Merge::SkipKeys(|k| k.parse::<{e}>().is_ok())")
                }
                (None, Some(k)) => format!("Merge::As({k:?})"),
                _ => return Err(self.err(format!("{at}: needs `skip: empty_values|<Enum>` or `as: <key>`"))),
            };
            let _ = writeln!(
                parts.body_mut(nested),
                "        c.merge(&mut {}, key!({mkey:?}), {how}, {r})?;",
                f.ident
            );
            parts.keys.push(mkey.to_string());
        }
        Ok(())
    }

    /// The `x-e2a-aliases` of field `f`: a legacy key is always read (a wrong type is an error
    /// naming it) and used, once every property is read, only when the property is absent.
    fn aliases(&self, f: &Field, at: &str, strip: bool, nested: bool, parts: &mut ReaderParts) -> Result<(), Error> {
        let ident = &f.ident;
        for (i, a) in f
            .prop
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
                .ok_or_else(|| self.err(format!("{at}: `key` must be a string")))?;
            let r = self.rule(a.get("rule").unwrap_or(&Value::Null), &at)?;
            if !f.ty.starts_with("::std::option::Option<::std::string::String") {
                return Err(self.err(format!("{at}: aliases need a nullable string property")));
            }
            let value = match self.fields.iter().find(|g| g.key == akey) {
                Some(g) if strip => format!("crate::lenient::stripped({}.as_deref())", g.ident),
                Some(g) => format!("{}.clone()", g.ident),
                None => {
                    let local = format!("legacy_{}", akey.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
                    let read = if strip { "stripped" } else { "opt_str" };
                    let _ = writeln!(
                        parts.body_mut(nested),
                        "        let {local} = c.f.{read}(key!({akey:?}))?;"
                    );
                    local
                }
            };
            if self.fields.iter().all(|g| g.key != akey) {
                parts.keys.push(akey.to_string());
            }
            let _ = writeln!(
                parts.tail,
                "        if {ident}.is_none() {{\n            {ident} = {value};\n            if {ident}.is_some() {{\n                c.fire({r});\n            }}\n        }}"
            );
        }
        Ok(())
    }

    /// The `x-e2a-legacy-keys` of the definition: each legacy key's value handed to its
    /// hand-written function with the field it writes into.
    fn legacy_keys(&self, parts: &mut ReaderParts) -> Result<(), Error> {
        for (lkey, l) in self
            .def
            .get(LEGACY_KEYS)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let at = format!("{LEGACY_KEYS}/{lkey}");
            let r = self.rule(l.get("rule").unwrap_or(&Value::Null), &at)?;
            let read = l.get("read").and_then(Value::as_str).unwrap_or_default();
            if !NAMED_LEGACY.contains(&read) {
                return Err(self.err(format!("{at}: unknown `read` function `{read}`")));
            }
            let into = l
                .get("into")
                .and_then(Value::as_str)
                .and_then(|k| self.fields.iter().find(|f| f.key == k))
                .ok_or_else(|| self.err(format!("{at}: `into` must name a property")))?;
            let _ = writeln!(
                parts.legacy,
                "        if let Some(v) = c.f.take(key!({lkey:?})) {{\n            crate::lenient::{read}(c, key!({lkey:?}), v, &mut {})?;\n            c.fire({r});\n        }}",
                into.ident
            );
            parts.keys.push(lkey.clone());
        }
        Ok(())
    }

    /// The key list, the key table and the reader function, from the parts gathered (`keys`
    /// sorted): every `key!` of the parts carries its index in the key list.
    fn render(&self, parts: &ReaderParts) -> Result<String, Error> {
        let (name, keys) = (self.name, &parts.keys);
        let func = snake(name);
        let table = func.to_uppercase();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n    /// Every key the `{name}` reader knows: its properties and the legacy keys `schema/` declares.\n    pub(crate) const {table}_KEYS: &[&str] = &{keys:?};\n"
        );
        let mut nested = Vec::new();
        for (k, t) in &parts.nested_keys {
            let idx = keys
                .iter()
                .position(|x| x == k)
                .ok_or_else(|| self.err(format!("nested key `{k}` is not in the key table")))?;
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
        for part in [&parts.nested_body, &parts.legacy, &parts.body, &parts.tail] {
            out.push_str(&keyed(part, keys));
        }
        let mut init: Vec<&String> = self.fields.iter().map(|f| &f.ident).collect();
        init.sort();
        let _ = writeln!(
            out,
            "        Ok({name} {{ {} }})\n    }}",
            init.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
        Ok(out)
    }
}

/// The read of a field by its Rust type (and its `default`) alone, for a field that no keyword
/// or `$ref` says how to read; an error for a type no `Ctx` read handles.
fn typed_read(ty: &str, key: &str, default: Option<&Value>, strip: bool) -> Result<String, String> {
    Ok(match ty {
        "::std::string::String" => {
            let d = default
                .and_then(Value::as_str)
                .ok_or("a non-null string needs a string default")?;
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
        "::serde_json::Map<::std::string::String,::serde_json::Value>" => format!("c.f.obj(key!({key:?}))?"),
        "::std::option::Option<::serde_json::Map<::std::string::String,::serde_json::Value>>" => {
            format!("c.f.opt_obj(key!({key:?}))?")
        }
        "::std::vec::Vec<::std::string::String>" => format!("c.f.str_array(key!({key:?}))?"),
        "::std::option::Option<JsonRpcId>" => format!("c.f.rpc_id(key!({key:?}))?"),
        other => return Err(format!("no lenient read for type `{other}`")),
    })
}

/// `text` with every `key!("k")` spelled `(index, "k")`, the key's index in `keys` (a slot
/// read without a lookup), or `"k"` for a key not in it.
fn keyed(text: &str, keys: &[String]) -> String {
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
}
