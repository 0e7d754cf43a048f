//! Property tests of the places a differential fuzz against the Python reference found the core
//! answering differently (issue 44, item 8): one test (or group) per class, each with the
//! reference's rule written out as the oracle. Inputs go through the conformance driver's
//! dispatch (`e2a::conformance`), as the published vectors do.

use e2a::conformance::{call, drive, Outcome};
use proptest::prelude::*;
use serde_json::{json, Value};

fn output(function: &str, input: &Value) -> Value {
    match call(function, input) {
        Outcome::Output(v) => v,
        other => panic!("{function}({input}) answered {other:?}"),
    }
}

/// Every character Python's `str.isspace()` accepts (`[c for c in map(chr, range(0x110000)) if
/// c.isspace()]`, Python 3.11): `str.strip()` removes exactly these.
const PY_SPACE: [char; 29] = [
    '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1d}', '\u{1e}', '\u{1f}', ' ', '\u{85}', '\u{a0}', '\u{1680}',
    '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}',
    '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
];

fn py_strip(s: &str) -> &str {
    s.trim_matches(|c| PY_SPACE.contains(&c))
}

fn py_space() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PY_SPACE.to_vec()), 0..4).prop_map(|v| v.into_iter().collect())
}

/// Text between whitespace: may itself hold whitespace inside, and characters that look like
/// whitespace to some but not to Python (U+200B, U+FEFF, U+180E).
fn padded() -> impl Strategy<Value = String> {
    let core = prop::collection::vec(
        prop_oneof![
            4 => prop::char::range('a', 'z'),
            1 => prop::sample::select(PY_SPACE.to_vec()),
            1 => prop::sample::select(vec!['\u{200b}', '\u{feff}', '\u{180e}', '\u{0}']),
        ],
        0..6,
    )
    .prop_map(|v| v.into_iter().collect::<String>());
    (py_space(), core, py_space()).prop_map(|(a, b, c)| format!("{a}{b}{c}"))
}

// --- `ok` / flag truthiness -------------------------------------------------------------------

/// Python's truthiness of an `ok` flag (`bool(data.get("ok", True))`, `if resp.ok`).
fn py_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

fn flag() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop::sample::select(vec![
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(""),
        json!([]),
        json!({}),
    ]))
}

proptest! {
    /// An `ok` flag reads with Python's truthiness (absent → true, an explicit null → false):
    /// a null flag is never a success, in the deprecated unary shape, in a frame's legacy blob
    /// and through `encode_agent_response`. A falsy flag of another JSON type is an error
    /// (deliberate difference 1), never a success either.
    #[test]
    fn ok_flag_is_python_truthiness(ok in flag(), payload in prop::option::of(Just(json!({"error": "boom"})))) {
        let mut record = json!({"request_id": "r", "channel_id": "c"});
        if let Some(ok) = &ok {
            record["ok"] = ok.clone();
        }
        if let Some(p) = &payload {
            record["payload"] = p.clone();
        }
        let expected = ok.as_ref().is_none_or(py_truthy);
        let blob_frame = json!({"protocol_version": "1.0", "response_kind": "e2a.chunk",
            "metadata": {"_e2a_wire_legacy_agent_response": record.clone()}});
        let mut unary = record.clone();
        if ok.is_none() {
            unary["ok"] = json!(true); // the deprecated shape needs the key
        }
        for (function, input) in [
            ("wire.parse_unary", unary),
            ("wire.parse_unary", blob_frame),
            ("legacy.response_from_agent_response", json!({"response": record.clone(), "response_id": "x"})),
            ("wire.encode_agent_response", json!({"response": record.clone(), "response_id": "x"})),
        ] {
            let answer = call(function, &input);
            let accepted = matches!(ok, None | Some(Value::Null | Value::Bool(_)));
            match answer {
                Outcome::Output(v) if function.starts_with("wire.parse") => {
                    prop_assert_eq!(v["ok"].as_bool(), Some(expected), "{} {}", function, v);
                }
                Outcome::Output(v) => {
                    prop_assert_eq!(v["response_kind"] == "e2a.complete", expected, "{} {}", function, v);
                    prop_assert_eq!(v["provenance"]["details"]["ok"].as_bool(), Some(expected));
                }
                Outcome::Error(_) => prop_assert!(!accepted, "{} refused {:?}", function, ok),
                Outcome::UnknownFn => prop_assert!(false),
            }
        }
    }
}

#[test]
fn null_ok_is_a_failure_through_the_encoder() {
    let v = output(
        "wire.encode_agent_response",
        &json!({"response": {"request_id": "r", "channel_id": "c", "ok": null, "payload": {"error": "boom"}},
            "response_id": "x"}),
    );
    assert_eq!(v["response_kind"], "e2a.error");
    assert_eq!(v["body"]["message"], "boom");
    let p = output(
        "wire.parse_unary",
        &json!({"request_id": "r", "channel_id": "c", "ok": null}),
    );
    assert_eq!(p["ok"], false);
}

// --- `str.strip()` ----------------------------------------------------------------------------

proptest! {
    /// Every field the reference `.strip()`s is stripped of exactly Python's whitespace:
    /// `agent_id`, `service_id`, `workspace_key` (and the legacy `workspace_dir`), ACP session
    /// ids, `userMessageId`, prompt fallback text, tool-call ids and titles.
    #[test]
    fn strip_is_python_strip(s in padded(), pad in py_space()) {
        let want = py_strip(&s);
        let want_opt = if want.is_empty() { Value::Null } else { json!(want) };
        let env = output("envelope.from_dict", &json!({"agent_id": s, "service_id": s, "workspace_dir": s}));
        prop_assert_eq!(&env["agent_id"], &want_opt);
        prop_assert_eq!(&env["service_id"], &want_opt);
        prop_assert_eq!(&env["workspace_key"], &want_opt);
        let new = output("acp.session_new_result", &json!({"session_id": s}));
        prop_assert_eq!(new["sessionId"].as_str(), Some(want));
        let list = output("acp.session_list_result", &json!({"session_ids": [s, "x"]}));
        let ids: Vec<&str> = list["sessions"].as_array().into_iter().flatten().filter_map(|x| x["sessionId"].as_str()).collect();
        let mut expected: Vec<&str> = [want, "x"].into_iter().filter(|x| !x.is_empty()).collect();
        expected.dedup();
        prop_assert_eq!(ids, expected);
        let done = output("acp.prompt_result", &json!({"stop_reason": "end_turn", "user_message_id": s}));
        prop_assert_eq!(done.get("userMessageId").and_then(Value::as_str), Some(want).filter(|w| !w.is_empty()));
        let prompt = output("acp.parse_prompt_blocks", &json!({"prompt": [], "text": s}));
        prop_assert_eq!(prompt["text"].as_str(), Some(want));
        let link = output("acp.parse_prompt_blocks", &json!({"prompt": [{"type": format!("{pad}resource_link{pad}"), "uri": format!("{pad}https://h/a{pad}"), "name": s}]}));
        let name = if want.is_empty() { "resource" } else { want };
        prop_assert_eq!(&link["text"], &json!(format!("[Linked resource] {name}: https://h/a")));
        let tool = output("acp.tool_call_update", &json!({"tool_call": {"id": format!("{pad}c{pad}"), "name": "x", "title": format!("{pad}T{pad}")}}));
        prop_assert_eq!(&tool["toolCallId"], &json!("c"));
        prop_assert_eq!(&tool["title"], &json!("T"));
        prop_assert_eq!(e2a::wire::is_e2a_response(&json!({"protocol_version": "1.0", "response_kind": s})), !want.is_empty());
    }
}

// --- `repr()`: non-printable characters and floats --------------------------------------------

/// Characters and how Python 3's `repr()` writes them inside a string (checked against
/// `repr()` of CPython 3.11): printable ones as themselves, the others (`str.isprintable()`
/// false: categories Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs but the ASCII space) escaped.
const REPR: [(char, &str); 24] = [
    ('a', "a"),
    (' ', " "),
    ('é', "é"),
    ('你', "你"),
    ('\u{1f600}', "\u{1f600}"),
    ('\u{2764}', "\u{2764}"),
    ('\\', "\\\\"),
    ('\n', "\\n"),
    ('\t', "\\t"),
    ('\u{0}', "\\x00"),
    ('\u{1f}', "\\x1f"),
    ('\u{7f}', "\\x7f"),
    ('\u{85}', "\\x85"),
    ('\u{a0}', "\\xa0"),
    ('\u{ad}', "\\xad"),
    ('\u{200d}', "\\u200d"),
    ('\u{200b}', "\\u200b"),
    ('\u{2028}', "\\u2028"),
    ('\u{3000}', "\\u3000"),
    ('\u{feff}', "\\ufeff"),
    ('\u{e000}', "\\ue000"),
    ('\u{fffe}', "\\ufffe"),
    ('\u{e0001}', "\\U000e0001"),
    ('\u{10ffff}', "\\U0010ffff"),
];

/// Python `repr(float)`: the shortest digits that read back as `f` — the correctly rounded
/// (ties to even) `n`-digit decimal for the smallest `n` that round-trips — in fixed notation
/// for 1e-4 ≤ |f| < 1e16, else `d.ddde±XX`.
fn py_float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sci = (1..=17)
        .map(|n| format!("{:.*e}", n - 1, f))
        .find(|s| s.parse::<f64>() == Ok(f))
        .unwrap_or_else(|| format!("{f:e}"));
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if mant.starts_with('-') { "-" } else { "" };
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    if !(-4..16).contains(&exp) {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.to_string()
        };
        return format!("{sign}{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let point = exp + 1;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{sign}{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point as usize], &digits[point as usize..])
    }
}

fn finite_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        // doubles whose exact value ends in .25 or .75 with 17 significant digits: both
        // neighbours are shortest, Python picks the even one
        ((1u64 << 50)..(1u64 << 51), prop::bool::ANY).prop_map(|(k, q)| k as f64 + if q { 0.25 } else { 0.75 }),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-20i32..20, 1u32..10).prop_map(|(e, m)| f64::from(m) * 10f64.powi(e)),
    ]
}

proptest! {
    /// `str()` of a list escapes exactly the characters `str.isprintable()` rejects, as
    /// `\xNN`, `\uNNNN` or `\UNNNNNNNN` (seen through the legacy `binding` migration, which
    /// records `str(binding)`).
    #[test]
    fn str_of_containers_escapes_non_printables(chars in prop::collection::vec(prop::sample::select(REPR.to_vec()), 0..8)) {
        let s: String = chars.iter().map(|(c, _)| *c).collect();
        let escaped: String = chars.iter().map(|(_, e)| *e).collect();
        prop_assert_eq!(e2a::pyrepr::py_str(&json!([s])), format!("['{escaped}']"));
        let env = output("envelope.from_dict", &json!({"binding": {"value": [s]}}));
        prop_assert_eq!(&env["provenance"]["details"]["migrated_from_binding"], &json!(format!("['{escaped}']")));
    }

    /// `str()` of a float inside a container is Python's `repr(float)`, ties included.
    #[test]
    fn str_of_floats_is_python_repr(f in finite_float()) {
        prop_assert_eq!(e2a::pyrepr::py_str(&json!([f])), format!("[{}]", py_float_repr(f)));
        let text = format!("[{}]", py_float_repr(f).replace("e+", "e"));
        let read: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        prop_assert_eq!(read[0].as_f64(), Some(f), "{}", text);
    }
}

#[test]
fn float_repr_examples() {
    for (f, s) in [
        (1223383794756801.2, "1223383794756801.2"),
        (1e16, "1e+16"),
        (1.5e-5, "1.5e-05"),
        (-0.0, "-0.0"),
        (123456789012345.6, "123456789012345.6"),
        (5e-324, "5e-324"),
        (f64::MAX, "1.7976931348623157e+308"),
    ] {
        assert_eq!(e2a::pyrepr::float_repr(f), s);
        assert_eq!(py_float_repr(f), s);
    }
    assert_eq!(e2a::pyrepr::float_repr(f64::INFINITY), "inf");
    assert_eq!(e2a::pyrepr::float_repr(f64::NAN), "nan");
}

// --- `parse_prompt_blocks`: non-string fields -------------------------------------------------

/// JSON values and Python's `str(value or "")` of them.
fn py_str_or_empty() -> impl Strategy<Value = (Value, &'static str)> {
    prop::sample::select(vec![
        (json!(5), "5"),
        (json!(-1.5), "-1.5"),
        (json!(true), "True"),
        (json!([1, "a"]), "[1, 'a']"),
        (json!({"k": null}), "{'k': None}"),
        (json!(0), ""),
        (json!(false), ""),
        (json!(""), ""),
        (json!([]), ""),
        (json!({}), ""),
        (Value::Null, ""),
        (json!(" https://h/x "), "https://h/x"),
    ])
}

proptest! {
    /// `resource_link` and `resource` blocks format non-string `uri`, `name`, `type` and
    /// `mimeType` with Python's `str()` (falsy values are blank), as the reference's
    /// `str(item.get(k) or "").strip()` does.
    #[test]
    fn prompt_block_fields_are_python_str((uri, uri_s) in py_str_or_empty(), (name, name_s) in py_str_or_empty()) {
        let out = output("acp.parse_prompt_blocks", &json!({"prompt": [{"type": "resource_link", "uri": uri, "name": name}]}));
        let expected = if uri_s.is_empty() {
            String::new()
        } else {
            format!("[Linked resource] {}: {uri_s}", if name_s.is_empty() { "resource" } else { name_s })
        };
        prop_assert_eq!(out["text"].as_str(), Some(expected.as_str()));
        let res = output("acp.parse_prompt_blocks", &json!({"prompt": [{"type": "resource", "resource": {"uri": uri, "text": "T"}}]}));
        let attr = if uri_s.is_empty() { String::new() } else { format!(" uri=\"{uri_s}\"") };
        prop_assert_eq!(&res["text"], &json!(format!("<context{attr}>\nT\n</context>")));
    }
}

#[test]
fn prompt_block_basename_is_pure_path_name() {
    let out = output(
        "acp.parse_prompt_blocks",
        &json!({"prompt": [{"type": "resource_link", "uri": "file:///a/b/"},
            {"type": "image", "data": "AA==", "mimeType": " IMAGE/PNG ", "uri": "file:///x/y.png/"}]}),
    );
    assert_eq!(out["attachments"][0]["filename"], "b");
    assert_eq!(out["media_items"][0]["filename"], "y.png");
    assert_eq!(out["media_items"][0]["mimeType"], "image/png");
}

// --- `a2a.envelope_from_send_message`: the message body is an object ---------------------------

fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z ]{0,6}".prop_map(Value::String),
        prop::collection::vec(any::<i32>().prop_map(Value::from), 0..3).prop_map(Value::Array),
        prop::collection::btree_map("[a-z]{1,4}", any::<i32>().prop_map(Value::from), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
}

proptest! {
    /// A non-object `message_body` is an error naming it (deliberate difference 1); an object
    /// or null is kept as `params.message`.
    #[test]
    fn send_message_body_is_an_object(body in any_json()) {
        let answer = call("a2a.envelope_from_send_message", &json!({"task_id": "t", "context_id": "c", "message_body": body}));
        match (&body, answer) {
            (Value::Object(_) | Value::Null, Outcome::Output(env)) => prop_assert_eq!(&env["params"]["message"], &body),
            (Value::Object(_) | Value::Null, other) => prop_assert!(false, "{:?}", other),
            (_, Outcome::Error(e)) => prop_assert!(e.contains("/message_body"), "{}", e),
            (_, other) => prop_assert!(false, "{} accepted: {:?}", body, other),
        }
    }
}

// --- ACP tool-update and session-list builders -------------------------------------------------

proptest! {
    /// The tool-call builder writes `str(name or "")` (never null), strips an explicit title
    /// and kind (`other` when the kind strips to nothing) and writes a non-string title with
    /// `str()`.
    #[test]
    fn tool_call_name_and_title((name, name_s) in py_str_or_empty(), (title, title_s) in py_str_or_empty(), pad in py_space()) {
        let mut call_obj = json!({"id": "c1", "kind": format!("{pad}read{pad}")});
        if !name.is_null() {
            call_obj["name"] = name.clone();
        }
        call_obj["title"] = title.clone();
        let u = output("acp.tool_call_update", &json!({"tool_call": call_obj}));
        let raw_name = match &name { Value::String(s) => s.as_str(), _ => name_s };
        prop_assert_eq!(u["toolCall"]["name"].as_str(), Some(raw_name));
        prop_assert_eq!(u["kind"].as_str(), Some("read"));
        if !title_s.is_empty() {
            prop_assert_eq!(u["title"].as_str(), Some(title_s));
        }
    }

    /// A result that is not null or `""` (`false`, `0`, `[]` too) completes the call and is
    /// kept as `result`; `content` is `str(result or "")` stripped, so a falsy result has none;
    /// an `error` that is not null or `""` fails it.
    #[test]
    fn tool_result_status_follows_not_in_none_or_empty(result in any_json(), error in prop::option::of(any_json())) {
        let mut p = json!({"tool_call_id": "t", "tool_name": "bash", "result": result});
        if let Some(e) = &error {
            p["error"] = e.clone();
        }
        let u = output("acp.tool_result_update", &p);
        let some = |v: &Value| !(v.is_null() || v == "");
        let failed = error.as_ref().is_some_and(some);
        let status = if failed { "failed" } else if some(&result) { "completed" } else { "in_progress" };
        prop_assert_eq!(u["status"].as_str(), Some(status), "{}", u);
        prop_assert_eq!(u.get("result"), Some(&result).filter(|r| some(r)));
        prop_assert_eq!(u.get("content").is_some(), py_truthy(&result) && !py_strip(&e2a::pyrepr::py_str(&result)).is_empty());
    }

    /// Session ids: `str(id or "").strip()`, so falsy ids (0, false, "", [], {}) are dropped and
    /// other non-strings are written with `str()`.
    #[test]
    fn session_list_drops_falsy_ids(ids in prop::collection::vec(py_str_or_empty(), 0..6)) {
        let out = output("acp.session_list_result", &json!({"session_ids": ids.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>()}));
        let mut expected: Vec<&str> = Vec::new();
        for (_, s) in &ids {
            if !s.is_empty() && !expected.contains(s) {
                expected.push(s);
            }
        }
        let got: Vec<&str> = out["sessions"].as_array().into_iter().flatten().filter_map(|x| x["sessionId"].as_str()).collect();
        prop_assert_eq!(got, expected);
    }
}

// --- integers beyond 64 bits -------------------------------------------------------------------

fn big_integer() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1000).prop_map(|k| format!("-{}", 9223372036854775809u128 + u128::from(k))),
        (0u32..1000).prop_map(|k| format!("{}", 18446744073709551616u128 + u128::from(k))),
        "[1-9][0-9]{20,30}",
        "-[1-9][0-9]{20,30}",
    ]
}

proptest! {
    /// An integer beyond 64 bits is refused (deliberate difference 4), never answered as a
    /// rounded float; integers within 64 bits come back exactly.
    #[test]
    fn integers_beyond_64_bits_are_refused(big in big_integer(), small in any::<i64>(), unsigned in any::<u64>()) {
        let line = format!(r#"{{"id": "x", "fn": "envelope.from_dict", "input": {{"params": {{"n": {big}}}}}}}"#);
        let answer: Value = serde_json::from_str(&e2a::conformance::answer_line(&line)).unwrap_or(Value::Null);
        prop_assert!(answer.get("error").is_some(), "{}", answer);
        prop_assert_eq!(&answer["id"], "x");
        let rpc = format!(r#"{{"id": 1, "fn": "acp.envelope_from_jsonrpc", "input": {{"method": "m", "jsonrpc_id": {big}}}}}"#);
        let answer: Value = serde_json::from_str(&e2a::conformance::answer_line(&rpc)).unwrap_or(Value::Null);
        prop_assert!(answer.get("error").is_some(), "{}", answer);
        let ok = format!(r#"{{"id": 2, "fn": "envelope.from_dict", "input": {{"jsonrpc_id": {small}, "params": {{"n": {unsigned}, "m": {small}}}}}}}"#);
        let answer: Value = serde_json::from_str(&e2a::conformance::answer_line(&ok)).unwrap_or(Value::Null);
        prop_assert_eq!(&answer["output"]["params"]["n"], &json!(unsigned));
        prop_assert_eq!(&answer["output"]["params"]["m"], &json!(small));
        prop_assert_eq!(&answer["output"]["jsonrpc_id"], &json!(small));
    }
}

// --- the driver answers every line --------------------------------------------------------------

fn driver_answers(input: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    if let Err(e) = drive(input, &mut out) {
        panic!("driver stopped: {e}");
    }
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect()
}

fn request(id: usize) -> Vec<u8> {
    format!(r#"{{"id": {id}, "fn": "acp.session_new_result", "input": {{"session_id": "s{id}"}}}}"#).into_bytes()
}

proptest! {
    /// Lines that are not UTF-8 get an error answer (with their id when it can be read) and
    /// every line after them is still answered, in order.
    #[test]
    fn driver_answers_every_line(bad in prop::collection::vec(prop::bool::weighted(0.3), 1..12), first in 0x80u8..=0xbf, junk in prop::collection::vec(0x80u8..=0xff, 0..3)) {
        let mut input = Vec::new();
        for (i, is_bad) in bad.iter().enumerate() {
            let mut line = request(i);
            if *is_bad {
                let at = line.len() - 3;
                // a continuation byte first: never UTF-8
                line.splice(at..at, std::iter::once(first).chain(junk.iter().copied()));
            }
            input.extend(line);
            input.push(b'\n');
        }
        let answers = driver_answers(&input);
        prop_assert_eq!(answers.len(), bad.len());
        for (i, (a, is_bad)) in answers.iter().zip(&bad).enumerate() {
            prop_assert_eq!(&a["id"], &json!(i));
            if *is_bad {
                prop_assert!(a["error"].as_str().is_some_and(|e| e.contains("UTF-8")), "{}", a);
            } else {
                prop_assert_eq!(&a["output"]["sessionId"], &json!(format!("s{i}")));
            }
        }
    }
}

#[test]
fn oversized_line_is_refused_before_parsing_and_the_driver_goes_on() {
    // 17 MiB of blocks: refused by size, never parsed
    let block = br#"{"type": "text", "text": "x"}, "#;
    let mut input = br#"{"id": "big", "fn": "acp.parse_prompt_blocks", "input": {"prompt": ["#.to_vec();
    while input.len() < 17 << 20 {
        input.extend_from_slice(block);
    }
    input.extend_from_slice(b"1]}}\n");
    input.extend(request(7));
    input.push(b'\n');
    let answers = driver_answers(&input);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["id"], "big");
    assert!(
        answers[0]["error"].as_str().is_some_and(|e| e.contains("max_bytes")),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["output"]["sessionId"], "s7");
}

#[test]
fn every_function_checks_the_limits() {
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    for f in e2a::conformance::FUNCTIONS {
        match call(f, &json!({"prompt": deep, "session_id": deep, "method": "m"})) {
            Outcome::Error(e) => assert!(e.contains("max_depth"), "{f}: {e}"),
            other => panic!("{f}: {other:?}"),
        }
    }
}
