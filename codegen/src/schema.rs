//! Reading the schema files and bundling them into one document, and the canonical JSON form
//! every generated JSON file is written in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, BUNDLE_ID};

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

/// Rewrites every `$ref` of `v` (a definition of `file`) to `#/$defs/Name`.
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
