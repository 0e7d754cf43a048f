//! The TOML text of a config file read as JSON (what the schema validates), with the line of
//! every key, so that an error names the line.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::pointer_key;

/// Where the lines of a text end: the line of an offset found by a binary search, so that
/// locating every key of a file is linear in it (counting newlines from the start for each key
/// was quadratic: 200,000 agents took minutes).
pub(super) struct Lines(Vec<usize>);

impl Lines {
    pub(super) fn of(text: &str) -> Self {
        Lines(newlines(text))
    }

    /// The 1-based line of byte `offset`.
    pub(super) fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// The offsets of `text`'s newlines.
fn newlines(text: &str) -> Vec<usize> {
    text.bytes()
        .enumerate()
        .filter_map(|(i, b)| (b == b'\n').then_some(i))
        .collect()
}

/// A TOML table as JSON, recording the line of every key under its pointer.
pub(super) fn table_json(t: &toml_edit::Table, text: &Lines, at: &str, lines: &mut HashMap<String, usize>) -> Value {
    let mut out = Map::new();
    for (k, item) in t.iter() {
        let pointer = format!("{at}/{}", pointer_key(k));
        let span = t
            .get_key_value(k)
            .and_then(|(key, _)| key.span())
            .or_else(|| item.span());
        if let Some(s) = span {
            lines.insert(pointer.clone(), text.line(s.start));
        }
        out.insert(k.to_string(), item_json(item, text, &pointer, lines));
    }
    Value::Object(out)
}

fn item_json(item: &toml_edit::Item, text: &Lines, at: &str, lines: &mut HashMap<String, usize>) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => value_json(v, text, at, lines),
        toml_edit::Item::Table(t) => table_json(t, text, at, lines),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, t)| table_json(t, text, &format!("{at}/{i}"), lines))
                .collect(),
        ),
    }
}

fn value_json(v: &toml_edit::Value, text: &Lines, at: &str, lines: &mut HashMap<String, usize>) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| {
                    let pointer = format!("{at}/{i}");
                    if let Some(s) = x.span() {
                        lines.insert(pointer.clone(), text.line(s.start));
                    }
                    value_json(x, text, &pointer, lines)
                })
                .collect(),
        ),
        V::InlineTable(t) => {
            let mut out = Map::new();
            for (k, x) in t.iter() {
                let pointer = format!("{at}/{}", pointer_key(k));
                let span = t.get_key_value(k).and_then(|(key, _)| key.span()).or_else(|| x.span());
                if let Some(s) = span {
                    lines.insert(pointer.clone(), text.line(s.start));
                }
                out.insert(k.to_string(), value_json(x, text, &pointer, lines));
            }
            Value::Object(out)
        }
    }
}
