//! Request and response messages between the scenario's JSON and protobuf's wire
//! form, through their descriptors (prost-reflect's `DynamicMessage`, in
//! protobuf's JSON mapping): a field the message does not have is found by walking
//! the scenario's value first, so the error names its path.

use prost::Message as _;
use prost_reflect::{DynamicMessage, Kind, MessageDescriptor, SerializeOptions};

/// The first field of `v` (an object for `desc`) the message type lacks, as a
/// dotted path under the message (`inner.nmae`), with what the type has.
pub(crate) fn unknown_field(desc: &MessageDescriptor, v: &serde_json::Value) -> Option<String> {
    let serde_json::Value::Object(map) = v else {
        return None;
    };
    for (k, val) in map {
        let field = desc
            .get_field_by_name(k)
            .or_else(|| desc.get_field_by_json_name(k));
        let Some(field) = field else {
            let names: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
            return Some(format!(
                "{k}: `{}` has no field `{k}` (it has: {})",
                desc.full_name(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        if let Kind::Message(inner) = field.kind() {
            if field.is_map() {
                continue;
            }
            let nested = match val {
                serde_json::Value::Array(items) if field.is_list() => {
                    items.iter().find_map(|i| unknown_field(&inner, i))
                }
                other => unknown_field(&inner, other),
            };
            if let Some(n) = nested {
                return Some(format!("{k}.{n}"));
            }
        }
    }
    None
}

/// `json` (protobuf's JSON mapping) encoded as a `desc` message.
pub(crate) fn encode_json(desc: &MessageDescriptor, json: &[u8]) -> Result<Vec<u8>, String> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let msg = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(msg.encode_to_vec())
}

/// `value` encoded as a `desc` message.
pub(crate) fn encode_value(
    desc: &MessageDescriptor,
    value: &serde_json::Value,
) -> Result<Vec<u8>, String> {
    let msg = DynamicMessage::deserialize(desc.clone(), value).map_err(|e| e.to_string())?;
    Ok(msg.encode_to_vec())
}

/// How responses are shown to checks and extraction: the `.proto`'s field names,
/// every field (a zero is there to check), 64-bit integers as numbers.
fn options() -> SerializeOptions {
    SerializeOptions::new()
        .use_proto_field_name(true)
        .skip_default_fields(false)
        .stringify_64_bit_integers(false)
}

/// A `desc` message's bytes appended to `out` as JSON; `false` when they are not
/// a valid message of that type.
pub(crate) fn decode_to_json(desc: &MessageDescriptor, bytes: &[u8], out: &mut Vec<u8>) -> bool {
    let Ok(msg) = DynamicMessage::decode(desc.clone(), bytes) else {
        return false;
    };
    let mut ser = serde_json::Serializer::new(out);
    msg.serialize_with_options(&mut ser, &options()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const PROTO: &str = r#"
syntax = "proto3";
package t;
message Inner { string name = 1; }
message Req { string text = 1; int64 n = 2; Inner inner = 3; repeated Inner items = 4; uint32 delay_ms = 5; }
service S { rpc Call(Req) returns (Req); }
"#;

    fn desc() -> MessageDescriptor {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.proto"), PROTO).unwrap();
        let pool = super::super::descriptors::from_files(dir.path(), &["t.proto".to_string()], &[])
            .unwrap();
        pool.get_message_by_name("t.Req").unwrap()
    }

    #[test]
    fn unknown_fields_are_named_with_their_path() {
        let d = desc();
        let ok = serde_json::json!({"text": "a", "n": 3, "inner": {"name": "x"}, "delayMs": 2});
        assert_eq!(unknown_field(&d, &ok), None, "json names are fields too");
        let bad = serde_json::json!({"inner": {"nmae": "x"}});
        let e = unknown_field(&d, &bad).unwrap();
        assert!(e.starts_with("inner.nmae:"), "{e}");
        assert!(e.contains("it has: name"), "{e}");
        let bad_item = serde_json::json!({"items": [{"name": "a"}, {"x": 1}]});
        assert!(unknown_field(&d, &bad_item)
            .unwrap()
            .starts_with("items.x:"));
    }

    #[test]
    fn a_message_round_trips_through_json() {
        let d = desc();
        let bytes = encode_json(&d, br#"{"text":"hi","n":"42","inner":{"name":"x"}}"#).unwrap();
        let mut out = Vec::new();
        assert!(decode_to_json(&d, &bytes, &mut out));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["text"], "hi");
        assert_eq!(v["n"], 42, "64-bit integers are numbers");
        assert_eq!(v["inner"]["name"], "x");
        assert_eq!(
            v["delay_ms"], 0,
            "default fields are shown, with .proto names"
        );
        let same = encode_value(
            &d,
            &serde_json::json!({"text":"hi","n":42,"inner":{"name":"x"}}),
        );
        assert_eq!(same.unwrap(), bytes);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_an_error() {
        let d = desc();
        let e = encode_value(&d, &serde_json::json!({"n": "many"})).unwrap_err();
        assert!(!e.is_empty());
        assert!(encode_json(&d, b"{\"text\": 1}").is_err());
        assert!(encode_json(&d, b"{} trailing").is_err());
    }
}
