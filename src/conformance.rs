//! The conformance driver's dispatch: maps a DRIVER.md function name and its JSON input to
//! the SDK call, so the `e2a conformance-driver` command and `cargo test` run the same code.

use serde_json::Value;

use crate::error::Error;

/// Outcome of one driver call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The call succeeded with this output (may be `null`).
    Output(Value),
    /// The call failed (an error answer).
    Error(String),
    /// The function name is not known to this driver.
    UnknownFn,
}

impl From<Result<Value, Error>> for Outcome {
    fn from(r: Result<Value, Error>) -> Self {
        match r {
            Ok(v) => Outcome::Output(v),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

/// Every function name this driver implements.
pub const FUNCTIONS: &[&str] = &["envelope.from_dict", "response.from_dict"];

/// Runs one conformance function on its input.
///
/// ```
/// use e2a::conformance::{call, Outcome};
/// let out = call("envelope.from_dict", &serde_json::json!({"channel_id": "web"}));
/// let Outcome::Output(v) = out else { panic!() };
/// assert_eq!(v["channel"], "web");
/// assert_eq!(call("nope", &serde_json::json!({})), Outcome::UnknownFn);
/// ```
pub fn call(function: &str, input: &Value) -> Outcome {
    let r: Result<Value, Error> = match function {
        "envelope.from_dict" => crate::E2AEnvelope::from_value(input).map(|e| e.to_value()),
        "response.from_dict" => crate::E2AResponse::from_value(input).map(|r| r.to_value()),
        _ => return Outcome::UnknownFn,
    };
    r.into()
}

/// Answers one driver request line (`{"id", "fn", "input"}`) with one answer line.
pub fn answer_line(line: &str) -> String {
    let req: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return serde_json::json!({"id": null, "error": format!("bad request line: {}", Error::from_json(&e))})
                .to_string()
        }
    };
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let function = req.get("fn").and_then(Value::as_str).unwrap_or("");
    let input = req.get("input").cloned().unwrap_or(Value::Null);
    let answer = match call(function, &input) {
        Outcome::Output(v) => serde_json::json!({"id": id, "output": v}),
        Outcome::Error(e) => serde_json::json!({"id": id, "error": e}),
        Outcome::UnknownFn => serde_json::json!({"id": id, "error": format!("unknown fn `{function}`")}),
    };
    answer.to_string()
}
