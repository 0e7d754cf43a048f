//! The log subscriber of `e2a serve`: text or JSON lines on stderr (level from `$E2A_LOG`,
//! default `info`), and, with `[telemetry] otlp_endpoint`, the gateway's spans (`request`,
//! `agent.run`, `backend.call`, recorded at debug level whatever `$E2A_LOG` says) exported as
//! OpenTelemetry traces over OTLP/HTTP.
//!
//! Lines go to stderr in batches ([`crate::log_lines`]): a request's access line waits at most
//! [`crate::log_lines::EVERY`] in memory, and what is still waiting is written when
//! [`Telemetry`] is dropped, as the process ends.

use e2a_gateway::config_file::ConfigFile;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// What the log subscriber of `e2a serve` holds until the process exits: the writer of its
/// lines (dropped, it writes what is still queued) and, when spans are exported, the tracer
/// provider to shut down ([`Telemetry::finish`]).
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    _lines: crate::log_lines::Batches<std::io::Stderr>,
}

impl Telemetry {
    /// Sends the spans still batched (when spans are exported) and writes the log lines still
    /// queued, before the process exits.
    pub fn finish(self) {
        if let Some(provider) = &self.provider {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the subscriber `file` asks for (see the module docs).
pub fn init(file: &ConfigFile) -> Result<Telemetry, String> {
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_env("E2A_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
    };
    let (stderr, lines) = crate::log_lines::batched(std::io::stderr());
    let fmt: Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync> = match file.settings.log.format {
        e2a::types::LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_timer(LineTime)
            .with_writer(stderr)
            .with_filter(filter())
            .boxed(),
        e2a::types::LogFormat::Text => tracing_subscriber::fmt::layer()
            .fmt_fields(crate::log_fields::PlainFields)
            .with_timer(LineTime)
            .with_writer(stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter())
            .boxed(),
    };
    let telemetry = file.settings.telemetry.clone().unwrap_or_default();
    let Some(endpoint) = telemetry.otlp_endpoint else {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
        return Ok(Telemetry {
            provider: None,
            _lines: lines,
        });
    };
    let endpoint = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(&endpoint)
        .build()
        .map_err(|e| {
            file.error("/telemetry/otlp_endpoint", format!("cannot export to {endpoint}: {e}"))
                .to_string()
        })?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(telemetry.service_name.clone())
        .build();
    // batches go out every second (the SDK's default is five)
    let batches = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_scheduled_delay(std::time::Duration::from_secs(1))
        .build();
    let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(batches)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("e2a-gateway");
    let spans = tracing_subscriber::filter::Targets::new()
        .with_target("e2a_gateway", tracing::Level::DEBUG)
        .with_default(tracing::Level::WARN);
    let otel = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans);
    let _ = tracing_subscriber::registry().with(fmt).with(otel).try_init();
    Ok(Telemetry {
        provider: Some(provider),
        _lines: lines,
    })
}

/// The time of a log line as `tracing-subscriber`'s default timer writes it, in UTC to the
/// microsecond (`2026-12-07T08:23:23.751264Z`), with its date and time to the second made once
/// a second per thread ([`e2a::timestamp::with_second`]) instead of once a line (the calendar
/// arithmetic was a sixth of an access line's cost).
#[derive(Debug, Clone, Copy, Default)]
struct LineTime;

impl tracing_subscriber::fmt::time::FormatTime for LineTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let second = i64::try_from(now.as_secs())
            .ok()
            .and_then(|secs| e2a::timestamp::with_second(secs, |text| write_micros(w, text, now.subsec_micros())));
        // beyond year 9999: as the default timer writes it
        second.unwrap_or_else(|| tracing_subscriber::fmt::time::SystemTime.format_time(w))
    }
}

/// `{second}.{micros:06}Z`, the digits written by hand (the formatting machinery's padding
/// was most of a line time's cost).
fn write_micros(w: &mut tracing_subscriber::fmt::format::Writer<'_>, second: &str, micros: u32) -> std::fmt::Result {
    let mut tail = *b".000000Z";
    let mut rest = micros.min(999_999);
    for digit in tail[1..7].iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    w.write_str(second)?;
    w.write_str(std::str::from_utf8(&tail).map_err(|_| std::fmt::Error)?)
}

#[cfg(test)]
mod tests {
    use super::LineTime;
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

    fn written(timer: &impl FormatTime) -> String {
        let mut out = String::new();
        timer.format_time(&mut Writer::new(&mut out)).expect("written");
        out
    }

    #[test]
    fn micros_are_written_as_the_padded_formatting_writes_them() {
        for micros in [0, 7, 42, 999, 1_000, 123_456, 999_999] {
            let mut out = String::new();
            super::write_micros(&mut Writer::new(&mut out), "2026-12-07T08:23:23", micros).expect("written");
            assert_eq!(out, format!("2026-12-07T08:23:23.{micros:06}Z"));
        }
    }

    #[test]
    fn a_line_time_is_written_as_the_default_timer_writes_it() {
        // twice, on one thread: the second one is the second's text kept
        for _ in 0..2 {
            let (ours, theirs) = loop {
                let (ours, theirs) = (written(&LineTime), written(&SystemTime));
                // the same second (retried if a second began between the two)
                if ours.get(..19) == theirs.get(..19) {
                    break (ours, theirs);
                }
            };
            assert_eq!(ours.len(), theirs.len(), "{ours} / {theirs}");
            assert_eq!(
                (ours.as_bytes()[19], ours.ends_with('Z')),
                (b'.', true),
                "{ours} / {theirs}"
            );
            assert!(
                ours.get(20..26).is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit())),
                "{ours}"
            );
        }
    }
}
