//! A duration as a scenario file holds it ([`Dur`]): read from k6-style text or a
//! number of seconds by [`pado_base::units::parse_duration`], written back compactly
//! (`1m30s`), with its JSON Schema. The parsing and formatting rules live in
//! `pado_base::units`, shared with the flags and the reports.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use pado_base::units::{duration_compact, parse_duration, seconds, DurationError};

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

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&duration_compact(self.0))
    }
}

impl std::str::FromStr for Dur {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, DurationError> {
        parse_duration(s).map(Dur)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&duration_compact(self.0))
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
                seconds(v as f64, &v.to_string())
                    .map(Dur)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                seconds(v as f64, &v.to_string())
                    .map(Dur)
                    .map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                seconds(v, &v.to_string()).map(Dur).map_err(E::custom)
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
