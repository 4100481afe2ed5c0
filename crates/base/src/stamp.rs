//! The UTC timestamp pado writes: RFC 3339 in UTC with a `Z` (`run.json`'s instants,
//! the raw output's records, the demo's posts, `--start-at`) and its compact form in
//! result directories' names. One implementation, so every file agrees on the same
//! instant to the same precision and a merge can align runs by them.

use std::time::SystemTime;

use time::OffsetDateTime;

/// How many digits of a second a stamp keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Whole seconds: `2024-02-29T12:34:56Z`.
    Seconds,
    /// Milliseconds: `2026-11-23T10:00:00.000Z`.
    Millis,
    /// Microseconds: `2025-01-02T03:04:05.123456Z`.
    Micros,
}

/// `t` in UTC as RFC 3339 with `precision`'s digits of a second.
pub fn utc(t: OffsetDateTime, precision: Precision) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let date = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    match precision {
        Precision::Seconds => format!("{date}Z"),
        Precision::Millis => format!("{date}.{:03}Z", t.millisecond()),
        Precision::Micros => format!("{date}.{:06}Z", t.microsecond()),
    }
}

/// RFC 3339 UTC with milliseconds, `2026-11-23T10:00:00.000Z`: how `run.json` writes
/// instants, so a merge can align runs to the millisecond.
pub fn utc_ms(t: SystemTime) -> String {
    utc(OffsetDateTime::from(t), Precision::Millis)
}

/// `at_us` (µs since the Unix epoch) as RFC 3339 UTC with microseconds,
/// `2025-01-02T03:04:05.123456Z`: one request's instant in the raw output.
pub fn utc_us(at_us: u64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_us) * 1000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    utc(t, Precision::Micros)
}

/// Unix seconds as RFC 3339 UTC in whole seconds, `2024-02-29T12:34:56Z`; seconds
/// beyond year 9999 are clamped to its last second (generated data never fails).
pub fn utc_secs(secs: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp(secs)
        .unwrap_or_else(|_| time::PrimitiveDateTime::MAX.assume_utc());
    utc(t, Precision::Seconds)
}

/// `t` as RFC 3339 in UTC with only the fraction it has (`2026-11-23T10:00:00Z`,
/// `…:00.5Z`): what another program reads back exactly (a Kubernetes pod's
/// `--start-at`).
pub fn rfc3339(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `t` compactly for a file name, UTC to the millisecond without separators but the
/// `T` and the dot (`20261123T020304.567Z`), so names sort by time.
pub fn file_stamp(t: SystemTime) -> String {
    utc_ms(t).replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn known_instants() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_000_060_250);
        assert_eq!(utc_ms(t), "2026-11-18T11:07:40.250Z");
        assert_eq!(file_stamp(t), "20261118T110740.250Z");
        // Every field padded, milliseconds kept.
        let t = UNIX_EPOCH + Duration::from_millis(5);
        assert_eq!(utc_ms(t), "1970-01-01T00:00:00.005Z");
        assert_eq!(file_stamp(t), "19700101T000000.005Z");
        assert_eq!(utc_us(1_735_787_045_123_456), "2025-01-02T03:04:05.123456Z");
        assert_eq!(utc_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_secs(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(utc_secs(i64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn an_offset_is_written_in_utc() {
        let t = OffsetDateTime::from_unix_timestamp(1_709_210_096)
            .unwrap()
            .to_offset(time::UtcOffset::from_hms(9, 0, 0).unwrap());
        assert_eq!(utc(t, Precision::Seconds), "2024-02-29T12:34:56Z");
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56Z");
        assert_eq!(
            rfc3339(t + time::Duration::milliseconds(500)),
            "2024-02-29T12:34:56.5Z"
        );
    }
}
