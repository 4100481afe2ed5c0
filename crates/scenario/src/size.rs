//! A byte size as a scenario file holds it ([`ByteSize`]): read from text such as
//! `16MiB` or a number of bytes by [`pado_base::units::parse_size`], written back
//! as `16MiB`, with its JSON Schema. The rules live in `pado_base::units`, shared
//! with the flags and the reports.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use pado_base::units::{parse_size, size, SizeError};

/// A number of bytes parsed from text such as `16MiB`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&size(self.0))
    }
}

impl std::str::FromStr for ByteSize {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, SizeError> {
        parse_size(s).map(ByteSize)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&size(self.0).replace(' ', ""))
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
