//! The fields of a text log line (`name=value` after the message), written as
//! `tracing-subscriber`'s default field formatter writes them, with a shorter way for the
//! common values: a string that needs no escaping goes out between quotes as it is, a number
//! through `itoa`, a value's `Debug` without the styles of an ANSI terminal. What the short way
//! does not cover (the message, which is sanitized of terminal escapes; escaped strings; errors;
//! raw identifiers; a terminal's colours) is written by the default formatter itself, so the
//! line is the same text either way. An access line's fields were half of its cost.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{MakeVisitor, VisitFmt, VisitOutput};
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};

/// The [`tracing_subscriber::fmt::FormatFields`] of `e2a serve`'s text lines (see the module
/// docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainFields;

impl<'a> MakeVisitor<Writer<'a>> for PlainFields {
    type Visitor = PlainVisitor<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> Self::Visitor {
        PlainVisitor {
            plain: !target.has_ansi_escapes(),
            writer: target,
            is_empty: true,
            result: Ok(()),
        }
    }
}

/// The visitor of [`PlainFields`]: the fields of one line.
#[derive(Debug)]
pub struct PlainVisitor<'a> {
    writer: Writer<'a>,
    /// No terminal styles: the short way may be taken.
    plain: bool,
    is_empty: bool,
    result: fmt::Result,
}

impl PlainVisitor<'_> {
    /// Whether `field` is written the short way: not the message, not a raw identifier, and
    /// on a writer without styles. (Fields named `log.*`, the `log` crate's metadata, are
    /// never written.)
    fn short(&self, field: &Field) -> bool {
        let name = field.name();
        self.plain && name != "message" && !name.starts_with("r#")
    }

    /// Writes `name=` (after a space unless it is the first field) and then `value`.
    fn write(&mut self, field: &Field, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_err() || field.name().starts_with("log.") {
            return;
        }
        let pad = if std::mem::take(&mut self.is_empty) { "" } else { " " };
        self.result = (|| {
            self.writer.write_str(pad)?;
            self.writer.write_str(field.name())?;
            self.writer.write_char('=')?;
            value(&mut self.writer)
        })();
    }

    /// Hands `field` to the default formatter (on this writer, after the fields so far).
    fn default(&mut self, field: &Field, record: impl FnOnce(&mut DefaultVisitor<'_>, &Field)) {
        if self.result.is_err() || field.name().starts_with("log.") {
            return;
        }
        let mut default = DefaultVisitor::new(self.writer.by_ref(), self.is_empty);
        record(&mut default, field);
        self.result = default.finish();
        self.is_empty = false;
    }

    fn number(&mut self, field: &Field, digits: &str) {
        self.write(field, |w| w.write_str(digits));
    }
}

/// Whether `value`'s `Debug` text is `value` between quotes: printable ASCII without a quote
/// or a backslash.
fn needs_no_escape(value: &str) -> bool {
    // (sixteen bytes at a time, each chunk checked whole: the compiler checks them side by side)
    value.as_bytes().chunks(16).all(|chunk| {
        chunk.iter().fold(true, |ok, &b| {
            ok & (b' '..=b'~').contains(&b) & (b != b'"') & (b != b'\\')
        })
    })
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.short(field) && needs_no_escape(value) {
            self.write(field, |w| {
                w.write_char('"')?;
                w.write_str(value)?;
                w.write_char('"')
            });
        } else {
            self.default(field, |d, f| d.record_str(f, value));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.short(field) {
            self.number(field, itoa::Buffer::new().format(value));
        } else {
            self.default(field, |d, f| d.record_u64(f, value));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.short(field) {
            self.number(field, itoa::Buffer::new().format(value));
        } else {
            self.default(field, |d, f| d.record_i64(f, value));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.short(field) {
            self.number(field, if value { "true" } else { "false" });
        } else {
            self.default(field, |d, f| d.record_bool(f, value));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.default(field, |d, f| d.record_error(f, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.short(field) {
            self.write(field, |w| write!(w, "{value:?}"));
        } else {
            self.default(field, |d, f| d.record_debug(f, value));
        }
    }
}

impl VisitOutput<fmt::Result> for PlainVisitor<'_> {
    fn finish(self) -> fmt::Result {
        self.result
    }
}

impl VisitFmt for PlainVisitor<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        &mut self.writer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use proptest::prelude::*;
    use tracing_subscriber::fmt::format::DefaultFields;
    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::layer::SubscriberExt;

    use super::PlainFields;

    /// The lines written, kept.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lines").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Lines {
        type Writer = Lines;
        fn make_writer(&'a self) -> Lines {
            self.clone()
        }
    }

    /// What `events` write with the default field formatter and with [`PlainFields`], with
    /// terminal styles or without.
    fn both(ansi: bool, events: impl Fn()) -> (String, String) {
        let written = |plain: bool| {
            let lines = Lines::default();
            let layer = tracing_subscriber::fmt::layer()
                .without_time()
                .with_ansi(ansi)
                .with_writer(lines.clone());
            let subscriber = tracing_subscriber::registry();
            if plain {
                tracing::subscriber::with_default(subscriber.with(layer.fmt_fields(PlainFields)), &events);
            } else {
                tracing::subscriber::with_default(subscriber.with(layer.fmt_fields(DefaultFields::new())), &events);
            }
            let text = lines.0.lock().expect("lines").clone();
            String::from_utf8(text).expect("utf-8")
        };
        (written(false), written(true))
    }

    fn events(text: &str) {
        let err = std::io::Error::other(text.to_string());
        tracing::info!(
            target: "e2a::access",
            method = %"POST",
            route = text,
            status = 200u16,
            latency_ms = %format_args!("{:.3}", 1.25),
            caller = "-",
            trace_id = text,
            "request"
        );
        tracing::warn!(
            n = -3i64,
            yes = true,
            big = u64::MAX,
            f = 0.5f64,
            r#type = text,
            "{text}"
        );
        tracing::error!(error = &err as &(dyn std::error::Error + 'static), debugged = ?text, "failed: {}", text);
        tracing::info!(log.target = "x", after = text);
        tracing::info!(text);
        let span = tracing::info_span!("outer", id = text, n = 1u64);
        let _in = span.enter();
        tracing::info!(inner = text, "in a span");
    }

    #[test]
    fn lines_are_the_default_formatters_text() {
        for text in [
            "",
            "/v1/e2a/requests",
            "say \"hi\"",
            "back\\slash",
            "tab\there",
            "new\nline",
            "esc \u{1b}[31m red",
            "ünïcödé ✓",
            "c1 \u{85} control",
            "it's",
            "del \u{7f}",
        ] {
            for ansi in [false, true] {
                let (default, plain) = both(ansi, || events(text));
                assert!(default.contains("request") || ansi, "{default}");
                assert_eq!(plain, default, "ansi {ansi}, {text:?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_text_is_written_as_the_default_writes_it(
            // mostly printable ASCII (the short way), with what needs escaping now and then
            text in prop_oneof![any::<String>(), "[ -~]{0,16}", "[ -~\t\n\u{1b}\u{85}é]{0,16}"]
        ) {
            let (default, plain) = both(false, || events(&text));
            prop_assert_eq!(plain, default);
        }
    }
}
