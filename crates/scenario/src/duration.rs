//! Durations as users write them in scenario files and flags: `500ms`, `30s`, `1m30s`,
//! `2h`, or a bare number of seconds. One parser for both, so a value that works on the
//! command line works in the file.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A non-negative duration parsed from k6-style text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub Duration);

impl Dur {
    /// The std duration.
    pub fn get(self) -> Duration {
        self.0
    }

    /// Seconds as f64.
    pub fn secs(self) -> f64 {
        self.0.as_secs_f64()
    }

    /// From seconds.
    pub fn from_secs(s: u64) -> Self {
        Dur(Duration::from_secs(s))
    }
}

/// Parse `1h2m3s`, `1.5s`, `250ms`, `10us`, or a bare number (seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration; write e.g. `30s`, `1m30s` or `500ms`".into());
    }
    if let Ok(v) = s.parse::<f64>() {
        return secs_to_duration(v, text);
    }
    let b = s.as_bytes();
    let mut i = 0;
    let mut total = 0f64;
    let mut any = false;
    while i < b.len() {
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        if start == i {
            return Err(format!(
                "`{text}` is not a duration; write e.g. `30s`, `1m30s` or `500ms`"
            ));
        }
        let num: f64 = s[start..i]
            .parse()
            .map_err(|_| format!("`{}` in `{text}` is not a number", &s[start..i]))?;
        let ustart = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = &s[ustart..i];
        let factor = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            "" => {
                return Err(format!(
                    "`{text}`: a number inside a duration needs a unit (h, m, s, ms, us)"
                ))
            }
            u => {
                return Err(format!(
                    "`{text}`: unknown unit `{u}`; use h, m, s, ms or us"
                ))
            }
        };
        total += num * factor;
        any = true;
    }
    if !any {
        return Err(format!("`{text}` is not a duration"));
    }
    secs_to_duration(total, text)
}

fn secs_to_duration(v: f64, text: &str) -> Result<Duration, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{text}`: a duration must be zero or positive"));
    }
    if v > 1e9 {
        return Err(format!("`{text}` is too long for a duration"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Format a duration compactly (`1m30s`, `250ms`) for messages and labels.
pub fn format_duration(d: Duration) -> String {
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

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_duration(s).map(Dur)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration like `30s`, `1m30s`, `500ms` or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                parse_duration(v).map(Dur).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                secs_to_duration(v as f64, &v.to_string())
                    .map(Dur)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                secs_to_duration(v as f64, &v.to_string())
                    .map(Dur)
                    .map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                secs_to_duration(v, &v.to_string())
                    .map(Dur)
                    .map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration: `500ms`, `30s`, `1m30s`, `2h`, or a number of seconds",
            "anyOf": [
                { "type": "string", "pattern": "^\\s*([0-9.]+(h|m|s|ms|us|µs|ns))+\\s*$|^\\s*[0-9.]+\\s*$" },
                { "type": "number", "minimum": 0 }
            ]
        })
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
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
