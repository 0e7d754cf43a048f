//! `e2a validate`: reading in one of the three modes (strict by default, `--canonical`,
//! `--lenient`) plus stream invariants.

use std::collections::HashMap;

use e2a::stream::StreamValidator;
use e2a::{E2AEnvelope, E2AResponse, ReadMode, ReadOptions};
use serde_json::{json, Value};

use crate::input::{for_each_doc, is_response};

/// One problem found.
struct Problem {
    file: String,
    line: usize,
    pointer: String,
    reason: String,
}

/// Runs validation; returns the exit code (0 valid, 1 invalid, 2 I/O error).
pub fn run(files: &[String], mode: ReadMode, json_out: bool) -> u8 {
    let options = ReadOptions {
        mode,
        limits: e2a::Limits::default(),
    };
    let mut problems = Vec::new();
    let mut notes: Vec<Value> = Vec::new();
    let (mut envelopes, mut responses) = (0usize, 0usize);
    for file in files {
        let mut stream = StreamValidator::new();
        let mut last_line: HashMap<Option<String>, usize> = HashMap::new();
        let mut reported = 0;
        let read = for_each_doc(file, |doc| {
            let v = match doc.value {
                Ok(v) => v,
                Err(e) => {
                    problems.push(Problem {
                        file: file.clone(),
                        line: doc.line,
                        pointer: String::new(),
                        reason: e,
                    });
                    return;
                }
            };
            let push = |problems: &mut Vec<Problem>, err: e2a::Error| {
                let vs = err.violations();
                if vs.is_empty() {
                    problems.push(Problem {
                        file: file.clone(),
                        line: doc.line,
                        pointer: String::new(),
                        reason: err.to_string(),
                    });
                }
                for x in vs {
                    problems.push(Problem {
                        file: file.clone(),
                        line: doc.line,
                        pointer: x.pointer,
                        reason: x.reason,
                    });
                }
            };
            if is_response(&v) {
                responses += 1;
                let read = E2AResponse::read_value(&v, &options).map(|l| {
                    note_rules(&mut notes, file, doc.line, &l.rules);
                    l.value
                });
                match read {
                    Ok(r) => {
                        stream.push(&r);
                        // violations are found as frames arrive: this frame is the offender
                        for s in &stream.violations()[reported..] {
                            problems.push(Problem {
                                file: file.clone(),
                                line: doc.line,
                                pointer: String::new(),
                                reason: format!("stream: {s}"),
                            });
                        }
                        reported = stream.violations().len();
                        // where a stream that never ends was last seen (finished streams need no entry)
                        if r.is_final {
                            last_line.remove(&r.request_id);
                        } else {
                            match last_line.get_mut(&r.request_id) {
                                Some(l) => *l = doc.line,
                                None => {
                                    last_line.insert(r.request_id, doc.line);
                                }
                            }
                        }
                    }
                    Err(e) => push(&mut problems, e),
                }
            } else {
                envelopes += 1;
                let read =
                    E2AEnvelope::read_value(&v, &options).map(|l| note_rules(&mut notes, file, doc.line, &l.rules));
                if let Err(e) = read {
                    push(&mut problems, e);
                }
            }
        });
        if let Err(e) = read {
            eprintln!("e2a validate: {file}: {e}");
            return 2;
        }
        for s in stream.finish().into_iter().skip(reported) {
            let line = last_line.get(&s.request_id).copied().unwrap_or(0);
            problems.push(Problem {
                file: file.clone(),
                line,
                pointer: String::new(),
                reason: format!("stream: {s}"),
            });
        }
    }
    if json_out {
        for p in &problems {
            println!(
                "{}",
                json!({"file": p.file, "line": p.line, "pointer": p.pointer, "reason": p.reason})
            );
        }
        for n in &notes {
            println!("{n}");
        }
        println!(
            "{}",
            json!({"summary": {"envelopes": envelopes, "responses": responses, "problems": problems.len(), "valid": problems.is_empty()}})
        );
    } else {
        for p in &problems {
            let ptr = if p.pointer.is_empty() {
                String::new()
            } else {
                format!("{}: ", p.pointer)
            };
            println!("{}:{}: {ptr}{}", p.file, p.line, p.reason);
        }
        for n in &notes {
            println!(
                "{}:{}: lenient: legacy rules applied: {}",
                n["file"].as_str().unwrap_or(""),
                n["line"],
                n["rules"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            );
        }
        eprintln!(
            "{} envelope(s), {} response(s): {}",
            envelopes,
            responses,
            if problems.is_empty() {
                "valid".to_string()
            } else {
                format!("{} problem(s)", problems.len())
            }
        );
    }
    u8::from(!problems.is_empty())
}

fn note_rules(notes: &mut Vec<Value>, file: &str, line: usize, rules: &[e2a::LegacyRule]) {
    if !rules.is_empty() {
        notes.push(json!({"file": file, "line": line, "rules": rules.iter().map(|r| r.as_str()).collect::<Vec<_>>()}));
    }
}
