//! Reading JSON / JSONL inputs (files or stdin) line by line, with line numbers.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

/// One JSON document of an input and where it starts.
pub struct Doc {
    /// 1-based line number.
    pub line: usize,
    /// Parsed JSON, or the parse error text.
    pub value: Result<serde_json::Value, String>,
}

/// Opens `path` (`-` = stdin) as a buffered reader.
pub fn open(path: &str) -> std::io::Result<Box<dyn BufRead>> {
    if path == "-" {
        Ok(Box::new(BufReader::new(std::io::stdin())))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, File::open(path)?)))
    }
}

fn parse(raw: &str) -> Result<serde_json::Value, String> {
    e2a::Limits::default().parse(raw).map_err(|e| e.to_string())
}

/// Calls `f` with every document of a JSON or JSONL input: a file holding one JSON value (an
/// array is read as its items) or one JSON value per line. JSONL is streamed line by line
/// (constant memory); only a multi-line JSON document is read whole.
pub fn for_each_doc(path: &str, mut f: impl FnMut(Doc)) -> std::io::Result<()> {
    let mut reader = open(path)?;
    let mut first = String::new();
    let mut first_no = 0;
    loop {
        first.clear();
        if reader.read_line(&mut first)? == 0 {
            return Ok(());
        }
        first_no += 1;
        if !first.trim().is_empty() {
            break;
        }
    }
    let t = first.trim();
    let whole = t.starts_with('[') || (t.starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(t).is_err());
    if whole {
        let mut text = "\n".repeat(first_no - 1) + &first;
        reader.read_to_string(&mut text)?;
        for d in docs_of_text(&text) {
            f(d);
        }
        return Ok(());
    }
    f(Doc {
        line: first_no,
        value: parse(t),
    });
    let mut n = first_no;
    let mut buf = String::new();
    loop {
        buf.clear();
        if reader.read_line(&mut buf)? == 0 {
            return Ok(());
        }
        n += 1;
        if !buf.trim().is_empty() {
            f(Doc {
                line: n,
                value: parse(buf.trim_end_matches(['\n', '\r'])),
            });
        }
    }
}

fn docs_of_text(text: &str) -> Vec<Doc> {
    let trimmed = text.trim_start();
    let multi_line_json = trimmed.starts_with('[') || (trimmed.starts_with('{') && text.trim().lines().count() > 1);
    if multi_line_json {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
            let line = text.len() - trimmed.len();
            let first = text[..line].matches('\n').count() + 1;
            let items = match v {
                serde_json::Value::Array(a) => a,
                other => vec![other],
            };
            return items
                .into_iter()
                .map(|v| Doc {
                    line: first,
                    value: Ok(v),
                })
                .collect();
        }
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Doc {
            line: i + 1,
            value: parse(l),
        })
        .collect()
}

/// Calls `f` for each non-blank line of a JSONL input, streaming (constant memory).
pub fn for_each_line(path: &str, mut f: impl FnMut(usize, &str) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut reader = open(path)?;
    let mut buf = String::new();
    let mut n = 0;
    loop {
        buf.clear();
        if reader.read_line(&mut buf)? == 0 {
            return Ok(());
        }
        n += 1;
        let line = buf.trim_end_matches(['\n', '\r']);
        if !line.trim().is_empty() {
            f(n, line)?;
        }
    }
}

/// True when a JSON object looks like a response frame rather than a request envelope.
pub fn is_response(v: &serde_json::Value) -> bool {
    ["response_kind", "response_id", "sequence", "is_final"]
        .iter()
        .any(|k| v.get(*k).is_some())
}
