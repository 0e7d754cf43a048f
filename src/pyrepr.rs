//! Python's string semantics where the reference relies on them: `str()` of JSON values (legacy
//! `binding`, legacy error messages: `None`, `True`, `'quoted'` strings inside containers,
//! `{'k': v}`), and `str.strip()` / `str.isspace()` / `str.isprintable()`. Every place that
//! mirrors a Python `.strip()` uses [`strip`], so the whitespace set lives here only.

use serde_json::Value;
use std::fmt::Write as _;

/// Python `str(value)` for a JSON value.
///
/// ```
/// use serde_json::json;
/// assert_eq!(e2a::pyrepr::py_str(&json!(null)), "None");
/// assert_eq!(e2a::pyrepr::py_str(&json!("x")), "x");
/// assert_eq!(e2a::pyrepr::py_str(&json!({"a": [1, true, "b"]})), "{'a': [1, True, 'b']}");
/// ```
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        _ => {
            let mut out = String::new();
            repr(v, &mut out);
            out
        }
    }
}

fn repr(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => {
                let _ = write!(out, "{i}");
            }
            (_, Some(u), _) => {
                let _ = write!(out, "{u}");
            }
            (_, _, Some(f)) => out.push_str(&float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => str_repr(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                str_repr(k, out);
                out.push_str(": ");
                repr(x, out);
            }
            out.push('}');
        }
    }
}

/// Python `repr(float)`: the shortest digits that read back as the same double (when two are
/// equally short and equally close, the even one, as Python's and Ryū's algorithms choose;
/// Rust's `{}` rounds that tie up), scientific (`1e+16`, `1.5e-05`) outside
/// 1e-4 ≤ |x| < 1e16; `inf`, `-inf`, `nan`, `-0.0`.
///
/// ```
/// use e2a::pyrepr::float_repr;
/// assert_eq!(float_repr(1223383794756801.2), "1223383794756801.2"); // the exact value ends in .25
/// assert_eq!(float_repr(1e16), "1e+16");
/// assert_eq!(float_repr(-0.0), "-0.0");
/// ```
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let mut buf = ryu::Buffer::new();
    let (digits, exp) = shortest_digits(buf.format_finite(f));
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let m = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{sign}{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{sign}{a}.{b}")
    }
}

/// Python's `str.isspace()` for one character: the Unicode `White_Space` characters plus the
/// ASCII information separators U+001C–U+001F (which Python counts as whitespace and Rust's
/// [`char::is_whitespace`] does not).
///
/// ```
/// assert!(e2a::pyrepr::is_space('\u{1f}'));
/// assert!(e2a::pyrepr::is_space('\u{3000}'));
/// assert!(!e2a::pyrepr::is_space('\u{200b}'));
/// ```
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument: `s` without leading and trailing [`is_space`]
/// characters.
///
/// ```
/// assert_eq!(e2a::pyrepr::strip("\u{1c} id\u{a0}\n"), "id");
/// ```
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// True when Python's `s.strip()` is empty (`s` is empty or all whitespace).
pub fn is_blank(s: &str) -> bool {
    s.chars().all(is_space)
}

/// Python's `str.isprintable()` for one character: false for the general categories `Cc`,
/// `Cf`, `Cs`, `Co`, `Cn` (other) and `Zl`, `Zp`, `Zs` (separators) except the ASCII space.
/// `repr()` escapes exactly these characters. Categories come from Unicode 16.0 (the tables of
/// `unicode-general-category`; Python 3.14's `unicodedata` is 16.0 too).
///
/// ```
/// assert!(e2a::pyrepr::is_printable(' '));
/// assert!(!e2a::pyrepr::is_printable('\u{a0}'));
/// assert!(!e2a::pyrepr::is_printable('\u{200d}'));
/// assert!(e2a::pyrepr::is_printable('é'));
/// ```
pub fn is_printable(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    if c == ' ' {
        return true;
    }
    if c.is_ascii() {
        return !c.is_ascii_control();
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::SpaceSeparator
    )
}

/// Python's `repr()` of a string: quoted with `'` (or `"` when the text has a `'` and no `"`),
/// backslash, the quote, `\t`, `\n`, `\r` escaped, and every character that is not
/// [`is_printable`] written as `\xNN`, `\uNNNN` or `\UNNNNNNNN`.
/// The significant digits of a decimal number written by Ryū (`"-1.25e-7"`, `"0.001"`,
/// `"1e16"`, `"120.0"`) and the power of ten of its first digit: `("125", -7)`, `("1", -3)`,
/// `("1", 16)`, `("12", 2)`; zero is `("0", 0)`.
fn shortest_digits(text: &str) -> (String, i32) {
    let text = text.trim_start_matches('-');
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = int.chars().chain(frac.chars()).collect();
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all[lead..].trim_end_matches('0');
    if digits.is_empty() {
        return ("0".into(), 0);
    }
    // digits before the decimal point, less the leading zeros dropped, minus one
    let first = int.len() as i32 + exp - lead as i32 - 1;
    (digits.to_string(), first)
}

fn str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let n = c as u32;
                let _ = match n {
                    0..=0xff => write!(out, "\\x{n:02x}"),
                    0x100..=0xffff => write!(out, "\\u{n:04x}"),
                    _ => write!(out, "\\U{n:08x}"),
                };
            }
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn floats_like_python() {
        for (f, s) in [
            (1.5, "1.5"),
            (1e16, "1e+16"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (3.0, "3.0"),
            (-2.5e-7, "-2.5e-07"),
            (123456789012345.6, "123456789012345.6"),
            (0.1, "0.1"),
        ] {
            assert_eq!(float_repr(f), s);
        }
    }
    #[test]
    fn strings_like_python() {
        assert_eq!(
            py_str(&serde_json::json!(["it's", "a\"b'c", "x\ny"])),
            r#"["it's", 'a"b\'c', 'x\ny']"#
        );
    }
}
