//! Requests compiled: origin, method, the head built once with its template holes,
//! the body, and what the step expects of the response.

use std::collections::BTreeMap;
use std::time::Duration;

use pado_scenario::template::parse_template;
use pado_scenario::{split_request_line, RequestSpec};

use crate::render::{encode_url_literal, escape_into, BindError, Compiled, Escape, Part};
use pado_http::{Origin, Protocol};
use pado_scenario::HttpVersion;

use super::builder::Builder;
use super::*;

/// A request ready to write (or to render, when templated).
#[derive(Debug)]
pub struct RequestPlan {
    /// Index into [`RunPlan::origins`].
    pub origin: usize,
    /// The bytes, or how to render them.
    pub form: RequestForm,
    /// HEAD request.
    pub is_head: bool,
    /// Whether the request may be sent again on a fresh connection when a reused one
    /// turns out to have been closed by the server (see [`pado_http::exchange`]):
    /// idempotent methods (RFC 9110 §9.2.2) and requests with an `Idempotency-Key`.
    pub resend_safe: bool,
    /// Timeout.
    pub timeout: Duration,
    /// Whether checks or extraction need the body.
    pub keep_body: bool,
    /// Whether checks or extraction need the response headers.
    pub keep_head: bool,
    /// Statuses that count as success (default: below 400).
    pub expect: StatusSet,
    /// Follow redirects (`follow_redirects`, default true): each hop is a sample of
    /// the step; checks and extraction see the final response.
    pub follow_redirects: bool,
    /// A static request to an origin spoken with HTTP/2, in HTTP/2's form, built
    /// once (a templated one is made from its rendered bytes per request).
    pub h2: Option<pado_http::H2Request>,
    /// The answer is an event stream (`sse:`), read as it says.
    pub sse: Option<std::sync::Arc<SsePlan>>,
}

/// Request bytes: fixed, or rendered per request.
#[derive(Debug)]
pub enum RequestForm {
    /// Everything fixed; `head_end` is where extra headers (cookies) go.
    Static {
        /// Head and body.
        bytes: Box<[u8]>,
        /// Offset of the blank line ending the head.
        head_end: usize,
    },
    /// Something is templated.
    Dynamic {
        /// `METHOD `.
        prefix: Box<[u8]>,
        /// Path and query.
        target: Compiled,
        /// ` HTTP/1.1\r\n` and the fixed headers.
        fixed: Box<[u8]>,
        /// Templated headers: `Name: ` and the value.
        headers: Vec<(Box<[u8]>, Compiled)>,
        /// Body.
        body: Option<Compiled>,
        /// Send Content-Length even without a body (POST/PUT/PATCH).
        needs_length: bool,
    },
}

impl RequestForm {
    /// Whether variable `var` is rendered into the request (its target, a header
    /// or the body).
    pub fn uses_var(&self, var: usize) -> bool {
        match self {
            RequestForm::Static { .. } => false,
            RequestForm::Dynamic {
                target,
                headers,
                body,
                ..
            } => {
                target.uses_var(var)
                    || headers.iter().any(|(_, v)| v.uses_var(var))
                    || body.as_ref().is_some_and(|b| b.uses_var(var))
            }
        }
    }
}

/// A set of accepted statuses (defined with the client, which reads it per response).
pub use pado_http::StatusSet;

impl Builder<'_> {
    /// Compile a request; returns it with its method and URL text (for the name).
    pub(super) fn request(
        &mut self,
        p: &str,
        spec: &RequestSpec,
    ) -> Result<(RequestPlan, String, String), PlanError> {
        let d = &self.cfg.defaults;
        let Parts {
            method,
            url: raw_url,
            mut headers,
            body: body_src,
            timeout,
            follow,
        } = self.parts(p, spec)?;
        // A URL that starts with a hole is a path taken from a response (an extracted
        // `Location`): requested on `target`, its value checked when it is rendered.
        let lead_hole = raw_url.starts_with("{{");
        let full = if raw_url.starts_with('/') || lead_hole {
            let base = self.cfg.target.as_deref().unwrap_or_default();
            let path = if lead_hole { "/" } else { raw_url.as_str() };
            format!("{}{}", base.trim_end_matches('/'), path)
        } else {
            raw_url.clone()
        };
        // A fragment is the client's alone (RFC 9110 §7.1): never sent.
        let full = strip_fragment(&full).to_string();
        // `user:pass@` becomes `Authorization: Basic` (as curl does) and leaves the URL,
        // so the password never reaches a step name, a result or a report.
        let (full, userinfo) = take_userinfo(&full);
        if let Some(ui) = userinfo {
            let has_auth = headers
                .keys()
                .chain(d.headers.keys())
                .any(|k| k.eq_ignore_ascii_case("authorization"));
            if !has_auth {
                use base64::Engine as _;
                let token = base64::engine::general_purpose::STANDARD.encode(ui);
                headers.insert("Authorization".into(), format!("Basic {token}"));
            }
        }
        // The origin never comes from a template (validation ensures it).
        let (origin_url, path_template) = split_origin(&full).ok_or_else(|| PlanError::Url {
            field: p.to_string(),
            message: format!("`{full}` is not an absolute http(s) URL"),
        })?;
        let origin_parsed = url::Url::parse(&origin_url).map_err(|e| PlanError::Url {
            field: p.to_string(),
            message: format!("`{full}` is not a URL: {e}"),
        })?;
        let origin = self.origin(p, &origin_parsed)?;
        for (k, v) in &d.headers {
            if !headers.keys().any(|h| h.eq_ignore_ascii_case(k)) {
                headers.insert(k.clone(), v.clone());
            }
        }
        let mut fixed = self.fixed_head(&origin_parsed, &headers, &body_src);
        let dyn_headers = self.headers(p, &headers, &mut fixed)?;
        let target = if lead_hole {
            self.lead_hole_target(p, &raw_url, &origin_parsed)?
        } else {
            self.compile_text(p, &path_template, Escape::Url, encode_url_literal)?
        };
        let body = self.body(p, body_src)?;
        let needs_length = body.is_some() || matches!(method.as_str(), "POST" | "PUT" | "PATCH");
        let form = form(&method, target, fixed, dyn_headers, body, needs_length);
        let mut plan = RequestPlan {
            origin,
            form,
            is_head: method == "HEAD",
            resend_safe: pado_http::idempotent_method(&method) || has(&headers, "idempotency-key"),
            timeout: timeout
                .or(d.timeout.map(|t| t.get()))
                .unwrap_or(DEFAULT_TIMEOUT),
            keep_body: false,
            keep_head: false,
            expect: StatusSet::default_ok(),
            follow_redirects: follow.or(d.follow_redirects).unwrap_or(true),
            h2: None,
            sse: None,
        };
        let o = &self.origins[origin];
        if o.protocol.pooled(o.tls.is_some()) {
            if let RequestForm::Static { bytes, .. } = &plan.form {
                plan.h2 = Some(pado_http::H2Request::from_http1(bytes, o).map_err(|why| {
                    PlanError::Url {
                        field: p.to_string(),
                        message: format!("cannot be sent over HTTP/2: {why}"),
                    }
                })?);
            }
        }
        Ok((plan, method, if lead_hole { raw_url } else { full }))
    }

    /// What a request spec says, the short form (`"GET /x"`) and the long alike.
    fn parts(&self, p: &str, spec: &RequestSpec) -> Result<Parts, PlanError> {
        let f = match spec {
            RequestSpec::Line(line) => {
                let (method, url) = split_request_line(line).map_err(|message| PlanError::Url {
                    field: p.to_string(),
                    message,
                })?;
                return Ok(Parts {
                    method,
                    url,
                    headers: BTreeMap::new(),
                    body: BodySrc::None,
                    timeout: None,
                    follow: None,
                });
            }
            RequestSpec::Full(f) => f,
        };
        let body = if let Some(b) = &f.body {
            BodySrc::Text(b.clone())
        } else if let Some(j) = &f.json {
            BodySrc::Json(j.clone())
        } else if let Some(form) = &f.form {
            BodySrc::Form(form.clone())
        } else if let Some(path) = &f.body_file {
            let full = self.base_dir.join(path);
            let data =
                pado_scenario::limits::read_capped(&full, pado_scenario::limits::MAX_DATA_BYTES)
                    .map_err(|source| PlanError::BodyFile {
                        field: format!("{p}.body_file"),
                        path: full.display().to_string(),
                        source,
                    })?;
            BodySrc::Bytes(data)
        } else if let Some(b64) = &f.body_base64 {
            let data =
                pado_scenario::decode_body_base64(b64).map_err(|source| PlanError::BodyBase64 {
                    field: format!("{p}.body_base64"),
                    source,
                })?;
            BodySrc::Bytes(data)
        } else {
            BodySrc::None
        };
        Ok(Parts {
            method: f
                .method
                .clone()
                .unwrap_or_else(|| "GET".into())
                .to_ascii_uppercase(),
            url: f.url.clone(),
            headers: f.headers.clone(),
            body,
            timeout: f.timeout.map(|t| t.get()),
            follow: f.follow_redirects,
        })
    }

    /// The fixed part of the head after the request target: the request line's
    /// end and the headers pado adds unless the request has its own.
    fn fixed_head(
        &self,
        origin: &url::Url,
        headers: &BTreeMap<String, String>,
        body: &BodySrc,
    ) -> Vec<u8> {
        let mut fixed = Vec::with_capacity(256);
        fixed.extend_from_slice(b" HTTP/1.1\r\n");
        if !has(headers, "host") {
            let host = origin.host_str().unwrap_or_default();
            let host_header = match origin.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            };
            fixed.extend_from_slice(format!("Host: {host_header}\r\n").as_bytes());
        }
        if self.cfg.defaults.connections == Some(pado_scenario::ConnectionReuse::PerRequest)
            && !has(headers, "connection")
        {
            // A connection per request says so, as k6's `noConnectionReuse` does.
            fixed.extend_from_slice(b"Connection: close\r\n");
        }
        if !has(headers, "user-agent") {
            fixed.extend_from_slice(
                concat!("User-Agent: pado/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        match &self.cfg.defaults.compression {
            // `defaults.compression` asks for the codings pado decodes; a request's
            // own `Accept-Encoding` (or the defaults' header) wins.
            Some(list) if !list.is_empty() && !has(headers, "accept-encoding") => {
                let names: Vec<&str> = list.iter().map(|c| c.as_str()).collect();
                fixed.extend_from_slice(
                    format!("Accept-Encoding: {}\r\n", names.join(", ")).as_bytes(),
                );
            }
            _ => {}
        }
        let ctype = match body {
            BodySrc::Json(_) => Some("application/json"),
            BodySrc::Form(_) => Some("application/x-www-form-urlencoded"),
            _ => None,
        };
        if let Some(ct) = ctype {
            if !has(headers, "content-type") {
                fixed.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
            }
        }
        fixed
    }

    /// The request's headers: static ones appended to `fixed`, templated ones
    /// returned (`Name: ` and the value). `Content-Length` is pado's to write.
    fn headers(
        &mut self,
        p: &str,
        headers: &BTreeMap<String, String>,
        fixed: &mut Vec<u8>,
    ) -> Result<Vec<TemplatedHeader>, PlanError> {
        let mut dyn_headers = Vec::new();
        for (k, v) in headers {
            if k.eq_ignore_ascii_case("content-length") {
                continue;
            }
            let c = self.compile_text(&format!("{p}.headers.{k}"), v, Escape::Header, |l| {
                l.as_bytes().to_vec()
            })?;
            if c.is_static() {
                fixed.extend_from_slice(k.as_bytes());
                fixed.extend_from_slice(b": ");
                fixed.extend_from_slice(&c.static_bytes());
                fixed.extend_from_slice(b"\r\n");
            } else {
                dyn_headers.push((format!("{k}: ").into_bytes().into_boxed_slice(), c));
            }
        }
        Ok(dyn_headers)
    }

    /// The target of a URL that starts with a hole: checked, when rendered, to
    /// stay on `origin` (with or without its default port).
    fn lead_hole_target(
        &mut self,
        p: &str,
        raw_url: &str,
        origin: &url::Url,
    ) -> Result<Compiled, PlanError> {
        let mut origins = Vec::new();
        let host = origin.host_str().unwrap_or_default();
        let scheme = origin.scheme();
        if let Some(port) = origin.port_or_known_default() {
            origins.push(format!("{scheme}://{host}:{port}").into_boxed_str());
        }
        if origin.port().is_none() {
            origins.push(format!("{scheme}://{host}").into_boxed_str());
        }
        self.binder()
            .compile_url_target(raw_url, origins)
            .map_err(|source| PlanError::Template {
                field: p.to_string(),
                source,
            })
    }

    /// The body as template parts, escaped as its kind needs.
    fn body(&mut self, p: &str, body: BodySrc) -> Result<Option<Compiled>, PlanError> {
        Ok(match body {
            BodySrc::None => None,
            BodySrc::Bytes(b) => Some(Compiled {
                parts: vec![Part::Lit(b.into_boxed_slice())],
                escape: Escape::Raw,
            }),
            BodySrc::Text(t) => Some(self.compile_text(
                &format!("{p}.body"),
                &t,
                Escape::Raw,
                |l| l.as_bytes().to_vec(),
            )?),
            BodySrc::Json(v) => {
                let mut parts = Vec::new();
                self.json_parts(&format!("{p}.json"), &v, &mut parts)?;
                Some(Compiled {
                    parts,
                    escape: Escape::Json,
                })
            }
            BodySrc::Form(f) => {
                let mut parts = Vec::new();
                for (i, (k, v)) in f.iter().enumerate() {
                    let mut key = Vec::new();
                    if i > 0 {
                        key.push(b'&');
                    }
                    escape_into(Escape::Form, k.as_bytes(), &mut key);
                    key.push(b'=');
                    parts.push(Part::Lit(key.into_boxed_slice()));
                    let c = self.compile_text(&format!("{p}.form.{k}"), v, Escape::Form, |l| {
                        let mut o = Vec::new();
                        escape_into(Escape::Form, l.as_bytes(), &mut o);
                        o
                    })?;
                    parts.extend(c.parts);
                }
                Some(Compiled {
                    parts,
                    escape: Escape::Form,
                })
            }
        })
    }

    /// A JSON body as template parts: structure literal, strings templated and
    /// JSON-escaped.
    pub(super) fn json_parts(
        &mut self,
        field: &str,
        v: &serde_json::Value,
        out: &mut Vec<Part>,
    ) -> Result<(), PlanError> {
        use serde_json::Value;
        let lit = |out: &mut Vec<Part>, b: &[u8]| {
            if let Some(Part::Lit(prev)) = out.last_mut() {
                let mut x = prev.to_vec();
                x.extend_from_slice(b);
                *prev = x.into_boxed_slice();
            } else {
                out.push(Part::Lit(b.into()));
            }
        };
        match v {
            Value::String(s) => {
                // `"{{ n | int }}"` alone is the value itself, sent unquoted.
                let t = parse_template(s).ok();
                let quoted = t.as_ref().is_none_or(|t| t.whole_typed().is_none());
                if quoted && t.as_ref().is_some_and(|t| t.has_typed()) {
                    return Err(PlanError::Template {
                        field: field.to_string(),
                        source: BindError::Syntax(
                            "a typed value (`| int`) must be the whole of a JSON body value".into(),
                        ),
                    });
                }
                if quoted {
                    lit(out, b"\"");
                }
                let c = self.compile_text(field, s, Escape::Json, |l| {
                    let mut o = Vec::new();
                    escape_into(Escape::Json, l.as_bytes(), &mut o);
                    o
                })?;
                for part in c.parts {
                    match part {
                        Part::Lit(b) => lit(out, &b),
                        other => out.push(other),
                    }
                }
                if quoted {
                    lit(out, b"\"");
                }
            }
            Value::Array(a) => {
                lit(out, b"[");
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        lit(out, b",");
                    }
                    self.json_parts(&format!("{field}[{i}]"), x, out)?;
                }
                lit(out, b"]");
            }
            Value::Object(o) => {
                lit(out, b"{");
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        lit(out, b",");
                    }
                    let key = serde_json::to_string(k).unwrap_or_default();
                    lit(out, key.as_bytes());
                    lit(out, b":");
                    self.json_parts(&format!("{field}.{k}"), x, out)?;
                }
                lit(out, b"}");
            }
            other => lit(out, other.to_string().as_bytes()),
        }
        Ok(())
    }

    pub(super) fn origin(&mut self, p: &str, url: &url::Url) -> Result<usize, PlanError> {
        let key = (
            url.scheme().to_string(),
            url.host_str().unwrap_or("").to_string(),
            url.port_or_known_default().unwrap_or(80),
        );
        if let Some(i) = self.origin_keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let settings = &self.tls_settings;
        let protocol = match self.cfg.defaults.http.unwrap_or_default() {
            HttpVersion::Http1 => Protocol::Http1,
            HttpVersion::Http2 => Protocol::Http2,
            HttpVersion::Auto => Protocol::Auto,
        };
        let tls = &mut self.tls;
        let h2_tls = &mut self.h2_tls;
        let origin = Origin::for_url_with(
            url,
            protocol,
            || tls.get_or_insert_with(|| settings.client_config()).clone(),
            || {
                let alpn: &[&[u8]] = if protocol == Protocol::Auto {
                    &[b"h2", b"http/1.1"]
                } else {
                    &[b"h2"]
                };
                h2_tls
                    .get_or_insert_with(|| settings.client_config_alpn(alpn))
                    .clone()
            },
        )
        .map_err(|message| PlanError::Url {
            field: p.to_string(),
            message,
        })?;
        let ttl = self.cfg.defaults.dns.as_ref().and_then(|d| d.ttl);
        let origin = match ttl {
            Some(t) => origin.with_dns_ttl(t.get()),
            None => origin,
        }
        .with_proxies(&self.proxies);
        self.origins.push(origin);
        self.origin_keys.push(key);
        Ok(self.origins.len() - 1)
    }
}

/// A templated header: `Name: ` and its value.
type TemplatedHeader = (Box<[u8]>, Compiled);

/// What a request spec says, before compiling.
struct Parts {
    method: String,
    url: String,
    headers: BTreeMap<String, String>,
    body: BodySrc,
    timeout: Option<std::time::Duration>,
    follow: Option<bool>,
}

/// Whether `h` has header `n` (names compare without case).
fn has(h: &BTreeMap<String, String>, n: &str) -> bool {
    h.keys().any(|k| k.eq_ignore_ascii_case(n))
}

/// The request's form: its bytes built once when nothing in it is templated, its
/// parts otherwise.
fn form(
    method: &str,
    target: Compiled,
    fixed: Vec<u8>,
    headers: Vec<TemplatedHeader>,
    body: Option<Compiled>,
    needs_length: bool,
) -> RequestForm {
    let all_static =
        target.is_static() && headers.is_empty() && body.as_ref().is_none_or(|b| b.is_static());
    if !all_static {
        return RequestForm::Dynamic {
            prefix: format!("{method} ").into_bytes().into_boxed_slice(),
            target,
            fixed: fixed.into_boxed_slice(),
            headers,
            body,
            needs_length,
        };
    }
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(&target.static_bytes());
    out.extend_from_slice(&fixed);
    let body_bytes = body.as_ref().map(|b| b.static_bytes());
    if needs_length {
        let n = body_bytes.as_ref().map_or(0, |b| b.len());
        out.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
    }
    let head_end = out.len();
    out.extend_from_slice(b"\r\n");
    if let Some(b) = body_bytes {
        out.extend_from_slice(&b);
    }
    RequestForm::Static {
        bytes: out.into_boxed_slice(),
        head_end,
    }
}

enum BodySrc {
    None,
    Text(String),
    Json(serde_json::Value),
    Form(BTreeMap<String, String>),
    Bytes(Vec<u8>),
}

/// The URL up to its fragment (`#...`), outside template expressions.
fn strip_fragment(url: &str) -> &str {
    let b = url.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"{{") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"}}") && depth > 0 {
            depth -= 1;
            i += 2;
        } else if b[i] == b'#' && depth == 0 {
            return &url[..i];
        } else {
            i += 1;
        }
    }
    url
}

/// Remove `user[:pass]@` from an absolute URL's authority; returns the URL without it
/// and the percent-decoded `user:pass` (for `Authorization: Basic`).
fn take_userinfo(full: &str) -> (String, Option<Vec<u8>>) {
    let Some(scheme_end) = full.find("://") else {
        return (full.to_string(), None);
    };
    let rest = &full[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (full.to_string(), None);
    };
    let userinfo: Vec<u8> = percent_encoding::percent_decode_str(&rest[..at]).collect();
    let url = format!("{}{}", &full[..scheme_end + 3], &rest[at + 1..]);
    (url, Some(userinfo))
}

/// Split `http://host:port/path?{{x}}` into the origin URL (`http://host:port/`) and
/// the path-and-query template (`/path?{{x}}`).
fn split_origin(full: &str) -> Option<(String, String)> {
    let scheme_end = full.find("://")?;
    let scheme = &full[..scheme_end];
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let rest = &full[scheme_end + 3..];
    let path_start = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..path_start];
    if authority.is_empty() || authority.contains("{{") {
        return None;
    }
    let mut path = rest[path_start..].to_string();
    if path.is_empty() {
        path.push('/');
    } else if path.starts_with('?') {
        path.insert(0, '/');
    }
    Some((format!("{scheme}://{authority}/"), path))
}
