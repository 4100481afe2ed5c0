//! What `pado history` lists: filters by name, labels, start and a count.

use crate::HistoryError;

/// Which runs to list.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only runs of this test name.
    pub name: Option<String>,
    /// Only runs carrying every one of these labels (`commit` also matches a
    /// prefix of the recorded commit).
    pub labels: Vec<(String, String)>,
    /// Only runs started at or after this instant (ms since the Unix epoch).
    pub since_unix_ms: Option<i64>,
    /// At most this many, the most recent.
    pub limit: Option<usize>,
}

impl Filter {
    /// `pado history`'s flags as a filter: `--label` values (`KEY=VALUE`) and
    /// `--since` (see [`parse_since`]) read against the clock now.
    pub fn from_flags(
        name: Option<String>,
        limit: usize,
        labels: &[String],
        since: Option<&str>,
    ) -> Result<Filter, HistoryError> {
        let now_ms =
            i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000)
                .unwrap_or(0);
        Ok(Filter {
            name,
            limit: Some(limit),
            labels: labels
                .iter()
                .map(|l| parse_label(l))
                .collect::<Result<_, _>>()?,
            since_unix_ms: since.map(|s| parse_since(s, now_ms)).transpose()?,
        })
    }
}

/// A `--label k=v` value.
pub fn parse_label(s: &str) -> Result<(String, String), HistoryError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(HistoryError::BadFilter(format!(
            "--label `{s}`: expected KEY=VALUE, e.g. env=staging"
        ))),
    }
}

/// A `--since` value: a duration back from `now_unix_ms` (`30m`, `12h`, `7d`, `2w`)
/// or an RFC 3339 instant (`2026-11-01T00:00:00Z`).
pub fn parse_since(s: &str, now_unix_ms: i64) -> Result<i64, HistoryError> {
    let t = s.trim();
    let err = || {
        HistoryError::BadFilter(format!(
            "--since `{s}`: expected a duration back from now (30m, 12h, 7d, 2w) or an RFC 3339 time (2026-11-01T00:00:00Z)"
        ))
    };
    if let Ok(at) = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339) {
        return i64::try_from(at.unix_timestamp_nanos() / 1_000_000).map_err(|_| err());
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?;
    let (n, unit) = t.split_at(split);
    let n: i64 = n.parse().map_err(|_| err())?;
    let unit_ms: i64 = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(err()),
    };
    n.checked_mul(unit_ms)
        .map(|back| now_unix_ms - back)
        .ok_or_else(err)
}

pub(crate) use parse_label as label;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_durations_and_instants() {
        let now = 1_000_000_000_000;
        assert_eq!(parse_since("7d", now).unwrap(), now - 7 * 86_400_000);
        assert_eq!(parse_since("90m", now).unwrap(), now - 90 * 60_000);
        assert_eq!(
            parse_since("2026-11-23T10:00:00Z", now).unwrap(),
            1_795_428_000_000
        );
        for bad in ["", "7", "d", "7y", "yesterday", "-3d"] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn labels_need_a_key() {
        assert_eq!(
            parse_label("환경=스테이징").unwrap(),
            ("환경".to_string(), "스테이징".to_string())
        );
        assert_eq!(parse_label("k=").unwrap(), ("k".into(), "".into()));
        assert!(parse_label("=v").is_err());
        assert!(parse_label("kv").is_err());
    }

    #[test]
    fn flags_become_a_filter_and_a_bad_flag_is_named() {
        let f = Filter::from_flags(
            Some("검색".into()),
            5,
            &["env=스테이징".into()],
            Some("2026-11-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(f.labels, vec![("env".to_string(), "스테이징".to_string())]);
        assert_eq!(f.since_unix_ms, Some(1_793_491_200_000));
        assert_eq!(f.limit, Some(5));
        let e = Filter::from_flags(None, 5, &[], Some("yesterday")).unwrap_err();
        assert!(e.to_string().contains("--since `yesterday`"), "{e}");
        assert!(Filter::from_flags(None, 5, &["x".into()], None).is_err());
    }
}
