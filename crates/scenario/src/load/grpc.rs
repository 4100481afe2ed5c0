//! gRPC steps (`grpc:`): the method's shape, the server's URL, the message's
//! templates, metadata that gRPC does not reserve, and checks and extraction that
//! a gRPC response can answer. Whether the message fits its descriptor is judged
//! when the plan is compiled, with the `.proto` files (or reflection) at hand.

use crate::model::*;

use super::validator::Validator;

/// Metadata gRPC sets itself.
const RESERVED: [&str; 4] = ["content-type", "te", "user-agent", "host"];

impl Validator<'_> {
    pub(super) fn grpc(&mut self, p: &str, st: &Step, g: &GrpcSpec, has_target: bool) {
        let mp = format!("{p}.method");
        if split_method(&g.method).is_none() {
            self.err(
                &mp,
                format!("`{}` is not a gRPC method", g.method),
                Some("write `package.Service/Method`, e.g. `helloworld.Greeter/SayHello`"),
            );
        }
        self.grpc_url(p, g.url.as_deref(), has_target);
        for (i, f) in g.proto.iter().enumerate() {
            if f.trim().is_empty() {
                self.err(&format!("{p}.proto[{i}]"), "empty file name", None);
            }
        }
        if !g.import_paths.is_empty() && g.proto.is_empty() {
            self.err(
                &format!("{p}.import_paths"),
                "`import_paths` go with `proto` files",
                None,
            );
        }
        if let Some(m) = &g.message {
            if !m.is_object() {
                self.err(
                    &format!("{p}.message"),
                    "a message is a mapping of its fields",
                    Some("e.g. `message: { name: \"pado\" }`"),
                );
            }
            self.json_templates(&format!("{p}.message"), m);
        }
        for (k, v) in &g.metadata {
            let hp = format!("{p}.metadata.{k}");
            self.header(&hp, k, v);
            self.template(&hp, v);
            let lower = k.to_ascii_lowercase();
            if RESERVED.contains(&lower.as_str()) || lower.starts_with("grpc-") {
                self.err(
                    &hp,
                    format!("`{k}` is set by gRPC itself"),
                    Some("the deadline is `timeout`; remove the entry"),
                );
            }
        }
        if g.timeout.is_some_and(|t| t.get().is_zero()) {
            self.err(&format!("{p}.timeout"), "must be more than 0", None);
        }
        if g.max_messages == Some(0) {
            self.err(&format!("{p}.max_messages"), "must be at least 1", None);
        }
        let step = p.strip_suffix(".grpc").unwrap_or(p);
        if let Some(c) = &st.check {
            self.grpc_check(&format!("{step}.check"), c);
        }
        for (k, e) in &st.extract {
            if matches!(
                e,
                ExtractSpec::From(ExtractFrom::Header(_) | ExtractFrom::Cookie(_))
            ) {
                self.err(
                    &format!("{step}.extract.{k}"),
                    "a gRPC call's values come from its response message (`json` or `regex`)",
                    None,
                );
            }
        }
    }

    /// The server of a gRPC call: a literal `grpc[s]://` (or `http[s]://`) URL with a
    /// host, or the file's `target`.
    fn grpc_url(&mut self, p: &str, url: Option<&str>, has_target: bool) {
        match url {
            Some(u) => {
                let up = format!("{p}.url");
                if u.contains("{{") {
                    self.err(
                        &up,
                        "the server of a gRPC call cannot come from a template",
                        None,
                    );
                } else {
                    match url::Url::parse(u) {
                        Ok(x) if matches!(x.scheme(), "grpc" | "grpcs" | "http" | "https") => {
                            if x.host_str().is_none_or(str::is_empty) {
                                self.err(&up, format!("`{u}` has no host"), None);
                            }
                        }
                        Ok(x) => self.err(
                            &up,
                            format!("scheme `{}` is not a gRPC scheme", x.scheme()),
                            Some("use grpc:// (HTTP/2 without TLS) or grpcs:// (TLS)"),
                        ),
                        Err(e) => self.err(&up, format!("`{u}` is not a URL: {e}"), None),
                    }
                }
            }
            None if !has_target => self.err(
                p,
                "a gRPC call needs a server: `url` or the file's `target`",
                Some("add `url: grpc://127.0.0.1:50051`"),
            ),
            None => {}
        }
    }

    /// A gRPC call's check: it reads `grpc_status` and the response message, never an
    /// HTTP status or headers.
    fn grpc_check(&mut self, cp: &str, c: &Check) {
        if c.status.is_some() {
            self.err(
                &format!("{cp}.status"),
                "a gRPC call's status is `grpc_status`",
                Some("write `grpc_status: OK` (or NOT_FOUND, 5, a list...)"),
            );
        }
        if !c.header.is_empty() {
            self.err(
                &format!("{cp}.header"),
                "checks of a gRPC call read its response message, not headers",
                None,
            );
        }
        if let Some(m) = &c.grpc_status {
            let codes: Vec<&GrpcCode> = match m {
                GrpcStatusMatch::One(c) => vec![c],
                GrpcStatusMatch::Any(v) => v.iter().collect(),
            };
            if codes.is_empty() {
                self.err(&format!("{cp}.grpc_status"), "empty list of codes", None);
            }
            for code in codes {
                if let Err(e) = crate::grpc_codes::resolve(code) {
                    self.err(
                        &format!("{cp}.grpc_status"),
                        e,
                        Some("write a code 0-16 or its name: OK, NOT_FOUND, UNAVAILABLE..."),
                    );
                }
            }
        }
    }
}

/// `(service, method)` of `package.Service/Method` (a leading `/` allowed).
pub fn split_method(m: &str) -> Option<(&str, &str)> {
    let m = m.strip_prefix('/').unwrap_or(m);
    let (service, method) = m.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    (ok(service) && ok(method) && !method.contains('.')).then_some((service, method))
}
