//! Durations: read as users write them in scenario files and flags (`500ms`, `30s`,
//! `1m30s`, `2h`, or a bare number of seconds: one parser for both, so a value that
//! works on the command line works in the file), and written back two ways: compact
//! as the user would write it ([`duration_compact`], `1m30s`) and as a run's length
//! ([`duration`], `10m05s`).

use std::time::Duration;

/// Why a text is not a duration; each message says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing (or only spaces) was given.
    #[error("empty duration; write e.g. `30s`, `1m30s` or `500ms`")]
    Empty,
    /// A part that does not start with a number (`s`, `abc`).
    #[error("`{0}` is not a duration; write e.g. `30s`, `1m30s` or `500ms`")]
    NotADuration(String),
    /// Digits and dots that are not a number (`1..2s`).
    #[error("`{number}` in `{text}` is not a number")]
    BadNumber {
        /// The part that did not parse.
        number: String,
        /// The whole text.
        text: String,
    },
    /// A number inside a duration without its unit (`1m30`).
    #[error("`{0}`: a number inside a duration needs a unit (h, m, s, ms, us)")]
    MissingUnit(String),
    /// A unit pado does not know (`10x`).
    #[error("`{text}`: unknown unit `{unit}`; use h, m, s, ms or us")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The unit as written.
        unit: String,
    },
    /// A negative or not finite value.
    #[error("`{0}`: a duration must be zero or positive")]
    Negative(String),
    /// Longer than about 31 years: a typo rather than an intention.
    #[error("`{0}` is too long for a duration")]
    TooLong(String),
}

/// The message alone, for callers whose errors are text (a flag's, a quick-mode
/// line's).
impl From<DurationError> for String {
    fn from(e: DurationError) -> String {
        e.to_string()
    }
}

/// Parse `1h2m3s`, `1.5s`, `250ms`, `10us`, or a bare number (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if let Ok(v) = s.parse::<f64>() {
        return seconds(v, text);
    }
    let b = s.as_bytes();
    let mut i = 0;
    let mut total = 0f64;
    while i < b.len() {
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        if start == i {
            return Err(DurationError::NotADuration(text.into()));
        }
        let num: f64 = s[start..i].parse().map_err(|_| DurationError::BadNumber {
            number: s[start..i].into(),
            text: text.into(),
        })?;
        let ustart = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let factor = match &s[ustart..i] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            "" => return Err(DurationError::MissingUnit(text.into())),
            u => {
                return Err(DurationError::UnknownUnit {
                    text: text.into(),
                    unit: u.into(),
                })
            }
        };
        total += num * factor;
    }
    seconds(total, text)
}

/// `v` seconds as a duration, refused when negative, not finite or absurdly long;
/// `text` is what the user wrote, for the message.
pub fn seconds(v: f64, text: &str) -> Result<Duration, DurationError> {
    if !v.is_finite() || v < 0.0 {
        return Err(DurationError::Negative(text.into()));
    }
    if v > 1e9 {
        return Err(DurationError::TooLong(text.into()));
    }
    Ok(Duration::from_secs_f64(v))
}

/// A duration compactly, the way a user writes it (`1m30s`, `250ms`, `1.5s`): for
/// messages and labels, and how a scenario file's durations are written back.
pub fn duration_compact(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 && !d.is_zero() {
        return format!("{}us", d.as_micros());
    }
    if !ms.is_multiple_of(1000) {
        if ms < 1000 {
            return format!("{ms}ms");
        }
        let t = format!("{:.3}", d.as_secs_f64());
        return format!("{}s", t.trim_end_matches('0').trim_end_matches('.'));
    }
    let mut s = ms as u64 / 1000;
    if s == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    let h = s / 3600;
    s %= 3600;
    let m = s / 60;
    s %= 60;
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// Seconds as a run length: `12.3s`, `10m05s`, `4h00m00s`.
pub fn duration(s: f64) -> String {
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let t = s.round() as u64;
    let (h, m, sec) = (t / 3600, (t % 3600) / 60, t % 60);
    if h > 0 {
        format!("{h}h{m:02}m{sec:02}s")
    } else {
        format!("{m}m{sec:02}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k6_forms() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration(" 0 ").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_with_a_hint() {
        for bad in ["", "s", "10x", "1m30", "-5", "abc", "1..2s", "NaN", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("10x")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
    }

    #[test]
    fn messages_name_the_text_and_what_to_write() {
        let msg = |t: &str| parse_duration(t).unwrap_err().to_string();
        assert_eq!(
            msg(""),
            "empty duration; write e.g. `30s`, `1m30s` or `500ms`"
        );
        assert_eq!(
            msg("abc"),
            "`abc` is not a duration; write e.g. `30s`, `1m30s` or `500ms`"
        );
        assert_eq!(msg("1..2s"), "`1..2` in `1..2s` is not a number");
        assert_eq!(
            msg("1m30"),
            "`1m30`: a number inside a duration needs a unit (h, m, s, ms, us)"
        );
        assert_eq!(msg("10x"), "`10x`: unknown unit `x`; use h, m, s, ms or us");
        assert_eq!(msg("-5"), "`-5`: a duration must be zero or positive");
        assert_eq!(msg("1e400"), "`1e400`: a duration must be zero or positive");
        assert_eq!(msg("40000000h"), "`40000000h` is too long for a duration");
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(duration_compact(Duration::from_secs(90)), "1m30s");
        assert_eq!(duration_compact(Duration::from_millis(250)), "250ms");
        assert_eq!(duration_compact(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration_compact(Duration::from_secs(3600)), "1h");
        assert_eq!(duration_compact(Duration::ZERO), "0s");
        assert_eq!(duration_compact(Duration::from_micros(20)), "20us");
    }

    #[test]
    fn what_is_written_reads_back() {
        for d in [90_000u64, 250, 1500, 3_600_000, 0, 3_723_000] {
            let d = Duration::from_millis(d);
            assert_eq!(parse_duration(&duration_compact(d)).unwrap(), d);
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration(12.34), "12.3s");
        assert_eq!(duration(605.0), "10m05s");
        assert_eq!(duration(4.0 * 3600.0), "4h00m00s");
    }
}
