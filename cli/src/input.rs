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

/// The next non-blank line (without its line ending) and its number; `n` counts lines read.
fn next_line(reader: &mut dyn BufRead, n: &mut usize, buf: &mut String) -> std::io::Result<bool> {
    loop {
        buf.clear();
        if reader.read_line(buf)? == 0 {
            return Ok(false);
        }
        *n += 1;
        let end = buf.trim_end_matches(['\n', '\r']).len();
        buf.truncate(end);
        if !buf.trim().is_empty() {
            return Ok(true);
        }
    }
}

/// Calls `f` with every document of a JSON or JSONL input: a file holding one JSON value (an
/// array is read as its items) or one JSON value per line. JSONL is streamed line by line
/// (constant memory); only a multi-line JSON document is read whole.
pub fn for_each_doc(path: &str, mut f: impl FnMut(Doc)) -> std::io::Result<()> {
    let mut reader = open(path)?;
    let (mut n, mut buf) = (0, String::new());
    if !next_line(&mut *reader, &mut n, &mut buf)? {
        return Ok(());
    }
    // the first non-blank line decides: JSONL, or one (multi-line) JSON document
    let t = buf.trim();
    if t.starts_with('[') || (t.starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(t).is_err()) {
        let mut text = "\n".repeat(n - 1) + &buf + "\n";
        reader.read_to_string(&mut text)?;
        docs_of_text(&text).into_iter().for_each(f);
        return Ok(());
    }
    loop {
        f(Doc {
            line: n,
            value: parse(&buf),
        });
        if !next_line(&mut *reader, &mut n, &mut buf)? {
            return Ok(());
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
    let (mut n, mut buf) = (0, String::new());
    while next_line(&mut *reader, &mut n, &mut buf)? {
        f(n, &buf)?;
    }
    Ok(())
}

/// Whether a line is an E2A response (else it is read as an envelope): the library's one
/// classifier of message shapes.
pub fn is_response(v: &serde_json::Value) -> bool {
    e2a::wire::classify(v) == e2a::wire::MessageShape::Response
}
