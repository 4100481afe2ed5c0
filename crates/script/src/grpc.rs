//! `k6/net/grpc`'s descriptors: `.proto` files compiled by protox once for the
//! whole run (every VU's `client.load()` of the same files shares them), methods
//! found by name, messages between the script's JSON and protobuf's wire form.
//! Replies are shown as k6 shows them (protobuf's JSON mapping with every field,
//! default values included, in lowerCamelCase).

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor, SerializeOptions};

/// Why `client.load()` failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GrpcLoadError {
    /// protox's message, which names the `.proto` file, line and column.
    #[error("client.load(): {0}")]
    Compile(String),
    /// `client.loadProtoset()`'s file could not be opened or read (k6's words).
    #[error("couldn't open protoset: stat {path}: {why}")]
    Open {
        /// The file as resolved (beside the script).
        path: String,
        /// The system's reason.
        why: String,
    },
    /// The file is not a FileDescriptorSet whose files fit together (k6's words).
    #[error("couldn't unmarshal protoset file {path}: {why}")]
    Protoset {
        /// The file as the script named it.
        path: String,
        /// What the decoder said.
        why: String,
    },
}

/// A set of descriptors: where from (the files compiled, or the reflection
/// service's answer), and the descriptors.
type Loaded = (String, DescriptorPool);

/// Every set compiled in this process, by index.
fn sets() -> &'static Mutex<Vec<Loaded>> {
    static SETS: OnceLock<Mutex<Vec<Loaded>>> = OnceLock::new();
    SETS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Compile `files` (relative to `base_dir`, the script's directory; imports in
/// `imports` then beside each file), once: the set's index.
pub(crate) fn load(
    base_dir: &Path,
    imports: &[String],
    files: &[String],
) -> Result<u32, GrpcLoadError> {
    let key = format!("files {base_dir:?} {imports:?} {files:?}");
    let mut all = sets().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = all.iter().position(|(k, _)| *k == key) {
        return Ok(i as u32);
    }
    // As k6: a file is looked for in each import path, then beside the script.
    let found: Vec<String> = files
        .iter()
        .map(|f| {
            imports
                .iter()
                .map(|i| Path::new(i).join(f))
                .find(|p| base_dir.join(p).is_file())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.clone())
        })
        .collect();
    let pool = pado_engine::plan::descriptors_from_files(base_dir, &found, imports)
        .map_err(GrpcLoadError::Compile)?;
    all.push((key, pool));
    Ok((all.len() - 1) as u32)
}

/// `client.loadProtoset(path)`: the binary FileDescriptorSet at `path`
/// (relative to `base_dir`, the script's directory), as `protoc
/// --descriptor_set_out` writes it, decoded once for the run: the set's index.
/// Its files must carry their imports (`--include_imports`), as k6 needs too.
pub(crate) fn load_protoset(base_dir: &Path, path: &str) -> Result<u32, GrpcLoadError> {
    let file = base_dir.join(path);
    let key = format!("protoset {file:?}");
    let mut all = sets().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = all.iter().position(|(k, _)| *k == key) {
        return Ok(i as u32);
    }
    let bytes = std::fs::read(&file).map_err(|e| GrpcLoadError::Open {
        path: file.display().to_string(),
        why: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => e.to_string(),
        },
    })?;
    let pool = DescriptorPool::decode(bytes.as_slice()).map_err(|e| GrpcLoadError::Protoset {
        path: path.to_string(),
        why: e.to_string(),
    })?;
    all.push((key, pool));
    Ok((all.len() - 1) as u32)
}

/// Register the files a server's reflection service gave (encoded
/// `FileDescriptorProto`s, in any order) as a set, once per distinct answer:
/// the set's index.
pub(crate) fn register(files: &[Vec<u8>]) -> Result<u32, String> {
    // A FileDescriptorSet is its files as field 1, each length-delimited.
    let mut set = Vec::new();
    for f in files {
        set.push(0x0a);
        let mut n = f.len() as u64;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                set.push(b);
                break;
            }
            set.push(b | 0x80);
        }
        set.extend_from_slice(f);
    }
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        set.hash(&mut h);
        format!("reflected {:x} {}", h.finish(), set.len())
    };
    let mut all = sets().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = all.iter().position(|(k, _)| *k == key) {
        return Ok(i as u32);
    }
    let pool = DescriptorPool::decode(set.as_slice()).map_err(|e| {
        format!("the server's reflection service sent descriptors that do not fit together: {e}")
    })?;
    all.push((key, pool));
    Ok((all.len() - 1) as u32)
}

/// The method `pkg.Service/Method` (a leading `/` allowed) of set `set`, or
/// k6's words when it is not there.
pub(crate) fn method(set: u32, name: &str) -> Result<MethodDescriptor, String> {
    let all = sets().lock().unwrap_or_else(|e| e.into_inner());
    let pool = &all
        .get(set as usize)
        .ok_or_else(|| "no .proto files were loaded (client.load())".to_string())?
        .1;
    let trimmed = name.trim_start_matches('/');
    let (service, m) = trimmed
        .rsplit_once('/')
        .ok_or_else(|| format!("method {name:?} is not `package.Service/Method`"))?;
    pool.get_service_by_name(service)
        .and_then(|s| s.methods().find(|x| x.name() == m))
        .ok_or_else(|| format!("method {name:?} not found in file descriptors"))
}

/// The request `json` encoded as the method's input message.
pub(crate) fn encode(m: &MethodDescriptor, json: &str) -> Result<Vec<u8>, String> {
    pado_engine::plan::encode_grpc_json(&m.input(), json.as_bytes()).map_err(|e| {
        format!(
            "unable to serialise request object to protocol buffer ({}): {e}",
            m.input().full_name()
        )
    })
}

/// A reply as k6 shows it: JSON with every field (defaults too), lowerCamelCase
/// names, 64-bit integers as strings. An empty reply is the default message.
pub(crate) fn decode(m: &MethodDescriptor, bytes: &[u8]) -> Result<String, String> {
    let msg = DynamicMessage::decode(m.output(), bytes)
        .map_err(|e| format!("a reply that is not a {}: {e}", m.output().full_name()))?;
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::new(&mut out);
    let opts = SerializeOptions::new().skip_default_fields(false);
    msg.serialize_with_options(&mut ser, &opts)
        .map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = "syntax = \"proto3\";\npackage demo.v1;\nservice Greeter {\n  rpc Hello(HelloRequest) returns (HelloReply);\n}\nmessage HelloRequest { string user_name = 1; int64 count = 2; }\nmessage HelloReply { string greeting_text = 1; int64 total = 2; bool ok = 3; }\n";

    #[test]
    fn a_loaded_method_round_trips_hangul_and_shows_every_field_as_k6() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.proto"), PROTO).unwrap();
        let set = load(dir.path(), &[], &["hello.proto".into()]).unwrap();
        // The same files again: the same set, compiled once.
        assert_eq!(load(dir.path(), &[], &["hello.proto".into()]).unwrap(), set);
        let m = method(set, "demo.v1.Greeter/Hello").unwrap();
        assert_eq!(
            method(set, "/demo.v1.Greeter/Hello").unwrap().name(),
            "Hello"
        );
        let bytes = encode(&m, r#"{"user_name":"파도","count":"3"}"#).unwrap();
        // Field 1 (string "파도", 6 bytes), field 2 (varint 3).
        let mut want = vec![0x0a, 6];
        want.extend_from_slice("파도".as_bytes());
        want.extend_from_slice(&[0x10, 3]);
        assert_eq!(bytes, want);
        // A reply with only field 1: every field shown, camelCase, int64 as a string.
        let mut reply = vec![0x0a, 6];
        reply.extend_from_slice("안녕".as_bytes());
        let json: serde_json::Value = serde_json::from_str(&decode(&m, &reply).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"greetingText": "안녕", "total": "0", "ok": false})
        );
    }

    #[test]
    fn reflected_files_in_any_order_make_one_set_per_answer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("types.proto"),
            "syntax = \"proto3\";\npackage r.v1;\nmessage Ping { string text = 1; }\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("svc.proto"),
            "syntax = \"proto3\";\npackage r.v1;\nimport \"types.proto\";\nservice Pinger {\n  rpc Go(stream Ping) returns (stream Ping);\n}\n",
        )
        .unwrap();
        let compiled = load(dir.path(), &[], &["svc.proto".into()]).unwrap();
        let pool = sets().lock().unwrap()[compiled as usize].1.clone();
        // The service's file first, its dependency after: as a server may send them.
        let svc = pool.get_file_by_name("svc.proto").unwrap().encode_to_vec();
        let types = pool
            .get_file_by_name("types.proto")
            .unwrap()
            .encode_to_vec();
        let set = register(&[svc.clone(), types.clone()]).unwrap();
        assert_eq!(
            register(&[svc.clone(), types]).unwrap(),
            set,
            "the same answer, once"
        );
        let m = method(set, "r.v1.Pinger/Go").unwrap();
        assert!(m.is_client_streaming() && m.is_server_streaming());
        let json = decode(&m, &encode(&m, r#"{"text":"파도"}"#).unwrap()).unwrap();
        assert_eq!(json, r#"{"text":"파도"}"#);
        // A file whose dependency never came: said, not a panic.
        let e = register(&[svc]).unwrap_err();
        assert!(e.contains("do not fit together"), "{e}");
    }

    #[test]
    fn a_missing_method_and_a_broken_proto_say_where() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.proto"), PROTO).unwrap();
        let set = load(dir.path(), &[], &["hello.proto".into()]).unwrap();
        let e = method(set, "demo.v1.Greeter/Bye").unwrap_err();
        assert!(e.contains("not found in file descriptors"), "{e}");
        std::fs::write(
            dir.path().join("bad.proto"),
            "syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n",
        )
        .unwrap();
        let e = load(dir.path(), &[], &["bad.proto".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.proto:3:"), "{e}");
    }

    #[test]
    fn a_protoset_loads_once_and_missing_or_broken_files_say_so_as_k6() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.proto"), PROTO).unwrap();
        let compiled = load(dir.path(), &[], &["hello.proto".into()]).unwrap();
        let set_bytes = sets().lock().unwrap()[compiled as usize].1.encode_to_vec();
        std::fs::write(dir.path().join("hello.pb"), &set_bytes).unwrap();
        let set = load_protoset(dir.path(), "hello.pb").unwrap();
        assert_eq!(load_protoset(dir.path(), "hello.pb").unwrap(), set, "once");
        let m = method(set, "demo.v1.Greeter/Hello").unwrap();
        let json = decode(&m, &[0x0a, 6, 0xed, 0x8c, 0x8c, 0xeb, 0x8f, 0x84]).unwrap();
        assert!(json.contains("\"greetingText\":\"파도\""), "{json}");
        let e = load_protoset(dir.path(), "nowhere.pb")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("couldn't open protoset: stat ")
                && e.ends_with("nowhere.pb: no such file or directory"),
            "{e}"
        );
        std::fs::write(dir.path().join("junk.pb"), b"\xff\xff\xff not a set").unwrap();
        let e = load_protoset(dir.path(), "junk.pb")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("couldn't unmarshal protoset file junk.pb: "),
            "{e}"
        );
    }
}
