//! The UTC time stamps a result directory writes.

use std::time::SystemTime;

/// RFC 3339 UTC with milliseconds, `2026-11-23T10:00:00.000Z` (how run.json writes
/// instants, so a merge can align runs to the millisecond).
pub fn utc_ms(t: SystemTime) -> String {
    let dt = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        dt.year(),
        dt.month() as u8,
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.millisecond()
    )
}
