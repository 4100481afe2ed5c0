//! `grpc:` steps compiled: the server's origin (always HTTP/2: h2c for `grpc://`
//! and `http://`, ALPN `h2` over TLS for `grpcs://` and `https://`), the method
//! found in its descriptors (`.proto` files or reflection, each read once per
//! compile), the request message encoded once when static or bound as JSON
//! templates when not, metadata, and the accepted status codes.

pub(crate) mod descriptors;
pub(crate) mod message;

use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderName;
use pado_http::{GrpcRequest, Origin, Protocol};
use pado_scenario::{Check, GrpcSpec, GrpcStatusMatch};
use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};

use crate::render::{Compiled, Escape};

use super::builder::Builder;
use super::*;

/// A compiled `grpc:` step.
#[derive(Debug)]
pub struct GrpcPlan {
    /// Index into [`RunPlan::origins`] (an HTTP/2 origin).
    pub origin: usize,
    /// `package.Service/Method`, for debug output.
    pub method: String,
    /// The fixed part of the request (URI, headers, static metadata).
    pub request: GrpcRequest,
    /// Metadata with templates, rendered per call.
    pub metadata: Vec<(HeaderName, Compiled)>,
    /// Metadata without templates (already in `request`), for debug output.
    pub static_metadata: Vec<(String, String)>,
    /// A static message as JSON, for debug output and failure samples.
    pub static_json: Option<Box<[u8]>>,
    /// The request message.
    pub message: GrpcMessage,
    /// The reply's type, to show replies to checks and extraction as JSON.
    pub reply: MessageDescriptor,
    /// Server streaming (replies are a JSON array to checks).
    pub streaming: bool,
    /// Stop a stream after this many messages.
    pub max_messages: Option<u64>,
    /// Deadline of the call.
    pub timeout: Duration,
    /// Accepted status codes, bit `c` for code `c` (default: OK only).
    pub accept: u32,
    /// Whether checks or extraction read the reply.
    pub decode: bool,
}

/// The request message.
#[derive(Debug)]
pub enum GrpcMessage {
    /// Encoded and length-prefixed once.
    Static(Bytes),
    /// JSON with template holes, rendered and encoded per call.
    Templated {
        /// The JSON.
        json: Compiled,
        /// Its type.
        desc: MessageDescriptor,
    },
}

/// `json` (protobuf's JSON mapping) encoded as a `desc` message.
pub fn encode_grpc_json(desc: &MessageDescriptor, json: &[u8]) -> Result<Vec<u8>, String> {
    message::encode_json(desc, json)
}

/// The descriptors of `.proto` `files` (relative to `base_dir`), imports searched
/// in `import_paths`: what a k6 script's `client.load()` reads, compiled by the
/// same protox path as a `grpc:` step's, so errors name the file, line and column.
pub fn descriptors_from_files(
    base_dir: &std::path::Path,
    files: &[String],
    import_paths: &[String],
) -> Result<prost_reflect::DescriptorPool, String> {
    descriptors::from_files(base_dir, files, import_paths)
}

/// Every service's files from the reflection service of `origin` (k6's
/// `connect(addr, { reflect: true })`), asked on the VU's own `pool`: encoded
/// `FileDescriptorProto`s, or why not in words.
pub async fn reflect_services(
    pool: &pado_http::H2Pool,
    origin: &pado_http::Origin,
    metadata: &[(String, String)],
) -> Result<Vec<Vec<u8>>, String> {
    descriptors::reflect_services(pool, origin, metadata).await
}

/// A `desc` message's bytes appended to `out` as JSON (`.proto` field names,
/// every field); `false` when they are not a valid message of that type.
pub fn decode_grpc_json(desc: &MessageDescriptor, bytes: &[u8], out: &mut Vec<u8>) -> bool {
    message::decode_to_json(desc, bytes, out)
}

impl GrpcPlan {
    /// Whether the call's status `code` is accepted.
    pub fn accepts(&self, code: u16) -> bool {
        code < 32 && self.accept & (1 << code) != 0
    }
}

/// Descriptors already read while compiling: by `.proto` file list, by server.
#[derive(Default)]
pub(crate) struct GrpcCache {
    files: Vec<(Vec<String>, Vec<String>, DescriptorPool)>,
    reflected: Vec<(usize, String, DescriptorPool)>,
    /// The client configuration for gRPC over TLS (ALPN `h2` only).
    tls_h2: Option<std::sync::Arc<rustls::ClientConfig>>,
}

/// A message as JSON text.
type JsonText = Box<[u8]>;

/// A call's metadata: the static entries as text, the templated ones compiled.
type Metadata = (Vec<(String, String)>, Vec<(HeaderName, Compiled)>);

/// The `http(s)://` URL of a gRPC server URL.
fn http_url(u: &str) -> String {
    if let Some(r) = u.strip_prefix("grpc://") {
        format!("http://{r}")
    } else if let Some(r) = u.strip_prefix("grpcs://") {
        format!("https://{r}")
    } else {
        u.to_string()
    }
}

impl Builder<'_> {
    /// Compile a `grpc:` step at `p` (`...flow[0].grpc`) named `step`. `check` is
    /// the step's; its `grpc_status` becomes a check and the accepted codes, its
    /// other conditions are the caller's (on the reply as JSON).
    pub(super) fn grpc(
        &mut self,
        p: &str,
        step: &str,
        g: &GrpcSpec,
        check: Option<&Check>,
    ) -> Result<(GrpcPlan, Option<CheckPlan>), PlanError> {
        let err = |field: String, message: String| PlanError::Grpc { field, message };
        let raw = match &g.url {
            Some(u) => u.clone(),
            None => self.cfg.target.clone().unwrap_or_default(),
        };
        let url = url::Url::parse(&http_url(&raw))
            .map_err(|e| err(format!("{p}.url"), format!("`{raw}` is not a URL: {e}")))?;
        let origin = self.grpc_origin(p, &url)?;
        let Some((service, method)) = pado_scenario::load::split_method(&g.method) else {
            return Err(err(
                format!("{p}.method"),
                format!("`{}` is not a gRPC method", g.method),
            ));
        };
        let pool = if g.proto.is_empty() {
            self.reflected(p, origin, service)?
        } else {
            self.proto_files(p, g)?
        };
        let m = self.grpc_method(p, g, &pool, (service, method))?;
        let input = m.input();
        let (message, static_json) = self.grpc_message(p, g, input)?;
        let timeout = g
            .timeout
            .or(self.cfg.defaults.timeout)
            .map_or(DEFAULT_TIMEOUT, |t| t.get());
        let (fixed, metadata) = self.grpc_metadata(p, g)?;
        let path = format!("/{service}/{method}");
        let request = GrpcRequest::new(&self.origins[origin], &path, &fixed, timeout)
            .map_err(|e| err(format!("{p}.metadata"), e.to_string()))?;
        let (accept, status_check) = self.grpc_status_check(p, step, check)?;
        Ok((
            GrpcPlan {
                origin,
                method: format!("{service}/{method}"),
                request,
                metadata,
                static_metadata: fixed,
                static_json,
                message,
                reply: m.output(),
                streaming: m.is_server_streaming(),
                max_messages: g.max_messages,
                timeout,
                accept,
                decode: false,
            },
            status_check,
        ))
    }

    /// The method `service/method` in `pool`, which pado can call (unary or
    /// server streaming).
    fn grpc_method(
        &self,
        p: &str,
        g: &GrpcSpec,
        pool: &DescriptorPool,
        (service, method): (&str, &str),
    ) -> Result<MethodDescriptor, PlanError> {
        let err = |field: String, message: String| PlanError::Grpc { field, message };
        let svc = pool.get_service_by_name(service).ok_or_else(|| {
            let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
            err(
                format!("{p}.method"),
                format!(
                    "no service `{service}` in {} (services: {})",
                    self.grpc_source(g),
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        let m = svc.methods().find(|m| m.name() == method).ok_or_else(|| {
            let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
            err(
                format!("{p}.method"),
                format!(
                    "service `{service}` has no method `{method}` (methods: {})",
                    known.join(", ")
                ),
            )
        })?;
        if m.is_client_streaming() {
            return Err(err(
                format!("{p}.method"),
                format!("`{service}/{method}` streams from the client: pado calls unary and server-streaming methods"),
            ));
        }
        Ok(m)
    }

    /// The request message: encoded once when static, JSON with holes otherwise;
    /// and the static one as JSON (for debug output).
    fn grpc_message(
        &mut self,
        p: &str,
        g: &GrpcSpec,
        input: MessageDescriptor,
    ) -> Result<(GrpcMessage, Option<JsonText>), PlanError> {
        let err = |field: String, message: String| PlanError::Grpc { field, message };
        let value = g
            .message
            .clone()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        if let Some(bad) = message::unknown_field(&input, &value) {
            let (path, why) = bad.split_once(": ").unwrap_or((&bad, ""));
            return Err(err(format!("{p}.message.{path}"), why.to_string()));
        }
        let mut parts = Vec::new();
        self.json_parts(&format!("{p}.message"), &value, &mut parts)?;
        let json = Compiled {
            parts,
            escape: Escape::Json,
        };
        let static_json = json
            .is_static()
            .then(|| json.static_bytes().into_boxed_slice());
        let message = if json.is_static() {
            let bytes = message::encode_value(&input, &value).map_err(|e| {
                err(
                    format!("{p}.message"),
                    format!("does not fit `{}`: {e}", input.full_name()),
                )
            })?;
            let mut framed = Vec::with_capacity(bytes.len() + 5);
            pado_http::grpc::frame_message(&bytes, &mut framed);
            GrpcMessage::Static(Bytes::from(framed))
        } else {
            GrpcMessage::Templated { json, desc: input }
        };
        Ok((message, static_json))
    }

    /// The call's metadata: static values (as text) and templated ones.
    fn grpc_metadata(&mut self, p: &str, g: &GrpcSpec) -> Result<Metadata, PlanError> {
        let err = |field: String, message: String| PlanError::Grpc { field, message };
        let mut fixed = Vec::new();
        let mut metadata = Vec::new();
        for (k, v) in &g.metadata {
            let field = format!("{p}.metadata.{k}");
            let c = self.compile_text(&field, v, Escape::Header, |l| l.as_bytes().to_vec())?;
            if c.is_static() {
                fixed.push((
                    k.clone(),
                    String::from_utf8_lossy(&c.static_bytes()).into_owned(),
                ));
            } else {
                let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                    .map_err(|_| err(field, format!("`{k}` is not a header name")))?;
                metadata.push((name, c));
            }
        }
        Ok((fixed, metadata))
    }

    /// The accepted codes (a bit per code; OK only by default) and the check a
    /// `grpc_status` condition makes.
    fn grpc_status_check(
        &mut self,
        p: &str,
        step: &str,
        check: Option<&Check>,
    ) -> Result<(u32, Option<CheckPlan>), PlanError> {
        let err = |field: String, message: String| PlanError::Grpc { field, message };
        let mut accept = 1u32;
        let mut status_check = None;
        if let Some(m) = check.and_then(|c| c.grpc_status.as_ref()) {
            let codes = match m {
                GrpcStatusMatch::One(c) => vec![c.clone()],
                GrpcStatusMatch::Any(v) => v.clone(),
            };
            let mut set = Vec::new();
            let mut names = Vec::new();
            for c in &codes {
                let code = pado_scenario::grpc_codes::resolve(c).map_err(|e| {
                    err(
                        format!("{}.check.grpc_status", p.trim_end_matches(".grpc")),
                        e,
                    )
                })?;
                set.push((code, code));
                names.push(pado_scenario::grpc_codes::name(code).unwrap_or("?"));
            }
            if check.and_then(|c| c.fail_request) != Some(false) {
                accept = set.iter().fold(0, |a, (c, _)| a | 1 << c);
            }
            let id = self.check_id(format!("{step}: grpc_status is {}", names.join(" or ")));
            status_check = Some(CheckPlan::Status {
                id,
                set: StatusSet(set),
            });
        }
        Ok((accept, status_check))
    }

    fn grpc_source(&self, g: &GrpcSpec) -> String {
        if g.proto.is_empty() {
            "the server's reflection service".into()
        } else {
            g.proto
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    fn proto_files(&mut self, p: &str, g: &GrpcSpec) -> Result<DescriptorPool, PlanError> {
        if let Some((_, _, pool)) = self
            .grpc
            .files
            .iter()
            .find(|(f, i, _)| *f == g.proto && *i == g.import_paths)
        {
            return Ok(pool.clone());
        }
        let pool = descriptors::from_files(self.base_dir, &g.proto, &g.import_paths).map_err(
            |message| PlanError::Grpc {
                field: format!("{p}.proto"),
                message,
            },
        )?;
        self.grpc
            .files
            .push((g.proto.clone(), g.import_paths.clone(), pool.clone()));
        Ok(pool)
    }

    fn reflected(
        &mut self,
        p: &str,
        origin: usize,
        service: &str,
    ) -> Result<DescriptorPool, PlanError> {
        if let Some((_, _, pool)) = self
            .grpc
            .reflected
            .iter()
            .find(|(o, s, _)| *o == origin && s == service)
        {
            return Ok(pool.clone());
        }
        let pool =
            descriptors::from_reflection(&self.origins[origin], service).map_err(|message| {
                PlanError::Grpc {
                    field: p.to_string(),
                    message,
                }
            })?;
        self.grpc
            .reflected
            .push((origin, service.to_string(), pool.clone()));
        Ok(pool)
    }

    /// The HTTP/2 origin of a gRPC server (apart from an HTTP/1.1 origin of the same
    /// address, which `defaults.http` governs).
    fn grpc_origin(&mut self, p: &str, url: &url::Url) -> Result<usize, PlanError> {
        let key = (
            format!("grpc+{}", url.scheme()),
            url.host_str().unwrap_or("").to_string(),
            url.port_or_known_default().unwrap_or(80),
        );
        if let Some(i) = self.origin_keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let settings = self.tls_settings.clone();
        let tls = &mut self.tls;
        let tls_h2 = &mut self.grpc.tls_h2;
        let origin = Origin::for_url_with(
            url,
            Protocol::Http2,
            || tls.get_or_insert_with(|| settings.client_config()).clone(),
            || {
                tls_h2
                    .get_or_insert_with(|| settings.client_config_alpn(&[b"h2"]))
                    .clone()
            },
        )
        .map_err(|message| PlanError::Grpc {
            field: format!("{p}.url"),
            message,
        })?;
        self.origins.push(origin);
        self.origin_keys.push(key);
        Ok(self.origins.len() - 1)
    }
}

impl GrpcPlan {
    /// The request plan that checks and extraction are compiled against (they
    /// mark what the reply must keep); never sent.
    pub(super) fn stand_in(&self) -> RequestPlan {
        RequestPlan {
            origin: self.origin,
            form: RequestForm::Static {
                bytes: Box::new([]),
                head_end: 0,
            },
            is_head: false,
            resend_safe: false,
            timeout: self.timeout,
            keep_body: false,
            keep_head: false,
            expect: StatusSet::default_ok(),
            follow_redirects: false,
            h2: None,
            sse: None,
        }
    }
}
