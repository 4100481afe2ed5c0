//! Where a service's descriptors come from: `.proto` files parsed by protox (no
//! `protoc`), or the server's reflection service (`grpc.reflection.v1`, else
//! `v1alpha`), asked once before the run over pado's own HTTP/2 client.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;

use pado_http::grpc::{exchange_grpc, frame_message, GrpcCall, GrpcRequest};
use pado_http::{H2Pool, Origin};

/// The descriptors of `files` (relative to `base_dir`), their imports searched in
/// `import_paths` (relative to `base_dir`), then `base_dir`, then each file's own
/// directory. An error is protox's, which names the `.proto` file, line and column.
pub(crate) fn from_files(
    base_dir: &Path,
    files: &[String],
    import_paths: &[String],
) -> Result<DescriptorPool, String> {
    let mut includes: Vec<PathBuf> = import_paths.iter().map(|p| base_dir.join(p)).collect();
    includes.push(base_dir.to_path_buf());
    let paths: Vec<PathBuf> = files.iter().map(|f| base_dir.join(f)).collect();
    for p in &paths {
        if let Some(parent) = p.parent() {
            if !includes.iter().any(|i| i == parent) {
                includes.push(parent.to_path_buf());
            }
        }
        if !p.is_file() {
            return Err(format!("cannot read `{}`: no such file", p.display()));
        }
    }
    let mut compiler = protox::Compiler::new(&includes).map_err(|e| e.to_string())?;
    compiler.include_imports(true);
    for p in &paths {
        compiler.open_file(p).map_err(|e| protox_error(&e))?;
    }
    Ok(compiler.descriptor_pool())
}

/// protox's message with its place (`file.proto:3:5`) in front.
fn protox_error(e: &protox::Error) -> String {
    use miette::Diagnostic as _;
    let text = e.to_string();
    let place = e
        .labels()
        .and_then(|mut l| l.next())
        .zip(e.source_code())
        .and_then(|(label, src)| src.read_span(label.inner(), 0, 0).ok())
        .map(|span| (span.line() + 1, span.column() + 1));
    match (e.file(), place) {
        (Some(file), Some((line, col))) => format!("{file}:{line}:{col}: {text}"),
        (Some(file), None) => format!("{file}: {text}"),
        _ => text,
    }
}

/// The reflection service's messages (the same in `v1` and `v1alpha`), the fields
/// pado uses.
mod wire {
    /// `ServerReflectionRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Request {
        #[prost(string, tag = "1")]
        pub(super) host: String,
        #[prost(oneof = "Ask", tags = "3, 4, 7")]
        pub(super) ask: Option<Ask>,
    }

    /// What a request asks.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Ask {
        #[prost(string, tag = "3")]
        FileByFilename(String),
        #[prost(string, tag = "4")]
        FileContainingSymbol(String),
        #[prost(string, tag = "7")]
        ListServices(String),
    }

    /// `ServerReflectionResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Response {
        #[prost(oneof = "Answer", tags = "4, 6, 7")]
        pub(super) answer: Option<Answer>,
    }

    /// What a response holds.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Answer {
        #[prost(message, tag = "4")]
        Files(Files),
        #[prost(message, tag = "6")]
        Services(Services),
        #[prost(message, tag = "7")]
        Error(Error),
    }

    /// `FileDescriptorResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Files {
        #[prost(bytes = "vec", repeated, tag = "1")]
        pub(super) file_descriptor_proto: Vec<Vec<u8>>,
    }

    /// `ListServiceResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Services {
        #[prost(message, repeated, tag = "1")]
        pub(super) service: Vec<Service>,
    }

    /// `ServiceResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Service {
        #[prost(string, tag = "1")]
        pub(super) name: String,
    }

    /// `ErrorResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Error {
        #[prost(int32, tag = "1")]
        pub(super) error_code: i32,
        #[prost(string, tag = "2")]
        pub(super) error_message: String,
    }
}

const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
/// The whole exchange with the reflection service, per call.
const REFLECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// The descriptors of `service` (and every file it needs) from the reflection
/// service of `origin`. Runs on a thread and runtime of its own: compiling is not
/// async, and may be called from inside another runtime.
pub(crate) fn from_reflection(origin: &Origin, service: &str) -> Result<DescriptorPool, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, reflect(&H2Pool::new(1), origin, service, &[]))
        })
        .join()
        .unwrap_or_else(|_| Err("the reflection client panicked".into()))
    })
}

async fn reflect(
    pool: &H2Pool,
    origin: &Origin,
    service: &str,
    metadata: &[(String, String)],
) -> Result<DescriptorPool, String> {
    pool_of(reflect_files(pool, origin, &[service.to_string()], metadata).await?)
}

/// Every service the reflection service of `origin` lists (itself left out), as
/// k6's `connect(addr, { reflect: true })` asks: `ListServices`, then each
/// service's files. `metadata` goes with each call (k6's `reflectMetadata`).
/// Encoded `FileDescriptorProto`s, dependencies included.
pub(crate) async fn reflect_services(
    pool: &H2Pool,
    origin: &Origin,
    metadata: &[(String, String)],
) -> Result<Vec<Vec<u8>>, String> {
    let mut path = V1;
    let answers = loop {
        let ask = wire::Ask::ListServices(String::new());
        match ask_once(pool, origin, path, ask, metadata).await {
            Err(Unimplemented) if path == V1 => path = V1ALPHA,
            Err(Unimplemented) => {
                return Err(format!(
                    "{} offers no reflection service (neither grpc.reflection.v1 nor v1alpha): load the .proto files with client.load()",
                    origin.label
                ))
            }
            Ok(r) => break r?,
        }
    };
    let services: Vec<String> = answers
        .into_iter()
        .filter_map(|a| match a.answer {
            Some(wire::Answer::Services(s)) => Some(s.service),
            _ => None,
        })
        .flatten()
        .map(|s| s.name)
        .filter(|n| !n.starts_with("grpc.reflection."))
        .collect();
    let files = reflect_files(pool, origin, &services, metadata).await?;
    Ok(files.iter().map(prost::Message::encode_to_vec).collect())
}

/// The files of `services` (and every file they need) from the reflection
/// service of `origin`.
async fn reflect_files(
    pool: &H2Pool,
    origin: &Origin,
    services: &[String],
    metadata: &[(String, String)],
) -> Result<Vec<FileDescriptorProto>, String> {
    let mut files: Vec<FileDescriptorProto> = Vec::new();
    let mut symbols = services.iter();
    let Some(first) = symbols.next() else {
        return Ok(files);
    };
    let mut path = V1;
    let mut ask = wire::Ask::FileContainingSymbol(first.clone());
    let mut asked: Vec<String> = Vec::new();
    loop {
        let answers = match ask_once(pool, origin, path, ask.clone(), metadata).await {
            Err(Unimplemented) if path == V1 => {
                path = V1ALPHA;
                continue;
            }
            Err(Unimplemented) => {
                return Err(format!(
                    "{} offers no reflection service (neither grpc.reflection.v1 nor v1alpha): give the `.proto` files with `proto:`",
                    origin.label
                ))
            }
            Ok(r) => r?,
        };
        for a in answers {
            match a.answer {
                Some(wire::Answer::Files(f)) => {
                    for bytes in f.file_descriptor_proto {
                        let fd = FileDescriptorProto::decode(bytes.as_slice()).map_err(|e| {
                            format!("the reflection service sent a bad descriptor: {e}")
                        })?;
                        if !files.iter().any(|x| x.name == fd.name) {
                            files.push(fd);
                        }
                    }
                }
                Some(wire::Answer::Error(e)) => {
                    return Err(match &ask {
                        wire::Ask::FileContainingSymbol(s) => format!(
                            "the server's reflection service does not know `{s}` ({}: {})",
                            pado_scenario::grpc_codes::name(e.error_code as u16).unwrap_or("error"),
                            e.error_message
                        ),
                        wire::Ask::FileByFilename(f) => format!(
                            "the server's reflection service cannot give `{f}`: {}",
                            e.error_message
                        ),
                        wire::Ask::ListServices(_) => format!(
                            "the server's reflection service cannot list its services: {}",
                            e.error_message
                        ),
                    })
                }
                Some(wire::Answer::Services(_)) | None => {}
            }
        }
        // Dependencies the server did not send along are asked for one by one.
        let missing = files
            .iter()
            .flat_map(|f| f.dependency.iter())
            .find(|d| !files.iter().any(|f| f.name() == d.as_str()) && !asked.contains(d))
            .cloned();
        match missing {
            Some(m) => {
                asked.push(m.clone());
                ask = wire::Ask::FileByFilename(m);
            }
            None => match symbols.next() {
                // The next service, unless a file already read holds it.
                Some(s) => ask = wire::Ask::FileContainingSymbol(s.clone()),
                None => break,
            },
        }
    }
    Ok(files)
}

/// The reflection service is not there (UNIMPLEMENTED): try the other version.
struct Unimplemented;

async fn ask_once(
    pool: &H2Pool,
    origin: &Origin,
    path: &str,
    ask: wire::Ask,
    metadata: &[(String, String)],
) -> Result<Result<Vec<wire::Response>, String>, Unimplemented> {
    let request = match GrpcRequest::new(origin, path, metadata, REFLECTION_TIMEOUT) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let msg = wire::Request {
        host: String::new(),
        ask: Some(ask),
    }
    .encode_to_vec();
    let mut body = Vec::new();
    frame_message(&msg, &mut body);
    let call = GrpcCall {
        request: &request,
        metadata: &[],
        body: Bytes::from(body),
        timeout: REFLECTION_TIMEOUT,
        max_messages: None,
        max_message: 64 << 20,
    };
    let mut answers = Vec::new();
    let mut bad = false;
    let mut frame = Vec::new();
    let out = exchange_grpc(
        pool,
        origin,
        call,
        &mut frame,
        |m, _| match wire::Response::decode(m) {
            Ok(r) => answers.push(r),
            Err(_) => bad = true,
        },
    )
    .await;
    if let Some(e) = out.exchange.error {
        return Ok(Err(format!(
            "cannot reach the reflection service of {}: {e}{}",
            origin.label,
            out.exchange
                .reason
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )));
    }
    match out.code {
        Some(12) => Err(Unimplemented),
        Some(0) if bad => Ok(Err(
            "the reflection service sent a message pado cannot read".into(),
        )),
        Some(0) => Ok(Ok(answers)),
        Some(c) => Ok(Err(format!(
            "the reflection service of {} answered {}",
            origin.label,
            pado_scenario::grpc_codes::name(c).unwrap_or("an unknown status")
        ))),
        None => Ok(Err("the reflection service's answer had no status".into())),
    }
}

/// A pool of `files`, added dependencies first (reflection sends them in any order).
fn pool_of(mut files: Vec<FileDescriptorProto>) -> Result<DescriptorPool, String> {
    let mut pool = DescriptorPool::new();
    while !files.is_empty() {
        let ready = files.iter().position(|f| {
            f.dependency
                .iter()
                .all(|d| pool.get_file_by_name(d).is_some())
        });
        let Some(i) = ready else {
            let f = &files[0];
            return Err(format!(
                "the reflection service did not send every file `{}` needs ({})",
                f.name(),
                f.dependency.join(", ")
            ));
        };
        let f = files.remove(i);
        pool.add_file_descriptor_proto(f).map_err(|e| {
            format!("the reflection service's descriptors do not fit together: {e}")
        })?;
    }
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_proto_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bad.proto"),
            "syntax = \"proto3\";\npackage t;\nmessage M {\n  strin name = 1;\n}\n",
        )
        .unwrap();
        let e = from_files(dir.path(), &["bad.proto".into()], &[]).unwrap_err();
        assert!(e.contains("bad.proto:4:"), "{e}");
        let e = from_files(dir.path(), &["none.proto".into()], &[]).unwrap_err();
        assert!(
            e.contains("none.proto") && e.contains("no such file"),
            "{e}"
        );
    }

    #[test]
    fn imports_are_found_in_import_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inc")).unwrap();
        std::fs::write(
            dir.path().join("inc/common.proto"),
            "syntax = \"proto3\";\npackage c;\nmessage Id { string v = 1; }\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("svc.proto"),
            "syntax = \"proto3\";\npackage s;\nimport \"common.proto\";\nimport \"google/protobuf/empty.proto\";\nservice S { rpc Get(c.Id) returns (google.protobuf.Empty); }\n",
        )
        .unwrap();
        let pool = from_files(dir.path(), &["svc.proto".into()], &["inc".into()]).unwrap();
        let s = pool.get_service_by_name("s.S").unwrap();
        assert_eq!(s.methods().next().unwrap().input().full_name(), "c.Id");
        assert!(from_files(dir.path(), &["svc.proto".into()], &[]).is_err());
    }

    #[test]
    fn files_from_reflection_are_added_dependencies_first() {
        let dep = FileDescriptorProto {
            name: Some("a.proto".into()),
            package: Some("a".into()),
            ..Default::default()
        };
        let main = FileDescriptorProto {
            name: Some("b.proto".into()),
            package: Some("b".into()),
            dependency: vec!["a.proto".into()],
            ..Default::default()
        };
        let pool = pool_of(vec![main.clone(), dep]).unwrap();
        assert!(pool.get_file_by_name("b.proto").is_some());
        let e = pool_of(vec![main]).unwrap_err();
        assert!(e.contains("a.proto"), "{e}");
    }
}
