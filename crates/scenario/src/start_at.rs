//! `--start-at`: when every generator of a split test starts (`pado run
//! --segment`, `pado k8s run`/`render`, the agents' coordinator). One parser with
//! one rule for every command: an RFC 3339 time or `+DURATION` from now, no more
//! than [`START_PAST_SLACK`] in the past (clocks of generators started together
//! differ by less). A generator that waits for it also refuses one more than
//! [`START_MAX_AHEAD`] ahead (a typo, not a plan); rendered manifests may be
//! applied later, and their pods' `pado run` checks that when they start.

use std::time::{Duration, SystemTime};

use pado_base::stamp::utc_ms;

/// An agreed start more than this far in the past is refused.
pub const START_PAST_SLACK: Duration = Duration::from_secs(1);
/// An agreed start more than this far ahead is refused.
pub const START_MAX_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// A `--start-at` value that cannot be used, with the value and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--start-at `{value}`: {why}")]
pub struct StartAtError {
    /// The value as given.
    pub value: String,
    /// Why it is refused.
    pub why: String,
}

/// `--start-at` for a generator that waits for it: RFC 3339
/// (`2026-11-23T10:00:00Z`) or `+DURATION` (`+30s`) from `now`, within the
/// allowed range.
pub fn parse_start_at(v: &str, now: SystemTime) -> Result<SystemTime, StartAtError> {
    let at = parse_not_past(v, now)?;
    match at.duration_since(now) {
        Ok(ahead) if ahead > START_MAX_AHEAD => Err(StartAtError {
            value: v.to_string(),
            why: format!("{} is more than 24h ahead", utc_ms(at)),
        }),
        _ => Ok(at),
    }
}

/// Either spelling, refused when more than [`START_PAST_SLACK`] in the past.
fn parse_not_past(v: &str, now: SystemTime) -> Result<SystemTime, StartAtError> {
    let bad = |why: String| StartAtError {
        value: v.to_string(),
        why,
    };
    let at = if let Some(rel) = v.trim().strip_prefix('+') {
        now + pado_base::units::parse_duration(rel).map_err(|e| bad(e.to_string()))?
    } else {
        let dt =
            time::OffsetDateTime::parse(v.trim(), &time::format_description::well_known::Rfc3339)
                .map_err(|_| {
                bad("not an RFC 3339 time (`2026-11-23T10:00:00Z`) or `+DURATION` (`+30s`)".into())
            })?;
        SystemTime::from(dt)
    };
    match at.duration_since(now) {
        Err(e) if e.duration() > START_PAST_SLACK => Err(bad(format!(
            "{} is {:.1}s in the past (more than 1s): give every generator a start a little ahead, e.g. `+30s` or a time 30 seconds from now",
            utc_ms(at),
            e.duration().as_secs_f64()
        ))),
        _ => Ok(at),
    }
}

/// `--start-at` written into Kubernetes manifests (`pado k8s run`/`render`),
/// which may be applied later: no limit ahead (the pods' own `pado run` checks it
/// when they start), and a `+DURATION` start rounded up to a whole second (at
/// least the duration ahead, at most a second more) so the pods' arguments read
/// plainly; a given time is kept as written.
pub fn parse_start_at_whole_second(v: &str, now: SystemTime) -> Result<SystemTime, StartAtError> {
    let at = parse_not_past(v, now)?;
    if !v.trim().starts_with('+') {
        return Ok(at);
    }
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(since.as_secs() + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_250)
    }

    #[test]
    fn both_spellings_are_accepted() {
        let now = now();
        assert_eq!(
            parse_start_at("+30s", now).unwrap(),
            now + Duration::from_secs(30)
        );
        assert_eq!(
            parse_start_at(" +1m ", now).unwrap(),
            now + Duration::from_secs(60)
        );
        let t = parse_start_at("2026-11-18T11:07:40.250Z", now).unwrap();
        assert_eq!(utc_ms(t), "2026-11-18T11:07:40.250Z");
        // Another offset is the same instant.
        let t = parse_start_at("2026-11-18T20:07:40.250+09:00", now).unwrap();
        assert_eq!(utc_ms(t), "2026-11-18T11:07:40.250Z");
    }

    #[test]
    fn past_far_ahead_and_malformed_starts_are_refused() {
        let now = now();
        let at = |offset_ms: i64| {
            let t = if offset_ms >= 0 {
                now + Duration::from_millis(offset_ms as u64)
            } else {
                now - Duration::from_millis((-offset_ms) as u64)
            };
            parse_start_at(&utc_ms(t), now)
        };
        // Half a second late is fine (clocks differ); two seconds is not.
        assert!(at(-500).is_ok());
        let e = at(-2000).unwrap_err();
        assert!(e.to_string().starts_with("--start-at `"), "{e}");
        assert!(e.why.contains("2.0s in the past"), "{e}");
        assert!(at(23 * 3600 * 1000).is_ok());
        assert!(parse_start_at("+25h", now).unwrap_err().why.contains("24h"));
        let e = parse_start_at("noon", now).unwrap_err();
        assert!(e.why.contains("RFC 3339"), "{e}");
        assert!(parse_start_at("+soon", now).is_err());
    }

    #[test]
    fn a_start_for_pods_is_a_whole_second_when_relative() {
        let now = now();
        let t = parse_start_at_whole_second("+60s", now).unwrap();
        assert_eq!(
            utc_ms(t),
            utc_ms(SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_061))
        );
        let ahead = t.duration_since(now).unwrap();
        assert!(ahead >= Duration::from_secs(60) && ahead <= Duration::from_secs(61));
        // A given time is kept to the millisecond; manifests may be applied much
        // later, the past is still refused.
        let t = parse_start_at_whole_second("2026-11-18T11:07:40.250Z", now).unwrap();
        assert_eq!(utc_ms(t), "2026-11-18T11:07:40.250Z");
        let far = parse_start_at_whole_second("2099-01-02T03:04:05Z", now).unwrap();
        assert_eq!(utc_ms(far), "2099-01-02T03:04:05.000Z");
        let e = parse_start_at_whole_second("2026-11-18T11:00:00Z", now).unwrap_err();
        assert!(e.why.contains("in the past"), "{e}");
    }
}
