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

/// What validating the files found: the problems, the notes of legacy rules applied, and how
/// many envelopes and responses were read.
#[derive(Default)]
struct Report {
    problems: Vec<Problem>,
    notes: Vec<Value>,
    envelopes: usize,
    responses: usize,
}

/// The stream invariants of one file's responses: the validator, how many of its violations are
/// reported, and the line where each unfinished stream was last seen.
#[derive(Default)]
struct Streams {
    validator: StreamValidator,
    reported: usize,
    last_line: HashMap<Option<String>, usize>,
}

/// Runs validation; returns the exit code (0 valid, 1 invalid, 2 I/O error).
pub fn run(files: &[String], mode: ReadMode, json_out: bool) -> u8 {
    let options = ReadOptions {
        mode,
        limits: e2a::Limits::default(),
    };
    let mut report = Report::default();
    for file in files {
        if let Err(e) = report.check_file(file, &options) {
            eprintln!("e2a validate: {file}: {e}");
            return 2;
        }
    }
    if json_out {
        report.print_json();
    } else {
        report.print_text();
    }
    u8::from(!report.problems.is_empty())
}

impl Report {
    /// Reads every document of `file`, then reports the streams it leaves unfinished.
    fn check_file(&mut self, file: &str, options: &ReadOptions) -> std::io::Result<()> {
        let mut streams = Streams::default();
        for_each_doc(file, |doc| match doc.value {
            Ok(v) if is_response(&v) => self.check_response(&v, file, doc.line, options, &mut streams),
            Ok(v) => self.check_envelope(&v, file, doc.line, options),
            Err(e) => self.problem(file, doc.line, String::new(), e),
        })?;
        streams.finish(file, &mut self.problems);
        Ok(())
    }

    /// Reads one response, then checks it against its stream.
    fn check_response(&mut self, v: &Value, file: &str, line: usize, options: &ReadOptions, streams: &mut Streams) {
        self.responses += 1;
        let read = E2AResponse::read_value(v, options).map(|l| {
            note_rules(&mut self.notes, file, line, &l.rules);
            l.value
        });
        match read {
            Ok(r) => streams.push(r, file, line, &mut self.problems),
            Err(e) => self.error(file, line, e),
        }
    }

    /// Reads one envelope.
    fn check_envelope(&mut self, v: &Value, file: &str, line: usize, options: &ReadOptions) {
        self.envelopes += 1;
        let read = E2AEnvelope::read_value(v, options).map(|l| note_rules(&mut self.notes, file, line, &l.rules));
        if let Err(e) = read {
            self.error(file, line, e);
        }
    }

    /// Records one problem.
    fn problem(&mut self, file: &str, line: usize, pointer: String, reason: String) {
        self.problems.push(Problem {
            file: file.to_string(),
            line,
            pointer,
            reason,
        });
    }

    /// Records a read error: one problem per violation it names, or the error itself.
    fn error(&mut self, file: &str, line: usize, err: e2a::Error) {
        let vs = err.violations();
        if vs.is_empty() {
            self.problem(file, line, String::new(), err.to_string());
        }
        for x in vs {
            self.problem(file, line, x.pointer, x.reason);
        }
    }

    /// Prints the report as JSON lines: the problems, the notes, then a summary.
    fn print_json(&self) {
        for p in &self.problems {
            println!(
                "{}",
                json!({"file": p.file, "line": p.line, "pointer": p.pointer, "reason": p.reason})
            );
        }
        for n in &self.notes {
            println!("{n}");
        }
        println!(
            "{}",
            json!({"summary": {"envelopes": self.envelopes, "responses": self.responses, "problems": self.problems.len(), "valid": self.problems.is_empty()}})
        );
    }

    /// Prints the report as text: problems and notes on stdout, the summary on stderr.
    fn print_text(&self) {
        for p in &self.problems {
            let ptr = if p.pointer.is_empty() {
                String::new()
            } else {
                format!("{}: ", p.pointer)
            };
            println!("{}:{}: {ptr}{}", p.file, p.line, p.reason);
        }
        for n in &self.notes {
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
            self.envelopes,
            self.responses,
            if self.problems.is_empty() {
                "valid".to_string()
            } else {
                format!("{} problem(s)", self.problems.len())
            }
        );
    }
}

impl Streams {
    /// Checks one frame (read from `line` of `file`): violations are found as frames arrive, so
    /// this frame is the offender of each new one.
    fn push(&mut self, r: E2AResponse, file: &str, line: usize, problems: &mut Vec<Problem>) {
        self.validator.push(&r);
        for s in &self.validator.violations()[self.reported..] {
            problems.push(Problem {
                file: file.to_string(),
                line,
                pointer: String::new(),
                reason: format!("stream: {s}"),
            });
        }
        self.reported = self.validator.violations().len();
        // where a stream that never ends was last seen (finished streams need no entry)
        if r.is_final {
            self.last_line.remove(&r.request_id);
        } else {
            match self.last_line.get_mut(&r.request_id) {
                Some(l) => *l = line,
                None => {
                    self.last_line.insert(r.request_id, line);
                }
            }
        }
    }

    /// Reports what is wrong at the end of `file` (streams never finished), each at the line
    /// where its stream was last seen.
    fn finish(self, file: &str, problems: &mut Vec<Problem>) {
        for s in self.validator.finish().into_iter().skip(self.reported) {
            let line = self.last_line.get(&s.request_id).copied().unwrap_or(0);
            problems.push(Problem {
                file: file.to_string(),
                line,
                pointer: String::new(),
                reason: format!("stream: {s}"),
            });
        }
    }
}

/// Notes the legacy rules a lenient read applied to the document at `line` of `file`.
fn note_rules(notes: &mut Vec<Value>, file: &str, line: usize, rules: &[e2a::LegacyRule]) {
    if !rules.is_empty() {
        notes.push(json!({"file": file, "line": line, "rules": rules.iter().map(|r| r.as_str()).collect::<Vec<_>>()}));
    }
}
