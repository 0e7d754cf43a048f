//! `e2a config check FILE` and `e2a config schema`: the gateway's config file, checked and
//! described.

use e2a_gateway::config_file::{ConfigError, ConfigFile};
use serde_json::{Map, Value};

/// Config errors, one per line.
pub fn lines(errors: &[ConfigError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// `e2a config check FILE`: exit 0 when the file loads and every secret and agent it names is
/// usable, 2 with one `FILE:LINE: KEY: reason` line per problem otherwise.
pub fn check(path: &std::path::Path) -> u8 {
    let checked = ConfigFile::load_checked(Some(path), &[]);
    match checked {
        Ok(file) => {
            let agents = file.settings.agents.len();
            let callers = file.settings.callers.len();
            println!("{}: ok ({agents} named agent(s), {callers} caller(s))", path.display());
            0
        }
        Err(errors) => {
            eprintln!("{}", lines(&errors));
            2
        }
    }
}

/// The JSON Schema of the config file: `GatewayFile` and the definitions it uses, as one
/// document.
pub fn schema() -> Value {
    let bundled = e2a::bundled_schema();
    let defs = bundled.get("$defs").and_then(Value::as_object);
    let mut wanted = vec!["GatewayFile".to_string()];
    let mut out = Map::new();
    while let Some(name) = wanted.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(def) = defs.and_then(|d| d.get(&name)) else {
            continue;
        };
        refs(def, &mut wanted);
        out.insert(name, def.clone());
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:e2a:schema:config",
        "title": "e2a serve --config FILE (TOML)",
        "$ref": "#/$defs/GatewayFile",
        "$defs": out,
    })
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                if let Some(n) = r.strip_prefix("#/$defs/") {
                    out.push(n.to_string());
                }
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}
