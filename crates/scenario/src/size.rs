//! Byte sizes as users write them in scenario files and flags: `4MiB`, `512KiB`,
//! `16MB`, `1GiB`, or a bare number of bytes. One parser for both, like durations.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A number of bytes parsed from text such as `16MiB`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

/// Largest size accepted: bodies are kept in memory per VU, so a limit beyond this is
/// a typo rather than an intention.
pub const MAX_BYTE_SIZE: u64 = 1 << 40;

/// Parse `16MiB`, `512KiB`, `2MB`, `1GiB`, `1.5MiB` or a bare number of bytes.
/// Binary (`KiB`, `MiB`, `GiB`) and decimal (`kB`/`KB`, `MB`, `GB`) units; `B` for bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let hint = "write e.g. `16MiB`, `512KiB` or a number of bytes";
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size; {hint}"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" | "b" => 1,
        "KiB" | "kib" | "Ki" => 1 << 10,
        "MiB" | "mib" | "Mi" => 1 << 20,
        "GiB" | "gib" | "Gi" => 1 << 30,
        "kB" | "KB" | "kb" | "k" | "K" => 1_000,
        "MB" | "mb" | "M" => 1_000_000,
        "GB" | "gb" | "G" => 1_000_000_000,
        u => return Err(format!("unknown size unit `{u}` in `{text}`; {hint}")),
    };
    let v = n * mult as f64;
    if !v.is_finite() || v > MAX_BYTE_SIZE as f64 {
        return Err(format!("`{text}` is larger than pado allows (1 TiB)"));
    }
    Ok(v as u64)
}

/// `16 MiB`, `4 KiB`, `1000 B`: exact binary units when they divide, bytes otherwise.
pub fn format_size(n: u64) -> String {
    for (unit, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= m && n.is_multiple_of(m) {
            return format!("{} {unit}", n / m);
        }
    }
    if n >= 1 << 20 {
        return format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64);
    }
    format!("{n} B")
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size(s).map(ByteSize)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0).replace(' ', ""))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size like `16MiB`, `512KiB` or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                parse_size(v).map(ByteSize).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                parse_size(&v.to_string()).map(ByteSize).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                parse_size(&v.to_string()).map(ByteSize).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A size: `16MiB`, `512KiB`, `2MB`, or a number of bytes",
            "anyOf": [
                { "type": "string", "pattern": "^\\s*[0-9.]+\\s*(B|b|KiB|kib|Ki|MiB|mib|Mi|GiB|gib|Gi|kB|KB|kb|k|K|MB|mb|M|GB|gb|G)?\\s*$" },
                { "type": "integer", "minimum": 0 }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size(" 512 KiB ").unwrap(), 512 << 10);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        assert_eq!(parse_size("1000").unwrap(), 1000);
    }

    #[test]
    fn refuses_nonsense_with_a_hint() {
        for bad in ["", "MiB", "12 parsecs", "-1MiB", "99999GiB"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(4 << 20), "4 MiB");
        assert_eq!(format_size(3 << 10), "3 KiB");
        assert_eq!(format_size(1000), "1000 B");
    }
}
