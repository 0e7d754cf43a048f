//! Timestamps the way the Python reference writes them.
//!
//! Epoch-second numbers become ISO-8601 UTC with a `+00:00` offset, microseconds printed as six
//! digits only when non-zero, sub-microsecond rounding half-to-even — byte for byte what
//! CPython's `datetime.fromtimestamp(ts, timezone.utc).isoformat()` prints.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds of 0001-01-01T00:00:00Z relative to the Unix epoch.
const MIN_SECS: i64 = -62_135_596_800;
/// Seconds of 9999-12-31T23:59:59Z relative to the Unix epoch.
const MAX_SECS: i64 = 253_402_300_799;

/// Formats Unix epoch seconds (integer) as `YYYY-MM-DDTHH:MM:SS+00:00`.
/// Returns `None` outside years 1–9999.
///
/// ```
/// assert_eq!(e2a::timestamp::from_epoch_secs(0).as_deref(), Some("1970-01-01T00:00:00+00:00"));
/// ```
pub fn from_epoch_secs(secs: i64) -> Option<String> {
    format_parts(secs, 0)
}

/// Formats Unix epoch seconds (float) like Python's `isoformat()`: microseconds rounded
/// half-to-even, printed only when non-zero. Returns `None` for NaN, infinities and values
/// outside years 1–9999.
///
/// ```
/// use e2a::timestamp::from_epoch_f64;
/// assert_eq!(from_epoch_f64(1774524781.15).as_deref(), Some("2026-03-26T11:33:01.150000+00:00"));
/// assert_eq!(from_epoch_f64(-1.5).as_deref(), Some("1969-12-31T23:59:58.500000+00:00"));
/// assert_eq!(from_epoch_f64(1.0000025).as_deref(), Some("1970-01-01T00:00:01.000002+00:00"));
/// assert_eq!(from_epoch_f64(f64::NAN), None);
/// ```
pub fn from_epoch_f64(ts: f64) -> Option<String> {
    if !ts.is_finite() {
        return None;
    }
    // CPython `_PyTime_ObjectToTimeval(..., ROUND_HALF_EVEN)`.
    let int_part = ts.trunc();
    let mut frac = ((ts - int_part) * 1e6).round_ties_even();
    let mut secs = int_part;
    if frac >= 1e6 {
        frac -= 1e6;
        secs += 1.0;
    } else if frac < 0.0 {
        frac += 1e6;
        secs -= 1.0;
    }
    if !(MIN_SECS as f64..=MAX_SECS as f64).contains(&secs) {
        return None;
    }
    format_parts(secs as i64, frac as u32)
}

/// The current UTC time as the reference's `utc_now_iso()` prints it
/// (e.g. `2026-11-30T01:14:17.977230+00:00`).
pub fn utc_now_iso() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    iso_within_second(d.as_secs() as i64, d.subsec_micros())
}

/// [`format_parts`], its date and time to the second from [`with_second`].
fn iso_within_second(secs: i64, micros: u32) -> String {
    let mut out = String::with_capacity(32);
    if with_second(secs, |text| out.push_str(text)).is_none() {
        return out;
    }
    if micros != 0 {
        out.push('.');
        for div in [100_000, 10_000, 1_000, 100, 10, 1] {
            out.push(char::from(b'0' + (micros / div % 10) as u8));
        }
    }
    out.push_str("+00:00");
    out
}

/// Calls `f` with the date and time to the second of Unix epoch second `secs`
/// (`YYYY-MM-DDTHH:MM:SS`, UTC), made once a second per thread: every frame and every log line
/// is stamped, and the calendar arithmetic was most of it. `None` (and `f` not called) outside
/// years 1–9999.
///
/// ```
/// let text = e2a::timestamp::with_second(1_774_524_781, str::to_string);
/// assert_eq!(text.as_deref(), Some("2026-03-26T11:33:01"));
/// ```
pub fn with_second<R>(secs: i64, f: impl FnOnce(&str) -> R) -> Option<R> {
    thread_local! {
        /// The second last stamped on this thread, and its `YYYY-MM-DDTHH:MM:SS`.
        static SECOND: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    SECOND.with_borrow_mut(|(at, text)| {
        if *at != secs {
            let whole = format_parts(secs, 0)?;
            *text = whole.get(..19).unwrap_or_default().to_string();
            *at = secs;
        }
        Some(f(text))
    })
}

/// Milliseconds since the Unix epoch now (0 before it; saturating far after).
///
/// ```
/// assert!(e2a::timestamp::now_ms() > 1_700_000_000_000);
/// ```
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, what this SDK and A2A write); `None` for
/// anything else or a field out of range.
///
/// ```
/// use e2a::timestamp::parse_rfc3339_ms;
/// assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1500));
/// assert_eq!(parse_rfc3339_ms("2026-03-26T13:33:01+02:00"), Some(1_774_524_781_000));
/// assert_eq!(parse_rfc3339_ms("2026-02-30T00:00:00Z"), None);
/// ```
pub fn parse_rfc3339_ms(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if b.len() < 20 || !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = t.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let max_day = *month_days.get(usize::try_from(mo - 1).ok()?)?;
    if !(1..=max_day).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let rest = t.get(19..)?;
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (r.get(..end).filter(|f| !f.is_empty())?, r.get(end..)?)
        }
        None => ("", rest),
    };
    let offset_min = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && z.get(3..4) == Some(":") => {
            let (oh, om) = (z.get(1..3)?.parse::<i64>().ok()?, z.get(4..6)?.parse::<i64>().ok()?);
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    let ms: i64 = format!("{:0<3}", frac.get(..frac.len().min(3))?).parse().ok()?;
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3_600 + mi * 60 + s - offset_min * 60;
    Some(secs * 1_000 + ms)
}

fn format_parts(secs: i64, micros: u32) -> Option<String> {
    if !(MIN_SECS..=MAX_SECS).contains(&secs) {
        return None;
    }
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // written digit by digit: this runs for every frame, and `format!` is several times slower
    let mut out = [0u8; 40];
    let mut n = 0;
    let mut put = |v: u64, width: usize, after: u8| {
        let mut v = v;
        for i in (0..width).rev() {
            out[n + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out[n + width] = after;
        n += width + 1;
    };
    let (y, m, d, hh, mm, ss) = (y as u64, u64::from(m), u64::from(d), hh as u64, mm as u64, ss as u64);
    put(y, 4, b'-');
    put(m, 2, b'-');
    put(d, 2, b'T');
    put(hh, 2, b':');
    put(mm, 2, b':');
    if micros == 0 {
        put(ss, 2, b'+');
    } else {
        put(ss, 2, b'.');
        put(u64::from(micros), 6, b'+');
    }
    put(0, 2, b':');
    put(0, 2, 0);
    // every byte written is an ASCII digit or separator
    std::str::from_utf8(&out[..n - 1]).ok().map(String::from)
}

/// (year, month, day) in the proleptic Gregorian calendar → days since 1970-01-01 (Howard
/// Hinnant's `days_from_civil`, the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_examples() {
        assert_eq!(from_epoch_secs(1774524781).unwrap(), "2026-03-26T11:33:01+00:00");
        // values computed by CPython (the float 1.0000015 is just below the half)
        assert_eq!(from_epoch_f64(1.0000015).unwrap(), "1970-01-01T00:00:01.000001+00:00");
        assert_eq!(from_epoch_f64(1.0000025).unwrap(), "1970-01-01T00:00:01.000002+00:00");
        assert_eq!(from_epoch_secs(MAX_SECS).unwrap(), "9999-12-31T23:59:59+00:00");
        assert_eq!(from_epoch_secs(MIN_SECS).unwrap(), "0001-01-01T00:00:00+00:00");
        assert_eq!(from_epoch_secs(MAX_SECS + 1), None);
        assert_eq!(from_epoch_f64(1e20), None);
        assert_eq!(from_epoch_f64(f64::INFINITY), None);
        assert_eq!(from_epoch_f64(-1e-6).unwrap(), "1969-12-31T23:59:59.999999+00:00");
    }

    #[test]
    fn a_second_kept_writes_what_format_parts_writes() {
        // the same second again and again, the next one, one far away, and back
        for (i, secs) in [
            0i64,
            0,
            1,
            1,
            86_400,
            86_401,
            1_774_524_781,
            1_774_524_781,
            1_774_524_776,
            MAX_SECS,
        ]
        .into_iter()
        .enumerate()
        {
            for micros in [0u32, 1, 9, 10, 150_000, 999_999, (i as u32) * 7_919] {
                assert_eq!(
                    Some(iso_within_second(secs, micros)),
                    format_parts(secs, micros),
                    "{secs} {micros}"
                );
            }
        }
        assert_eq!(iso_within_second(MAX_SECS + 1, 5), "");
        assert!(parse_rfc3339_ms(&utc_now_iso()).is_some());
    }

    #[test]
    fn digits_are_written_like_format() {
        for secs in [MIN_SECS, -1, 0, 59, 3_599, 86_399, 951_782_400, 1_774_524_781, MAX_SECS] {
            for micros in [0, 1, 150_000, 999_999] {
                let days = secs.div_euclid(86_400);
                let rem = secs.rem_euclid(86_400);
                let (y, m, d) = civil_from_days(days);
                let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
                let want = match micros {
                    0 => format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}+00:00"),
                    _ => format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{micros:06}+00:00"),
                };
                assert_eq!(format_parts(secs, micros).as_deref(), Some(want.as_str()));
            }
        }
    }

    #[test]
    fn now_is_well_formed() {
        let s = utc_now_iso();
        assert!(s.ends_with("+00:00") && s.len() >= 25, "{s}");
    }
}
