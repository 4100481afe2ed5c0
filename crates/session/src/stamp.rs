//! The UTC time stamps a result directory writes and names itself by.

use std::time::SystemTime;

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::OffsetDateTime;

/// RFC 3339 with milliseconds, always UTC.
const RFC3339_MS: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// The compact form a file name starts with, sorting by time.
const COMPACT_MS: &[BorrowedFormatItem<'_>] =
    format_description!("[year][month][day]T[hour][minute][second].[subsecond digits:3]Z");

/// Formats with one of the descriptions above, which every date of the years
/// 0 to 9999 fits (a `SystemTime` outside them is not a run's).
fn format(t: OffsetDateTime, f: &[BorrowedFormatItem<'_>]) -> String {
    t.format(f).unwrap_or_default()
}

/// RFC 3339 UTC with milliseconds, `2026-11-23T10:00:00.000Z` (how run.json writes
/// instants, so a merge can align runs to the millisecond).
pub fn utc_ms(t: SystemTime) -> String {
    format(OffsetDateTime::from(t), RFC3339_MS)
}

/// Now as `20261123T020304.567Z`: how a default result directory's name starts.
pub(crate) fn compact_now() -> String {
    format(OffsetDateTime::now_utc(), COMPACT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn both_forms_pad_every_field_and_keep_milliseconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_779_102_460_250);
        assert_eq!(utc_ms(t), "2026-05-18T11:07:40.250Z");
        let t = UNIX_EPOCH + Duration::from_millis(5);
        assert_eq!(utc_ms(t), "1970-01-01T00:00:00.005Z");
        assert_eq!(compact_now().len(), "20261123T020304.567Z".len());
    }
}
